package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
)

// lockedBuffer is a log sink the server's goroutines may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

func TestRefusedCallsAreLoggedAtMostOncePerIntervalWithTheCountAndNeverTheToken(t *testing.T) {
	e := newEnv(t, false)
	var sink lockedBuffer
	s := New(Config{Buckets: e.store, Token: testToken, Registry: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(&sink, nil))})
	var mu sync.Mutex
	clock := time.Unix(1_800_000_000, 0)
	s.refused.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	body := wire.AppendAdmit(nil, limit.Plan{Tokens: []limit.Op{tokOp(uniq("tk"), "global", 1, minute(10))}})

	// Through Front (the filters' path) and through net/http (a call Front hands over).
	for name, srv := range map[string]*httptest.Server{"front": serve(t, s), "net/http": httptest.NewServer(s)} {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(srv.Close)
			advance(time.Hour) // a fresh interval
			before := len(sink.lines())
			for i := 0; i < 5; i++ {
				code, _ := post(t, srv.URL+wire.PathAdmit, "Bearer not-"+testToken, body)
				require.Equal(t, http.StatusUnauthorized, code)
			}
			got := sink.lines()[before:]
			require.Len(t, got, 1, "five refusals in one interval, one line")
			require.Contains(t, got[0], "refused a call without the service's token (401)")
			require.Contains(t, got[0], "op=admit")
			require.Contains(t, got[0], "from=127.0.0.1:")
			require.NotContains(t, got[0], testToken)

			advance(refusalLogEvery)
			code, _ := post(t, srv.URL+wire.PathAdmit, "", body)
			require.Equal(t, http.StatusUnauthorized, code)
			got = sink.lines()[before:]
			require.Len(t, got, 2)
			require.Contains(t, got[1], "refused_unlogged=4", "the next line counts what the first left out")

			code, _ = post(t, srv.URL+wire.PathAdmit, "Bearer "+testToken, body)
			require.Equal(t, http.StatusOK, code)
			require.Len(t, sink.lines()[before:], 2, "an authorized call logs nothing")
		})
	}
}
