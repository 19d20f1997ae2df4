package mockllm_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

func post(t *testing.T, ctx context.Context, url, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return res
}

// dataLines returns the payload of every "data:" line of an SSE body.
func dataLines(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, v)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func TestChatStreamChunksCarryNullUsageAndEndWithDone(t *testing.T) {
	srv, _ := startMock(t)
	res := post(t, context.Background(), srv.URL+"/v1/chat/completions",
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-mock-output-tokens": "3"})
	defer res.Body.Close()
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	lines := dataLines(t, res.Body)
	require.Equal(t, "[DONE]", lines[len(lines)-1])
	for _, l := range lines[:len(lines)-1] {
		u := gjson.Get(l, "usage")
		require.True(t, u.Exists() && u.Type == gjson.Null, "chunk %s", l)
		require.Equal(t, "chat.completion.chunk", gjson.Get(l, "object").Str)
	}
	// role chunk + 3 content chunks + finish chunk
	require.Len(t, lines, 1+3+1+1)
}

func TestTokensPerChunkGroupsDeltas(t *testing.T) {
	srv, _ := startMock(t)
	res := post(t, context.Background(), srv.URL+"/v1/messages",
		`{"model":"m","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-mock-output-tokens": "7", "x-mock-tokens-per-chunk": "3"})
	defer res.Body.Close()
	var deltas []string
	for _, l := range dataLines(t, res.Body) {
		if gjson.Get(l, "type").Str == "content_block_delta" {
			deltas = append(deltas, gjson.Get(l, "delta.text").Str)
		}
	}
	require.Equal(t, []string{"tok tok tok", " tok tok tok", " tok"}, deltas)
}

func TestStreamFlushesEachEventBeforeTheAnswerEnds(t *testing.T) {
	srv, tally := startMock(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := post(t, ctx, srv.URL+"/v1/chat/completions",
		`{"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-mock-output-tokens": "1000", "x-mock-chunk-delay-ms": "50"})
	defer res.Body.Close()
	first, err := bufio.NewReader(res.Body).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "data: {"), first)
	// The handler is still streaming (it needs 1000 paced chunks), so nothing was recorded yet.
	require.Zero(t, tally.Count())
}

func TestClientCancellationStopsTheStream(t *testing.T) {
	srv, tally := startMock(t)
	ctx, cancel := context.WithCancel(context.Background())
	res := post(t, ctx, srv.URL+"/v1/responses",
		`{"stream":true,"input":"hi"}`,
		map[string]string{"x-mock-output-tokens": "100000", "x-mock-chunk-delay-ms": "5"})
	_, err := bufio.NewReader(res.Body).ReadString('\n')
	require.NoError(t, err)
	cancel()
	_ = res.Body.Close()

	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	require.NoError(t, tally.WaitCount(wait, 1))
	got := tally.All()[0]
	require.False(t, got.Completed)
	require.Less(t, got.OutputTokens, int64(100000))
}

func TestAbortAfterResetsTheConnectionMidStream(t *testing.T) {
	srv, tally := startMock(t)
	res := post(t, context.Background(), srv.URL+"/v1/chat/completions",
		`{"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-mock-output-tokens": "10", "x-mock-abort-after": "2"})
	defer res.Body.Close()
	_, err := io.ReadAll(res.Body)
	require.Error(t, err, "a reset stream must not look like a clean end")

	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	require.NoError(t, tally.WaitCount(wait, 1))
	got := tally.All()[0]
	require.False(t, got.Completed)
	require.Equal(t, int64(2), got.OutputTokens)
}

func TestUnknownPathAndBadInputAnswerJSONErrors(t *testing.T) {
	srv, tally := startMock(t)
	cases := []struct {
		name, path, body string
		headers          map[string]string
		status           int
		errPath          string
	}{
		{"unknown path", "/v2/whatever", `{}`, nil, 404, "error.message"},
		{"invalid json", "/v1/chat/completions", `{`, nil, 400, "error.message"},
		{"bad control header", "/v1/chat/completions", `{}`, map[string]string{"x-mock-output-tokens": "lots"}, 400, "error.message"},
		{"anthropic error shape", "/v1/messages", `{}`, map[string]string{"x-mock-status": "401"}, 401, "error.type"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := post(t, context.Background(), srv.URL+tc.path, tc.body, tc.headers)
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.Equal(t, tc.status, res.StatusCode)
			require.Equal(t, "application/json", res.Header.Get("Content-Type"))
			require.True(t, gjson.GetBytes(b, tc.errPath).Exists(), string(b))
			waitCount(t, tally, i+1)
			require.Equal(t, tc.status, tally.All()[i].Status)
		})
	}
}

func TestDefaultOutputIsCappedByCeiling(t *testing.T) {
	tally := &mockllm.Tally{}
	h := mockllm.New(mockllm.Options{OnServed: tally.Observe})
	for _, tc := range []struct {
		body string
		want int64
	}{
		{`{"messages":[]}`, 16},
		{`{"messages":[],"max_completion_tokens":5}`, 5},
		{`{"input":"x","max_output_tokens":"3"}`, 3},
	} {
		req, err := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(tc.body))
		require.NoError(t, err)
		rec := &discard{header: http.Header{}}
		h.ServeHTTP(rec, req)
		all := tally.All()
		require.Equal(t, tc.want, all[len(all)-1].OutputTokens, tc.body)
	}
}

type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
