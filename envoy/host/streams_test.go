package host

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRequestHeadersAreReadOnlyAfterContinue(t *testing.T) {
	h := newTestHost(t, nil)
	s := h.NewStream(StreamInfo{Worker: 0})
	defer s.Done()
	s.RequestHeaders(reqHeaders("readonly"), false)
	r := s.RequestBody([]byte("x"), true)
	require.Equal(t, Continue, r.Action)
	require.Equal(t, []string{"replace after continue 2"}, logsWith(h, "replace after continue"), "BadArgument")
	require.Equal(t, []string{"size after continue 2"}, logsWith(h, "size after continue"))
}

func TestBufferingFilterSeesTotalSizeAndReleasesRewrittenBodyAtEnd(t *testing.T) {
	h := newTestHost(t, nil)
	s := h.NewStream(StreamInfo{Worker: 0})
	defer s.Done()
	r := s.RequestHeaders(reqHeaders("rewrite"), false)
	require.Equal(t, Continue, r.Action)
	r = s.RequestBody([]byte("hello "), false)
	require.Equal(t, Pause, r.Action)
	require.Empty(t, r.Body)
	r = s.RequestBody([]byte("world"), true)
	require.Equal(t, Continue, r.Action)
	require.Equal(t, "REWRITTEN", string(r.Body))
	require.True(t, r.EndOfStream)
	require.Equal(t, []string{"body hello world"}, logsWith(h, "body "))
	require.Contains(t, callbackLog(h, 0), "request_body 2 6 0")
	require.Contains(t, callbackLog(h, 0), "request_body 2 11 1", "the callback gets the total buffered size")
}

func TestBufferedRequestOverLimitGets413ThroughTheFiltersResponsePath(t *testing.T) {
	h := newTestHost(t, func(o *Options) { o.BufferLimit = 8 })
	s := h.NewStream(StreamInfo{Worker: 0})
	defer s.Done()
	s.RequestHeaders(reqHeaders("buffer"), false)
	require.Equal(t, Pause, s.RequestBody([]byte("12345"), false).Action)
	r := s.RequestBody([]byte("67890"), false)
	require.Equal(t, LocalReply, r.Action)
	require.Equal(t, 413, r.Local.Status)
	require.Equal(t, "request_payload_too_large", r.Local.Details)
	v, _ := r.Local.Headers.Get("x-filter")
	require.Equal(t, "seen", v, "Envoy runs local replies through the filter's encode path")
	// Later calls keep answering the local reply.
	require.Equal(t, LocalReply, s.RequestBody([]byte("x"), true).Action)
}

func TestLocalResponseStopsTheStreamWhateverTheCallbackReturned(t *testing.T) {
	h := newTestHost(t, nil)
	s := h.NewStream(StreamInfo{Worker: 0})
	r := s.RequestHeaders(reqHeaders("local"), false)
	require.Equal(t, LocalReply, r.Action)
	require.Equal(t, 429, r.Local.Status)
	require.Equal(t, "nope", string(r.Local.Body))
	require.Equal(t, "denied_by_test", r.Local.Details)
	for _, kv := range [][2]string{{":status", "429"}, {"x-reason", "budget"}, {"content-type", "text/plain"}, {"content-length", "4"}, {"x-filter", "seen"}} {
		v, ok := r.Local.Headers.Get(kv[0])
		require.True(t, ok, kv[0])
		require.Equal(t, kv[1], v)
	}
	s.Done()
	require.Equal(t, []string{"create 2 1", "request_headers 2", "response_headers 2 429", "response_body 2 4 1", "log 2", "done 2", "delete 2"}, callbackLog(h, 0)[3:])
}

func newStore(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

func TestPausedStreamResumesWhenCalloutAnswerArrivesOnRootContext(t *testing.T) {
	var got struct {
		method, path, host, from, body string
	}
	srv := newStore(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.method, got.path, got.host, got.from, got.body = r.Method, r.URL.Path, r.Host, r.Header.Get("x-from"), string(b)
		require.Equal(t, int64(5), r.ContentLength)
		_, _ = w.Write([]byte("granted"))
	})
	h := newTestHost(t, func(o *Options) { o.Clusters = map[string]string{"store": srv.URL} })
	s := h.NewStream(StreamInfo{Worker: 1})
	defer s.Done()
	r := s.RequestHeaders(reqHeaders("call", "x-cluster", "store", "x-timeout", "1000"), true)
	require.Equal(t, Pause, r.Action)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r = s.Wait(ctx)
	require.Equal(t, Continue, r.Action)
	require.NotNil(t, r.Headers)
	require.True(t, r.EndOfStream)
	require.Equal(t, "POST /reserve store guest hello", got.method+" "+got.path+" "+got.host+" "+got.from+" "+got.body)
	lines := logsWith(h, "cb http_response")
	require.Len(t, lines, 1)
	require.True(t, strings.HasPrefix(lines[0], "cb http_response 1 token 4 "), lines[0], "the first callout token of a VM is 4, as in cpp-host")
	require.Contains(t, lines[0], " 7 0 status 0  http 200 body granted")
}

func TestFailedCalloutsCallBackWithZeroesAndBrokenConnection(t *testing.T) {
	slow := newStore(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	h := newTestHost(t, func(o *Options) {
		o.Clusters = map[string]string{"slow": slow.URL, "dead": deadURL}
	})
	for _, tc := range []struct{ name, cluster, timeout string }{
		{"timeout", "slow", "50"},
		{"connect refused", "dead", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := h.NewStream(StreamInfo{Worker: 0})
			defer s.Done()
			require.Equal(t, Pause, s.RequestHeaders(reqHeaders("call", "x-cluster", tc.cluster, "x-timeout", tc.timeout), true).Action)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r := s.Wait(ctx)
			require.Equal(t, LocalReply, r.Action)
			require.Equal(t, 503, r.Local.Status)
			lines := logsWith(h, "cb http_response")
			require.Contains(t, lines[len(lines)-1], " 0 0 0 status 11 reset")
		})
	}
	t.Run("unknown cluster is BadArgument", func(t *testing.T) {
		s := h.NewStream(StreamInfo{Worker: 0})
		defer s.Done()
		r := s.RequestHeaders(reqHeaders("call", "x-cluster", "nope", "x-timeout", "10"), true)
		require.Equal(t, Continue, r.Action)
		require.Contains(t, logsWith(h, "http_call status"), "http_call status 2 token 0")
	})
	t.Run("negative timeout is BadArgument", func(t *testing.T) {
		s := h.NewStream(StreamInfo{Worker: 0})
		defer s.Done()
		s.RequestHeaders(reqHeaders("call", "x-cluster", "slow", "x-timeout", "-5"), true)
		require.Equal(t, "http_call status 2 token 0", logsWith(h, "http_call status")[len(logsWith(h, "http_call status"))-1])
	})
}

func TestCalloutAnswerAfterStreamIsGoneReachesRootAndCannotResumeIt(t *testing.T) {
	release := make(chan struct{})
	srv := newStore(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = w.Write([]byte("late"))
	})
	h := newTestHost(t, func(o *Options) { o.Clusters = map[string]string{"store": srv.URL} })
	s := h.NewStream(StreamInfo{Worker: 0})
	require.Equal(t, Pause, s.RequestHeaders(reqHeaders("call", "x-cluster", "store", "x-timeout", "0"), true).Action)
	s.Done() // client went away
	close(release)
	require.Eventually(t, func() bool { return len(logsWith(h, "set_effective_context")) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"set_effective_context 2"}, logsWith(h, "set_effective_context"))
	require.Contains(t, logsWith(h, "cb http_response")[0], "body late")
	require.Empty(t, h.Traps())
}

func TestSharedDataCASIsAtomicAcrossWorkerVMs(t *testing.T) {
	h := newTestHost(t, nil)
	const perWorker = 50
	// The counter exists before the workers race: Envoy checks no cas on a
	// missing key, so two first writes would both land (the guest's naive
	// loop, unlike the filter's store, has no sentinel for that).
	first := h.NewStream(StreamInfo{Worker: 0})
	first.RequestHeaders(reqHeaders("cas"), true)
	first.Done()
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				s := h.NewStream(StreamInfo{Worker: w})
				s.RequestHeaders(reqHeaders("cas"), true)
				s.Done()
			}
		}(w)
	}
	wg.Wait()
	v, cas, ok := h.SharedData("counter")
	require.True(t, ok)
	require.Equal(t, "101", string(v))
	require.NotZero(t, cas)
	require.Empty(t, h.Traps())
}

func TestSharedDataCASRules(t *testing.T) {
	d := &sharedData{m: map[string]sharedEntry{}}
	require.Equal(t, statusOK, d.set("k", []byte("a"), 12345), "missing key: cas not checked")
	_, c1, _ := d.get("k")
	require.Equal(t, statusCasMismatch, d.set("k", []byte("b"), c1+1))
	require.Equal(t, statusOK, d.set("k", []byte("b"), c1))
	_, c2, _ := d.get("k")
	require.NotEqual(t, c1, c2)
	require.Equal(t, statusOK, d.set("k", []byte("c"), 0), "cas 0 is unconditional")
	sharedMu.Lock()
	casNext = 0xffffffff
	require.Equal(t, uint32(0xffffffff), nextCas())
	require.Equal(t, uint32(1), nextCas(), "the counter skips 0")
	sharedMu.Unlock()
}
