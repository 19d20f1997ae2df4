package host

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests pin the answers proxy-wasm-cpp-host gives where an earlier version of this host
// answered differently; each is visible to a module, so a module tested here must see what it
// will see in Envoy.

func TestHeaderValueIsTheFirstEntryWhilePairsShowEveryEntry(t *testing.T) {
	for _, tc := range []struct {
		name string
		dups []string
		want string
	}{
		{"one entry", []string{"a"}, "first 0 a pairs 1"},
		{"two entries, first wins", []string{"a", "b"}, "first 0 a pairs 2"},
		{"three entries", []string{"k1", "k2", "k1"}, "first 0 k1 pairs 3"},
		{"absent is NotFound", nil, "first 1  pairs 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHost(t, func(o *Options) { o.Workers = 1 })
			var extra []string
			for _, d := range tc.dups {
				extra = append(extra, "x-dup", d)
			}
			s := h.NewStream(StreamInfo{})
			s.RequestHeaders(reqHeaders("first", extra...), true)
			s.Done()
			require.Equal(t, []string{tc.want}, logsWith(h, "first "))
		})
	}
}

func TestAnEmptyHeaderMapIsPointerZeroSizeZero(t *testing.T) {
	h := newTestHost(t, func(o *Options) { o.Workers = 1 })
	s := h.NewStream(StreamInfo{})
	s.RequestHeaders(reqHeaders("pairs-empty"), true)
	s.Done()
	got := map[string]string{}
	for _, l := range logsWith(h, "pairs ") {
		i := strings.LastIndex(l, " ")
		got[l[:i]] = l
	}
	for _, tc := range []struct{ rule, line string }{
		{"a map that is not there (request trailers) is Ok and empty", "pairs trailers 0 0 0"},
		{"a map emptied by set_header_map_pairs is Ok, pointer 0, size 0", "pairs emptied 0 0 0"},
		{"a map type past the last is BadArgument", "pairs type 9 2"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			require.Contains(t, logsWith(h, "pairs "), tc.line)
		})
	}
	t.Run("malformed pairs empty the map and answer Ok, as Envoy's setHeaderMapPairs(toPairs)", func(t *testing.T) {
		require.Equal(t, []string{"set empty 0", "set garbage 0"}, logsWith(h, "set "))
	})
	t.Run("a map with one header is a real allocation", func(t *testing.T) {
		lines := logsWith(h, "pairs one ")
		require.Len(t, lines, 1)
		require.True(t, strings.HasPrefix(lines[0], "pairs one 0 true "), lines[0])
		require.NotEqual(t, "pairs one 0 true 0", lines[0])
	})
}

func TestBufferReadsPastTheEndAreOkAndEmpty(t *testing.T) {
	h := newTestHost(t, func(o *Options) { o.Workers = 1 })
	s := h.NewStream(StreamInfo{})
	s.RequestHeaders(reqHeaders("past-end"), false)
	s.RequestBody([]byte("0123456789"), true)
	s.Done()
	lines := logsWith(h, "read ")
	for i, tc := range []struct{ rule, line string }{
		{"a start past the end reads nothing, Ok, pointer 0", "read 20 0 false 0 "},
		{"a start at the end reads nothing, Ok, pointer 0", "read 10 0 false 0 "},
		{"a read over the end is clamped", "read 8 0 true 2 89"},
		{"a buffer type past the last is BadArgument", "read type 9 2"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			require.Len(t, lines, 4)
			require.Equal(t, tc.line, lines[i])
		})
	}
}

func TestSendLocalResponseAnswersOkAndStopsTheCallbackThatSentIt(t *testing.T) {
	for _, tc := range []struct {
		rule    string
		action  string
		run     func(s *Stream) Result
		status  int
		details string
		check   func(t *testing.T, h *Host, r Result)
	}{
		{
			rule: "malformed header pairs become no headers and the call answers Ok", action: "local-bad-pairs",
			run:    func(s *Stream) Result { return s.RequestHeaders(reqHeaders("local-bad-pairs"), true) },
			status: 403, details: "bad_pairs_here",
			check: func(t *testing.T, h *Host, r Result) {
				require.Equal(t, []string{"local status 0"}, logsWith(h, "local status"))
				_, has := r.Local.Headers.Get("x")
				require.False(t, has)
				require.Equal(t, "nope", string(r.Local.Body))
			},
		},
		{
			rule: "a body callback that returns Continue after a local reply forwards nothing", action: "local-on-body",
			run: func(s *Stream) Result {
				s.RequestHeaders(reqHeaders("local-on-body"), false)
				return s.RequestBody([]byte("secret"), true)
			},
			status: 413, details: "denied_in_body",
			check: func(t *testing.T, h *Host, r Result) { require.Nil(t, r.Body) },
		},
		{
			rule: "response headers that return Continue after a local reply are replaced, not reset", action: "local-on-response",
			run: func(s *Stream) Result {
				s.RequestHeaders(reqHeaders("local-on-response"), true)
				return s.ResponseHeaders(Headers{{":status", "200"}, {"x-upstream", "1"}}, true)
			},
			status: 418, details: "denied_on_response",
			check: func(t *testing.T, h *Host, r Result) {
				_, leaked := r.Local.Headers.Get("x-upstream")
				require.False(t, leaked, "the upstream's headers never went out")
			},
		},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			h := newTestHost(t, func(o *Options) { o.Workers = 1 })
			s := h.NewStream(StreamInfo{})
			r := tc.run(s)
			s.Done()
			require.Equal(t, LocalReply, r.Action, "%+v", r)
			require.Equal(t, tc.status, r.Local.Status)
			require.Equal(t, tc.details, r.Local.Details)
			tc.check(t, h, r)
		})
	}
}

func TestCalloutTokensAndMetricIDsCarryTheirTypeInTheLowBits(t *testing.T) {
	srv := newStore(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	h := newTestHost(t, func(o *Options) { o.Workers = 2; o.Clusters = map[string]string{"store": srv.URL} })
	for w := 0; w < 2; w++ {
		s := h.NewStream(StreamInfo{Worker: w})
		s.RequestHeaders(reqHeaders("ids", "x-cluster", "store"), true)
		s.Done()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(logsWith(h, "cb http_response")) < 4 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	same := func(l string) []string { return []string{l, l} } // each worker VM has its own sequences
	for _, tc := range []struct {
		rule, prefix string
		want         []string
	}{
		{"counters 4, 8, gauges 5, histograms 6, a new id for every definition, per VM", "ids ", same("ids 4 5 6 8")},
		{"reading a histogram is BadArgument", "get histogram ", same("get histogram 2")},
		{"a gauge-typed id nobody defined is NotFound", "get undefined gauge ", same("get undefined gauge 1")},
		{"incrementing a histogram is BadArgument", "inc histogram ", same("inc histogram 2")},
		{"a negative increment lowers the process-wide gauge", "gauge ", []string{"gauge -2", "gauge -4"}},
		{"callout tokens are 4, 8 per VM; malformed header pairs lack :method: BadArgument, token 0", "tokens ", same("tokens 4 8 bad 2 0")},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			require.Equal(t, tc.want, logsWith(h, tc.prefix))
		})
	}
}
