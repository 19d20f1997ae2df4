package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// FilterStateName is the filter state the tokenbudget filter records its
// decision under (Envoy: wasm.tokenbudget).
const FilterStateName = "tokenbudget"

// accessLog writes one JSON line per request: method, path, status and
// duration, and the filter's decision (outcome, refusing limit, hold, how it
// ended, what it was charged, the key's id or hash) lifted to the top level,
// as an Envoy access log printing %FILTER_STATE(wasm.tokenbudget:PLAIN)%
// would. The query string is left out: it is the client's, and may carry
// secrets.
type accessLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *accessLog) write(r *http.Request, status int, took time.Duration, decision []byte) {
	if l == nil || l.w == nil {
		return
	}
	line := map[string]any{}
	if len(decision) > 0 {
		_ = json.Unmarshal(decision, &line) // the filter writes one JSON object
	}
	line["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	line["method"] = r.Method
	line["path"] = r.URL.Path
	line["status"] = status
	line["duration_ms"] = float64(took.Microseconds()) / 1000
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(b)
}
