package host

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMetricsUseWasmcustomNamesAndPrometheusAppliesStatsTags(t *testing.T) {
	h := newTestHost(t, func(o *Options) {
		o.StatsTags = []StatsTag{{TagName: "value", Regex: `(_value=([a-zA-Z]+))`}, {TagName: "reporter", Regex: `(_reporter=([a-zA-Z]+))`}}
	})
	for i := 0; i < 2; i++ {
		s := h.NewStream(StreamInfo{Worker: i})
		s.RequestHeaders(reqHeaders("metrics"), true)
		s.Done()
	}
	require.Equal(t, []string{"metric inc0 2", "metric inc0 2"}, logsWith(h, "metric inc0"), "counter delta 0 is BadArgument")
	n, ok := h.Metric("wasmcustom.custom_counts_value=foo_reporter=x")
	require.True(t, ok)
	require.Equal(t, int64(4), n, "both workers add to one process-wide counter")
	g, _ := h.Metric("active_gauge")
	require.Equal(t, int64(7), g)
	text := h.PrometheusText()
	require.Contains(t, text, "# TYPE custom_counts counter\ncustom_counts{value=\"foo\",reporter=\"x\"} 4\n")
	require.Contains(t, text, "active_gauge 7\n")
	require.Contains(t, text, "latency_ms_bucket{le=\"5\"} 2\n")
	require.Contains(t, text, "latency_ms_count 2\n")
	require.NotContains(t, text, "wasmcustom")
}

func TestPropertiesFollowEnvoyEncoding(t *testing.T) {
	h := newTestHost(t, nil)
	s := h.NewStream(StreamInfo{Worker: 0, SourceAddress: "10.1.2.3:4567", Properties: map[string][]byte{"metadata\x00team": []byte("research")}})
	s.RequestHeaders(reqHeaders("props", "x-request-id", "rid-1"), true)
	s.Done()
	want := []string{
		"prop source\x00address 0 10.1.2.3:4567",
		"prop source\x00port 0 4567",
		"prop request\x00path 0 /v1/chat?x=1",
		"prop request\x00url_path 0 /v1/chat",
		"prop request\x00host 0 api.example",
		"prop request\x00method 0 POST",
		"prop request\x00query 0 x=1",
		"prop plugin_name 0 tb",
		"prop plugin_root_id 0 tokenbudget",
		"prop plugin_vm_id 0 vm-TestPropertiesFollowEnvoyEncoding",
		"prop metadata\x00team 0 research",
		"prop request\x00id 0 rid-1",
		"prop missing\x00thing 1 ",
		"prop request\x00time 0 " + itoa(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()),
		"prop my 0 set-value",
	}
	require.Equal(t, want, logsWith(h, "prop "))
	require.Equal(t, []string{"time " + itoa(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano())}, logsWith(h, "time "), "guest clock is Options.Now")
}

func TestFailurePolicies(t *testing.T) {
	t.Run("FAIL_CLOSED answers 503 to the trapping and every later request", func(t *testing.T) {
		h := newTestHost(t, func(o *Options) { o.Workers = 1 })
		s := h.NewStream(StreamInfo{})
		r := s.RequestHeaders(reqHeaders("panic"), true)
		require.Equal(t, LocalReply, r.Action)
		require.Equal(t, 503, r.Local.Status)
		require.Equal(t, "wasm_fail_stream", r.Local.Details)
		s.Done()
		require.Len(t, h.Traps(), 1)
		require.Contains(t, errorText(h), "panic", "the Go panic reaches the log through fd 2 at error level")
		s2 := h.NewStream(StreamInfo{})
		r = s2.RequestHeaders(reqHeaders("none"), true)
		require.Equal(t, LocalReply, r.Action)
		require.Equal(t, 503, r.Local.Status)
		s2.Done()
	})
	t.Run("FAIL_OPEN lets requests pass untouched", func(t *testing.T) {
		h := newTestHost(t, func(o *Options) { o.Workers = 1; o.FailurePolicy = FailOpen })
		s := h.NewStream(StreamInfo{})
		r := s.RequestHeaders(reqHeaders("panic"), true)
		require.Equal(t, Continue, r.Action)
		require.NotNil(t, r.Headers)
		require.True(t, r.EndOfStream)
		s.Done()
		s2 := h.NewStream(StreamInfo{})
		r = s2.RequestHeaders(reqHeaders("local"), false)
		require.Equal(t, Continue, r.Action, "the failed VM is out of the path")
		r = s2.RequestBody([]byte("b"), true)
		require.Equal(t, "b", string(r.Body))
		s2.Done()
		require.Len(t, h.Traps(), 1)
	})
	t.Run("FAIL_RELOAD builds a new VM for the next request", func(t *testing.T) {
		h := newTestHost(t, func(o *Options) { o.Workers = 1; o.FailurePolicy = FailReload })
		s := h.NewStream(StreamInfo{})
		require.Equal(t, 503, s.RequestHeaders(reqHeaders("panic"), true).Local.Status)
		s.Done()
		s2 := h.NewStream(StreamInfo{})
		r := s2.RequestHeaders(reqHeaders("local"), true)
		require.Equal(t, 429, r.Local.Status, "the fresh VM runs the filter again")
		s2.Done()
		require.Equal(t, 2, strings.Count(strings.Join(callbackLog(h, 0), "\n"), "configure 1 cfg1"))
	})
}

func TestPollOneoffIsENOSYSBeforePR533AndCounted(t *testing.T) {
	for _, tc := range []struct {
		profile  Profile
		wantTrap bool
	}{{ProfileLegacy, true}, {ProfileEnvoy2025, true}, {ProfileCurrent, false}} {
		t.Run(tc.profile.String(), func(t *testing.T) {
			h, err := New(context.Background(), Options{Module: guestModule(t, "sleeper"), Profile: tc.profile, AllowStdioInit: true, Workers: 1})
			require.NoError(t, err)
			defer h.Close(context.Background())
			s := h.NewStream(StreamInfo{})
			s.RequestHeaders(reqHeaders("x"), true)
			s.Done()
			require.Positive(t, h.PollOneoffCalls())
			require.Equal(t, tc.wantTrap, len(h.Traps()) > 0, "traps: %v", h.Traps())
			if tc.wantTrap {
				require.Contains(t, errorText(h), "poll_oneoff", "the Go runtime dies on the ENOSYS")
			}
		})
	}
}

func TestTickFiresOnRootsWithAPeriod(t *testing.T) {
	h := newTestHost(t, func(o *Options) { o.PluginConfig = []byte("tick") })
	h.Tick()
	h.Tick()
	require.Equal(t, []string{"cb tick 1", "cb tick 1", "cb tick 1", "cb tick 1"}, logsWith(h, "cb tick"))
	h2 := newTestHost(t, nil)
	h2.Tick()
	require.Empty(t, logsWith(h2, "cb tick"))
}

// errorText joins the error-level log lines: the Go runtime writes a crash in many small fd 2
// writes, each one an Envoy log line.
func errorText(h *Host) string {
	var b strings.Builder
	for _, e := range h.Logs() {
		if e.Level == LevelError {
			b.WriteString(e.Message)
		}
	}
	return b.String()
}
