package abitest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

func TestSharedDataFollowsEnvoyCasRules(t *testing.T) {
	s := NewSharedData()
	_, _, st := s.Get("k")
	require.Equal(t, abi.StatusNotFound, st)

	require.Equal(t, abi.StatusOK, s.Set("k", []byte("a"), 99), "a missing key takes any cas")
	v, cas, st := s.Get("k")
	require.Equal(t, abi.StatusOK, st)
	require.Equal(t, "a", string(v))
	require.Equal(t, uint32(1), cas, "the counter starts at 1")

	require.Equal(t, abi.StatusCasMismatch, s.Set("k", []byte("b"), cas+1))
	require.Equal(t, abi.StatusOK, s.Set("k", []byte("b"), cas))
	require.Equal(t, abi.StatusCasMismatch, s.Set("k", []byte("c"), cas), "a used cas is stale")
	require.Equal(t, abi.StatusOK, s.Set("k", []byte("c"), 0), "cas 0 is unconditional")
	_, cas, _ = s.Get("k")
	require.Equal(t, uint32(3), cas)
}

func TestSharedDataCounterSkipsZero(t *testing.T) {
	s := NewSharedData()
	s.lastCas = ^uint32(0)
	require.Equal(t, abi.StatusOK, s.Set("k", nil, 0))
	_, cas, _ := s.Get("k")
	require.Equal(t, uint32(1), cas)
}

func TestSharedDataIsOneMapForEveryWorker(t *testing.T) {
	shared := NewSharedData()
	workers := []*Fake{New(shared), New(shared)}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				for {
					v, cas, _ := w.GetSharedData("n")
					next := []byte{byte(len(v) + 1)}
					if len(v) == 1 {
						next = []byte{v[0] + 1}
					}
					if w.SetSharedData("n", next, cas) == abi.StatusOK {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	v, _, _ := workers[0].GetSharedData("n")
	require.Equal(t, []byte{200}, v, "no increment may be lost under CAS")
}

func TestHeadersAreLowercasedAndUnavailableUntilSet(t *testing.T) {
	f := New(nil)
	_, st := f.GetHeader(abi.MapRequestHeaders, ":path")
	require.Equal(t, abi.StatusBadArgument, st)

	f.SetHeaders(abi.MapRequestHeaders, [][2]string{{":path", "/v1"}, {"X-Key", "a"}, {"x-key", "b"}})
	v, st := f.GetHeader(abi.MapRequestHeaders, "X-KEY")
	require.Equal(t, abi.StatusOK, st)
	require.Equal(t, "a", v, "the first value, as Envoy returns it")
	_, st = f.GetHeader(abi.MapRequestHeaders, "missing")
	require.Equal(t, abi.StatusNotFound, st)

	require.Equal(t, abi.StatusOK, f.ReplaceHeader(abi.MapRequestHeaders, "x-key", "c"))
	require.Equal(t, abi.StatusOK, f.AddHeader(abi.MapRequestHeaders, "X-New", "d"))
	require.Equal(t, abi.StatusOK, f.RemoveHeader(abi.MapRequestHeaders, ":path"))
	got, st := f.GetHeaders(abi.MapRequestHeaders)
	require.Equal(t, abi.StatusOK, st)
	require.Equal(t, [][2]string{{"x-key", "c"}, {"x-new", "d"}}, got)

	f.DropHeaders(abi.MapRequestHeaders)
	require.Equal(t, abi.StatusBadArgument, f.AddHeader(abi.MapRequestHeaders, "a", "b"))
}

func TestBuffersClampReadsAndOnlyReplaceOrAppend(t *testing.T) {
	f := New(nil)
	_, st := f.GetBuffer(abi.BufferRequestBody, 0, 10)
	require.Equal(t, abi.StatusNotFound, st)
	f.SetBufferData(abi.BufferRequestBody, []byte("hello world"))

	cases := []struct {
		start, max int
		want       string
	}{{0, 5, "hello"}, {6, 100, "world"}, {11, 5, ""}, {50, 5, ""}, {0, 0, ""}}
	for _, c := range cases {
		got, st := f.GetBuffer(abi.BufferRequestBody, c.start, c.max)
		require.Equal(t, abi.StatusOK, st)
		require.Equal(t, c.want, string(got), "start %d max %d", c.start, c.max)
	}

	require.Equal(t, abi.StatusOK, f.SetBuffer(abi.BufferRequestBody, 0, 5, []byte("HI")))
	require.Equal(t, abi.StatusOK, f.SetBuffer(abi.BufferRequestBody, 100, 0, []byte("!")))
	require.Equal(t, abi.StatusBadArgument, f.SetBuffer(abi.BufferRequestBody, 2, 1, []byte("x")))
	got, _ := f.Buffer(abi.BufferRequestBody)
	require.Equal(t, "HI world!", string(got))
}

func TestHTTPCallChecksArgumentsLikeEnvoy(t *testing.T) {
	f := New(nil)
	f.AllowClusters("sharedstore")
	full := [][2]string{{":method", "POST"}, {":path", "/v1/reserve"}, {":authority", "sharedstore"}}
	cases := map[string]struct {
		cluster string
		headers [][2]string
		want    abi.Status
	}{
		"accepted":          {"sharedstore", full, abi.StatusOK},
		"unknown cluster":   {"other", full, abi.StatusBadArgument},
		"missing authority": {"sharedstore", full[:2], abi.StatusBadArgument},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, st := f.HTTPCall(c.cluster, c.headers, nil, 50)
			require.Equal(t, c.want, st)
		})
	}
	calls := f.HTTPCalls()
	require.Len(t, calls, 1)
	require.Equal(t, uint32(50), calls[0].TimeoutMs)
}

type recordingRoot struct {
	abi.RootContext
	host    *Fake
	token   uint32
	body    string
	status  uint32
	headers int
}

func (r *recordingRoot) OnHTTPCallResponse(token uint32, numHeaders, bodySize, _ int) {
	r.token, r.headers = token, numHeaders
	b, _ := r.host.GetBuffer(abi.BufferHTTPCallResponseBody, 0, bodySize)
	r.body = string(b)
	r.status, _ = r.host.GetStatus()
}

func TestCalloutAnswersAreReadableOnlyDuringTheCallback(t *testing.T) {
	f := New(nil)
	r := &recordingRoot{host: f}
	f.RespondHTTPCall(r, 1, 7, [][2]string{{":status", "200"}}, []byte(`{"ok":true}`), nil)
	require.Equal(t, uint32(7), r.token)
	require.Equal(t, `{"ok":true}`, r.body)
	require.Equal(t, 1, r.headers)
	_, st := f.GetBuffer(abi.BufferHTTPCallResponseBody, 0, 10)
	require.Equal(t, abi.StatusNotFound, st)

	f.FailHTTPCall(r, 1, 8)
	require.Equal(t, uint32(abi.StatusBrokenConnection), r.status)
	code, _ := f.GetStatus()
	require.Zero(t, code)
}

func TestMetricsFollowEnvoyTypeRules(t *testing.T) {
	f := New(nil)
	c, _ := f.DefineMetric(abi.MetricCounter, "requests")
	again, _ := f.DefineMetric(abi.MetricCounter, "requests")
	require.Equal(t, c, again)
	g, _ := f.DefineMetric(abi.MetricGauge, "level")
	h, _ := f.DefineMetric(abi.MetricHistogram, "latency")

	require.Equal(t, abi.StatusBadArgument, f.IncrementMetric(c, 0), "counters only go up")
	require.Equal(t, abi.StatusOK, f.IncrementMetric(c, 2))
	require.Equal(t, abi.StatusOK, f.RecordMetric(c, 3))
	require.Equal(t, abi.StatusOK, f.IncrementMetric(g, -4))
	require.Equal(t, abi.StatusOK, f.RecordMetric(g, 10))
	require.Equal(t, abi.StatusOK, f.RecordMetric(h, 5))
	require.Equal(t, abi.StatusNotFound, f.IncrementMetric(99, 1))

	v, st := f.GetMetric(c)
	require.Equal(t, abi.StatusOK, st)
	require.Equal(t, uint64(5), v)
	gv, _ := f.Metric("level")
	require.Equal(t, int64(10), gv, "record on a gauge sets")
	require.Equal(t, []uint64{5}, f.Histogram("latency"))
	_, st = f.GetMetric(h)
	require.Equal(t, abi.StatusBadArgument, st)
}

func TestInjectedFailuresLastUntilCleared(t *testing.T) {
	f := New(nil)
	f.Fail("SetSharedData", abi.StatusInternalFailure)
	require.Equal(t, abi.StatusInternalFailure, f.SetSharedData("k", nil, 0))
	require.Equal(t, abi.StatusInternalFailure, f.SetSharedData("k", nil, 0))
	f.Fail("SetSharedData", abi.StatusOK)
	require.Equal(t, abi.StatusOK, f.SetSharedData("k", nil, 0))
}

func TestClockIsSettable(t *testing.T) {
	f := New(nil)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.SetNow(at)
	f.Advance(time.Second)
	require.Equal(t, at.Add(time.Second).UnixNano(), f.NowNanos())
}

func TestLocalResponsesAndContinuesAreRecorded(t *testing.T) {
	f := New(nil)
	f.Enter(3)
	require.Equal(t, abi.StatusOK, f.SendLocalResponse(429, "limited", []byte("{}"), [][2]string{{"retry-after", "1"}}))
	require.Equal(t, abi.StatusOK, f.SetEffectiveContext(5))
	require.Equal(t, abi.StatusOK, f.ContinueStream(abi.StreamRequest))
	require.Equal(t, []LocalResponse{{Status: 429, Details: "limited", Body: []byte("{}"), Headers: [][2]string{{"retry-after", "1"}}}}, f.LocalResponses())
	require.Equal(t, []Continue{{ContextID: 5, Stream: abi.StreamRequest}}, f.Continues())
}

func TestPropertiesAndLogs(t *testing.T) {
	f := New(nil)
	f.SetProperty([]byte("10.0.0.1:5000"), "source", "address")
	v, st := f.GetProperty("source", "address")
	require.Equal(t, abi.StatusOK, st)
	require.Equal(t, "10.0.0.1:5000", string(v))
	_, st = f.GetProperty("source")
	require.Equal(t, abi.StatusNotFound, st)
	f.Log(abi.LogWarn, "bucket full")
	require.True(t, f.Logged(abi.LogInfo, "full"))
	require.False(t, f.Logged(abi.LogError, "full"))
}
