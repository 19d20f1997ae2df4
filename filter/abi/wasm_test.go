package abi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

// The probe module (internal/probe) calls every Host method through the
// real imports, out-parameters and proxy_on_memory_allocate, and logs what
// came back; here it runs in the Envoy-faithful wazero host, so each answer
// is the one Envoy gives.

// infoLogs returns the guest's info lines since seen, and the new count.
func infoLogs(h *host.Host, seen int) ([]string, int) {
	all := h.Logs()
	var out []string
	for _, e := range all[seen:] {
		if e.Level == host.LevelInfo {
			out = append(out, e.Message)
		}
	}
	return out, len(all)
}

func TestProbeModuleCrossesTheRealABIAsEnvoyAnswers(t *testing.T) {
	type call struct{ method, path, authority, body string }
	// Both clusters answer once the test lets them, so every answer comes
	// at a known point; the store answers, down resets the connection.
	calls := make(chan call, 4)
	release := make(chan struct{})
	var once sync.Once
	answer := func() { once.Do(func() { close(release) }) }
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls <- call{r.Method, r.URL.Path, r.Host, string(b)}
		<-release
		w.Header().Set("x-answer", "yes")
		_, _ = w.Write([]byte("pong"))
	}))
	t.Cleanup(store.Close)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(down.Close)

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{
		Module: wasmbuild.Build(t, "./filter/abi/internal/probe"), VMID: "probe", RootID: "probe", Workers: 1,
		VMConfig: []byte("vm-cfg"), PluginConfig: []byte(`{"x":1}`),
		Clusters: map[string]string{"store": store.URL, "down": down.URL},
		Now:      func() time.Time { return now },
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(ctx) })
	t.Cleanup(answer) // first: a failed test must not leave the servers holding their calls
	logs, seen := infoLogs(h, 0)
	require.Contains(t, logs, "vm_config=vm-cfg")
	require.Contains(t, logs, `plugin_config={"x":1}`)

	s := h.NewStream(host.StreamInfo{Worker: 0, SourceAddress: "10.1.2.3:4567"})
	r := s.RequestHeaders(host.Headers{{":path", "/v1/chat"}, {":method", "POST"}, {"x-replace", "old"}, {"x-remove", "1"}}, false)
	require.Equal(t, host.Pause, r.Action)
	logs, seen = infoLogs(h, seen)
	require.Equal(t, []string{
		"path /v1/chat ok not found 4 false",
		"add ok ok ok",
		"headers :path=/v1/chat;:method=POST;x-replace=new;x-probe=yes; ok",
		"shared ok n ok ok cas mismatch n+ true",
		"property 10.1.2.3:4567 ok not found",
		"now " + strconv.FormatInt(now.UnixNano(), 10),
		"metric ok ok ok 5 ok",
		"callout_sent 4 ok ok bad argument",
		"tick_period ok",
		"stress 0",
	}, logs)
	calledHost := h.HostCalls()
	require.GreaterOrEqual(t, calledHost["env.proxy_get_header_map_pairs"]+calledHost["env.proxy_get_header_map_value"], int64(600),
		"the stress loop must go through the allocator")
	v, _, ok := h.SharedData("counter")
	require.True(t, ok)
	require.Equal(t, "n+", string(v))
	m, ok := h.Metric("probe_requests")
	require.True(t, ok)
	require.Equal(t, int64(5), m)

	// The body waits behind the paused headers; the store's answer resumes
	// the stream, and the probe appends to the body it then sees.
	require.Equal(t, host.Pause, s.RequestBody([]byte("abcdefgh"), true).Action)
	answer()
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r = s.Wait(waitCtx)
	require.Equal(t, host.Continue, r.Action)
	require.Equal(t, "abcdefgh!", string(r.Body))
	require.Equal(t, call{"POST", "/reserve", "store", "ping"}, <-calls)
	want := []string{"callout true 200 ok yes pong ok 0 ", "continue ok ok", "body 8 cde ok ok", "callout false  not found   ok 11 reset"}
	var got []string
	require.Eventually(t, func() bool {
		var more []string
		more, seen = infoLogs(h, seen)
		got = append(got, more...)
		return len(got) >= len(want)
	}, 10*time.Second, 10*time.Millisecond)
	require.ElementsMatch(t, want, got)

	require.Equal(t, host.Continue, s.ResponseHeaders(host.Headers{{":status", "200"}}, false).Action)
	var critical []string
	for _, e := range h.Logs() {
		if e.Level == host.LevelCritical {
			critical = append(critical, e.Message)
		}
	}
	require.Len(t, critical, 1)
	require.Contains(t, critical[0], "panic in proxy_on_response_headers: probe panic")
	s.Done()
	logs, seen = infoLogs(h, seen)
	require.Equal(t, []string{"on_log"}, logs)

	h.Tick()
	logs, seen = infoLogs(h, seen)
	require.Equal(t, []string{"tick"}, logs, "the root set a tick period")

	local := h.NewStream(host.StreamInfo{Worker: 0})
	r = local.RequestHeaders(host.Headers{{":path", "/local"}, {":method", "GET"}}, true)
	require.Equal(t, host.LocalReply, r.Action)
	require.Equal(t, 429, r.Local.Status)
	require.Equal(t, "probe_limited", r.Local.Details)
	require.Equal(t, `{"error":"slow down"}`, string(r.Local.Body))
	require.Equal(t, -1, r.Local.GRPCStatus, "a plain HTTP local response carries grpc status -1")
	retry, _ := r.Local.Headers.Get("retry-after")
	require.Equal(t, "3", retry)
	local.Done()
	logs, seen = infoLogs(h, seen)
	require.Equal(t, []string{"local_response ok", "on_log"}, logs)

	require.Error(t, h.Reload(ctx, []byte("reject")), "the root's refusal reaches the host")
	logs, _ = infoLogs(h, seen)
	require.Contains(t, logs, "plugin_config=reject")
	require.Empty(t, h.Traps())
	require.Zero(t, h.PollOneoffCalls())
	require.False(t, strings.Contains(strings.Join(logs, "\n"), "panic"))
}
