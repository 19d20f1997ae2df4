package mockllm

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// Options tunes the mock. The zero value is ready to use.
type Options struct {
	// DefaultOutputTokens is the answer length when the request has no x-mock-output-tokens header
	// (0 means 16), so that plain SDK calls get a short, predictable answer.
	DefaultOutputTokens int64
	// Now stamps created timestamps; nil means time.Now. Inject it for byte-stable bodies.
	Now func() time.Time
	// OnServed, when set, is called once at the end of every request, so tests can count what the
	// backend actually saw (including streams cut by the client). It may be called concurrently,
	// and runs after the answer is written: a client can hold the answer before the record
	// exists, so wait with Tally.WaitCount rather than reading Count right away.
	OnServed func(Served)
}

// Served describes one request the mock answered.
type Served struct {
	Path   string
	Stream bool
	// Status is the HTTP status written (200, an x-mock-status, 400 for a bad body, 404, 405), or
	// StatusClientClosed.
	Status int
	// InputTokens and OutputTokens are what the usage reported (or would have, for a cut stream:
	// OutputTokens then counts only the tokens sent).
	InputTokens, OutputTokens, CachedTokens int64
	// Completed is false when the stream ended early (client gone or x-mock-abort-after).
	Completed bool
}

// StatusClientClosed is the Served.Status of a request whose body never fully arrived (nginx's
// 499): it reached the backend but could not be answered.
const StatusClientClosed = 499

// New returns the mock's handler.
func New(o Options) http.Handler {
	if o.DefaultOutputTokens <= 0 {
		o.DefaultOutputTokens = 16
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &server{o: o}
}

type server struct {
	o   Options
	seq atomic.Int64
}

// api is the family a path belongs to; it decides error body shapes.
type api int

const (
	apiChat api = iota
	apiCompletions
	apiResponses
	apiCompact
	apiAnthropic
)

func route(path string) (api, bool) {
	switch path {
	case "/v1/chat/completions":
		return apiChat, true
	case "/v1/completions":
		return apiCompletions, true
	case "/v1/responses":
		return apiResponses, true
	case "/v1/responses/compact":
		return apiCompact, true
	case "/v1/messages", "/anthropic/v1/messages":
		return apiAnthropic, true
	}
	return 0, false
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Served{Path: r.URL.Path, Completed: true}
	defer func() {
		if s.o.OnServed != nil {
			s.o.OnServed(rec)
		}
	}()
	kind, ok := route(r.URL.Path)
	if !ok {
		rec.Status = writeError(w, apiChat, http.StatusNotFound, "unknown path "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		rec.Status = writeError(w, kind, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// The client (a proxy that gave up on the request) went away before the body ended.
		rec.Status, rec.Completed = StatusClientClosed, false
		writeError(w, kind, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	if !gjson.ValidBytes(body) {
		rec.Status = writeError(w, kind, http.StatusBadRequest, "request body is not valid JSON")
		return
	}
	c, err := parseControls(r.Header)
	if err != nil {
		rec.Status = writeError(w, kind, http.StatusBadRequest, err.Error())
		return
	}
	if c.status != 0 {
		rec.Status = writeError(w, kind, c.status, "mock error requested by x-mock-status")
		return
	}
	g := s.generation(body, c)
	rec.Stream = gjson.GetBytes(body, "stream").Bool()
	rec.InputTokens, rec.OutputTokens, rec.CachedTokens = g.input, g.output, g.cached
	rec.Status = http.StatusOK
	if !rec.Stream {
		writeJSON(w, http.StatusOK, s.complete(kind, g))
		return
	}
	st := newSSE(w, r.Context(), c)
	sent := s.stream(kind, g, st)
	rec.OutputTokens = sent
	rec.Completed = st.err == nil && sent == g.output
	if st.aborted {
		// Reset the connection mid-stream, as a crashed backend would.
		panic(http.ErrAbortHandler)
	}
}

// generation is everything one answer needs, decided once from the body and control headers.
type generation struct {
	id           string
	model        string
	created      int64
	input        int64
	output       int64
	cached       int64
	cacheWrite   int64
	ceiling      int64 // the request's output ceiling, 0 for none
	capped       bool  // the ceiling cut the answer short
	perChunk     int64
	includeUsage bool
}

func (s *server) generation(body []byte, c controls) generation {
	g := generation{
		id:       strconv.FormatInt(s.seq.Add(1), 10),
		model:    "mock-model",
		created:  s.o.Now().Unix(),
		input:    InputTokens(body),
		output:   s.o.DefaultOutputTokens,
		perChunk: c.perChunk,
	}
	if m := gjson.GetBytes(body, "model"); m.Type == gjson.String && m.Str != "" {
		g.model = m.Str
	}
	if c.hasOutput {
		g.output = c.output
	}
	g.ceiling = OutputCeiling(body)
	if g.ceiling > 0 && g.output > g.ceiling {
		g.output, g.capped = g.ceiling, true
	}
	g.cached = min(c.cached, g.input)
	g.cacheWrite = min(c.cacheWrite, g.input-g.cached)
	g.includeUsage = gjson.GetBytes(body, "stream_options.include_usage").Bool()
	return g
}

func (s *server) complete(kind api, g generation) any {
	switch kind {
	case apiChat:
		return chatCompletion(g)
	case apiCompletions:
		return textCompletion(g)
	case apiResponses:
		return response(g, "completed")
	case apiCompact:
		return compaction(g)
	default:
		return anthropicMessage(g)
	}
}

// stream writes the streamed answer and returns how many output tokens were sent.
func (s *server) stream(kind api, g generation, st *sse) int64 {
	switch kind {
	case apiChat:
		return streamChat(g, st)
	case apiCompletions:
		return streamCompletions(g, st)
	case apiResponses, apiCompact:
		return streamResponses(g, st)
	default:
		return streamAnthropic(g, st)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "mockllm: encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
