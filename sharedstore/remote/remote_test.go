package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

const token = "remote-test-token"

// fakeCaller queues calls like proxy_http_call and delivers them, to an
// httptest server running the real service, only when the test says so:
// the callback never runs inside Call.
type fakeCaller struct {
	t       *testing.T
	url     string
	queue   []func()
	calls   int
	failErr []error // consumed per call: non-nil fails with that error
	failSt  []int   // consumed per call: non-zero answers that status
	refuse  error   // Call itself returns this
	headers [][2]string
	// lose is consumed per call: true runs the call on the server, then
	// reports a timeout (the answer came after timeout_ms).
	lose []bool
	// overtake is consumed per call: true reports a timeout at once and
	// keeps the request in late, to reach the server when the test says.
	overtake []bool
	late     []func() (int, []byte)
	bodies   [][]byte
	paths    []string
}

var errTimeout = errors.New("timeout")

func pop[T any](q *[]T) T {
	var v T
	if len(*q) > 0 {
		v, *q = (*q)[0], (*q)[1:]
	}
	return v
}

func (f *fakeCaller) Call(headers [][2]string, body []byte, timeoutMs uint32, cb func(int, []byte, error)) error {
	if f.refuse != nil {
		return f.refuse
	}
	f.calls++
	f.headers = headers
	f.bodies = append(f.bodies, body)
	for _, kv := range headers {
		if kv[0] == ":path" {
			f.paths = append(f.paths, kv[1])
		}
	}
	ferr, fst := pop(&f.failErr), pop(&f.failSt)
	lose, overtake := pop(&f.lose), pop(&f.overtake)
	f.queue = append(f.queue, func() {
		switch {
		case lose:
			f.do(headers, body)
			cb(0, nil, errTimeout)
			return
		case overtake:
			f.late = append(f.late, func() (int, []byte) { return f.do(headers, body) })
			cb(0, nil, errTimeout)
			return
		}
		if ferr != nil {
			cb(0, nil, ferr)
			return
		}
		if fst != 0 {
			cb(fst, []byte("injected"), nil)
			return
		}
		status, b := f.do(headers, body)
		cb(status, b, nil)
	})
	return nil
}

func (f *fakeCaller) do(headers [][2]string, body []byte) (int, []byte) {
	var path string
	h := http.Header{}
	for _, kv := range headers {
		switch kv[0] {
		case ":path":
			path = kv[1]
		case ":method", ":authority":
		default:
			h.Set(kv[0], kv[1])
		}
	}
	req, err := http.NewRequest(http.MethodPost, f.url+path, bytes.NewReader(body))
	require.NoError(f.t, err)
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return resp.StatusCode, b
}

func (f *fakeCaller) deliver() {
	q := f.queue
	f.queue = nil
	for _, c := range q {
		c()
	}
}

type rig struct {
	fc    *fakeCaller
	store *Store
	rdb   *redis.Client
	clock int64
}

func newRig(t *testing.T, tok string) *rig {
	t.Helper()
	addr := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	srv := httptest.NewServer(server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{}), Token: token, Registry: prometheus.NewRegistry()}))
	t.Cleanup(srv.Close)
	r := &rig{fc: &fakeCaller{t: t, url: srv.URL}, rdb: rdb, clock: 1e18}
	r.store = New(r.fc, Config{Token: tok, Authority: "sharedstore", RetryForNs: 10e9}, func() int64 { return r.clock })
	return r
}

func (r *rig) admit(t *testing.T, p limit.Plan) limit.Outcome {
	t.Helper()
	var got *limit.Outcome
	r.store.Admit(p, func(o limit.Outcome) { got = &o })
	require.Nil(t, got, "answered before the callback")
	r.fc.deliver()
	require.NotNil(t, got, "callback never answered")
	return *got
}

// level reads a bucket period through the server's own key layout.
func (r *rig) level(t *testing.T, opKey, budget string, capacity int64) float64 {
	t.Helper()
	v, err := r.rdb.Get(context.Background(), "tb:b:{"+opKey+"}").Result()
	if err == redis.Nil {
		return float64(capacity)
	}
	require.NoError(t, err)
	b, err := server.DecodeBucket(v)
	require.NoError(t, err)
	p, ok := limit.ParsePeriod(budget)
	require.True(t, ok, budget)
	st, ok := b[p]
	if !ok {
		return float64(capacity)
	}
	return st.Level
}

func plan(key string, amount, capacity int64) limit.Plan {
	return limit.Plan{
		Requests: []limit.Op{{Key: "cc:" + key, Kind: limit.KindConcurrency, Dimension: limit.DimGlobal, Amount: 1,
			Limits: []limit.Limit{{Budget: limit.PeriodConcurrent, Capacity: 5}}}},
		Tokens: []limit.Op{{Key: "tk:" + key, Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Amount: amount, Private: true,
			Limits: []limit.Limit{{Budget: limit.PeriodMinute, Capacity: capacity, RefillPerSec: 0.001}}}},
	}
}

func TestAdmitAnswersFromTheCallbackWithARemoteHold(t *testing.T) {
	r := newRig(t, token)
	o := r.admit(t, plan("a", 300, 1000))
	require.NoError(t, o.Err)
	require.True(t, o.Admitted())
	require.Equal(t, limit.BackendRemote, o.Hold.Backend)
	require.Len(t, o.Hold.ID, 32)
	require.Len(t, o.Hold.Entries, 2)
	require.Equal(t, int64(300), o.Hold.Reserved())
	require.Equal(t, int64(700), o.Levels[0].Level.Remaining)
	require.Contains(t, r.fc.headers, [2]string{"authorization", "Bearer " + token})
	require.Contains(t, r.fc.headers, [2]string{":authority", "sharedstore"})
}

func TestRefusalComesBackWithItsReasonAndNoHold(t *testing.T) {
	r := newRig(t, token)
	o := r.admit(t, plan("b", 3000, 1000))
	require.NoError(t, o.Err)
	require.False(t, o.Admitted())
	require.Equal(t, limit.DimAPIKey, o.Refusal.Dimension)
	require.Equal(t, int64(1000), o.Refusal.Level.Remaining)
	require.Empty(t, o.Hold.ID)
}

func TestUnusableAnswersBecomeOutcomeErr(t *testing.T) {
	tests := []struct {
		name  string
		setup func(r *rig)
		token string
	}{
		{"transport error", func(r *rig) { r.fc.failErr = []error{errors.New("upstream reset")} }, token},
		{"non-2xx", func(r *rig) { r.fc.failSt = []int{503} }, token},
		{"bad json", func(r *rig) { r.fc.failSt = []int{200} }, token},
		{"wrong token is 401", func(*rig) {}, "not-the-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.token)
			tt.setup(r)
			o := r.admit(t, plan("c", 1, 10))
			require.Error(t, o.Err)
			require.False(t, o.Admitted())
		})
	}
}

func TestCallRefusedByTheHostAnswersAtOnceWithErr(t *testing.T) {
	r := newRig(t, token)
	r.fc.refuse = errors.New("no such cluster")
	var got *limit.Outcome
	r.store.Admit(plan("d", 1, 10), func(o limit.Outcome) { got = &o })
	require.NotNil(t, got)
	require.Error(t, got.Err)
}

func TestSettleIsRetriedFromTickUntilItLands(t *testing.T) {
	r := newRig(t, token)
	o := r.admit(t, plan("e", 400, 1000))
	require.True(t, o.Admitted())
	r.fc.failSt = []int{503, 502}
	r.store.Settle(o.Hold, 100)
	r.fc.deliver()
	require.Equal(t, 1, r.store.Pending())
	r.store.Tick()
	r.fc.deliver()
	require.Equal(t, 1, r.store.Pending())
	r.store.Tick()
	r.fc.deliver()
	r.store.Tick()
	require.Equal(t, 0, r.store.Pending())
	require.InDelta(t, 900, r.level(t, "tk:e", "minute", 1000), 0.5)
	require.InDelta(t, 5, r.level(t, "cc:e", "concurrent", 5), 0.01)
	calls := r.fc.calls
	r.store.Tick()
	require.Equal(t, calls, r.fc.calls, "nothing left to retry")
}

func TestRetriedReleaseAfterALostAnswerCountsOnce(t *testing.T) {
	r := newRig(t, token)
	o := r.admit(t, plan("f", 400, 1000))
	r.store.Release(o.Hold)
	r.fc.deliver()          // lands
	r.store.Release(o.Hold) // the filter's retry of a call whose answer it lost
	r.fc.deliver()
	require.InDelta(t, 1000, r.level(t, "tk:f", "minute", 1000), 0.5)
	require.Equal(t, 0, r.store.Pending())
}

func TestFailedSettleIsDroppedAfterTheRetryWindow(t *testing.T) {
	r := newRig(t, token)
	o := r.admit(t, plan("g", 400, 1000))
	r.fc.failErr = []error{errors.New("down"), errors.New("down")}
	r.store.Settle(o.Hold, 100)
	r.fc.deliver()
	r.clock += 5e9
	r.store.Tick()
	r.fc.deliver()
	require.Equal(t, 1, r.store.Pending())
	r.clock += 6e9
	calls := r.fc.calls
	r.store.Tick()
	require.Equal(t, calls, r.fc.calls, "no attempt after the window")
	require.Equal(t, 0, r.store.Pending())
	require.Equal(t, uint64(1), r.store.Dropped())
}

func TestHoldWithoutIDCostsNoCall(t *testing.T) {
	r := newRig(t, token)
	r.store.Settle(limit.Hold{Backend: limit.BackendRemote}, 10)
	r.store.Release(limit.Hold{Backend: limit.BackendRemote})
	require.Equal(t, 0, r.fc.calls)
}
