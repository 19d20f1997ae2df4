package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

func TestNonStreamedResponsePassesThroughFilterWithItsHeaders(t *testing.T) {
	tally := &mockllm.Tally{}
	g := startGateway(t, func(c *Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: tally.Observe}) })
	var raw *http.Response
	c := openai.NewClient(option.WithBaseURL("http://"+g.Addr()+"/v1/"), option.WithAPIKey("sk-x"),
		option.WithMaxRetries(0), option.WithHeader("x-mock-output-tokens", "5"))
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("three words here")},
	}, option.WithResponseInto(&raw))
	require.NoError(t, err)
	require.Equal(t, int64(4+3), res.Usage.PromptTokens)
	require.Equal(t, int64(5), res.Usage.CompletionTokens)
	require.Equal(t, "cfg-1", raw.Header.Get("x-gw-config"), "the filter's response header reaches the client")
	waitServed(t, tally, 1)
	require.Equal(t, 1, tally.Count())
	// on_done runs after the client has its answer, as in Envoy: wait for it.
	require.Eventually(t, func() bool { return metric(g, "gw_streams_completed_total") == 1 }, 20*time.Second, 5*time.Millisecond)
	require.Zero(t, metric(g, "gw_streams_cut_total"))
}

func TestStreamedChunkReachesClientBeforeUpstreamFinishes(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release // the upstream is not done until the client has seen the first event
		_, _ = io.WriteString(w, "data: second\n\n")
	}))
	defer up.Close()
	defer close(release)
	g := startGateway(t, func(c *Config) { c.Upstream = up.URL })

	res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", `{"stream":true}`, nil)
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "data: first\n", line)
	require.Equal(t, "cfg-1", res.Header.Get("x-gw-config"))
	release <- struct{}{}
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	require.Equal(t, "\ndata: second\n\n", string(rest))
}

func TestSDKStreamsThroughGatewayWithUsage(t *testing.T) {
	g := startGateway(t, nil)
	c := openai.NewClient(option.WithBaseURL("http://"+g.Addr()+"/v1/"), option.WithAPIKey("sk-x"),
		option.WithMaxRetries(0), option.WithHeader("x-mock-output-tokens", "9"))
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "gpt-4o",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	require.Equal(t, int64(9), acc.Usage.CompletionTokens)
	require.Equal(t, int64(5), acc.Usage.PromptTokens)
	require.Len(t, strings.Fields(acc.Choices[0].Message.Content), 9)
}

func TestBufferedRequestBodyIsRewrittenAndSentWithExactLength(t *testing.T) {
	type seen struct {
		body   string
		length int64
		te     []string
		ua     string
		host   string
	}
	got := make(chan seen, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{string(b), r.ContentLength, r.TransferEncoding, r.Header.Get("User-Agent"), r.Host}
		_, _ = io.WriteString(w, "ok")
	}))
	defer up.Close()
	g := startGateway(t, func(c *Config) { c.Upstream = up.URL })

	// A chunked client body arriving in several pieces.
	pr, pw := io.Pipe()
	go func() {
		for _, part := range []string{`{"a":`, `1,"b":`, `2}`} {
			_, _ = pw.Write([]byte(part))
		}
		_ = pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, "http://"+g.Addr()+"/v1/x", pr)
	require.NoError(t, err)
	req.Header.Set("x-gw-action", "buffer")
	req.Host = "llm.example"
	req.Header["User-Agent"] = []string{""} // the client sends none
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, "ok", readAll(t, res))
	s := <-got
	require.Equal(t, `buffered:{"a":1,"b":2}`, s.body)
	require.Equal(t, int64(len(s.body)), s.length)
	require.Empty(t, s.te)
	require.Empty(t, s.ua, "the gateway adds no User-Agent of its own")
	require.Equal(t, "llm.example", s.host, ":authority is forwarded as Host")
}

func TestLocalReplyIsSentAndNeverReachesUpstream(t *testing.T) {
	tally := &mockllm.Tally{}
	g := startGateway(t, func(c *Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: tally.Observe}) })
	res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", `{}`,
		map[string]string{"x-gw-action": "local"})
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Equal(t, "refused by gwguest", readAll(t, res))
	require.Zero(t, tally.Count())
}

func TestClientDisconnectMidStreamEndsTheStreamWithoutEndOfStream(t *testing.T) {
	tally := &mockllm.Tally{}
	g := startGateway(t, func(c *Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: tally.Observe}) })
	ctx, cancel := context.WithCancel(context.Background())
	res := do(t, ctx, http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions",
		`{"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-mock-output-tokens": "100000", "x-mock-chunk-delay-ms": "5"})
	_, err := bufio.NewReader(res.Body).ReadString('\n')
	require.NoError(t, err)
	cancel()
	_ = res.Body.Close()

	wait, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	require.NoError(t, tally.WaitCount(wait, 1), "the upstream request is cancelled too")
	require.False(t, tally.All()[0].Completed)
	require.Eventually(t, func() bool { return metric(g, "gw_streams_cut_total") == 1 }, 20*time.Second, 5*time.Millisecond)
	require.Zero(t, metric(g, "gw_streams_completed_total"))
}

func TestUpstreamResetMidStreamResetsClientAndEndsTheStream(t *testing.T) {
	g := startGateway(t, nil)
	res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/messages",
		`{"stream":true,"max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-mock-output-tokens": "10", "x-mock-abort-after": "3"})
	defer res.Body.Close()
	_, err := io.ReadAll(res.Body)
	require.Error(t, err, "a cut upstream must not look like a clean end to the client")
	require.Eventually(t, func() bool { return metric(g, "gw_streams_cut_total") == 1 }, 20*time.Second, 5*time.Millisecond)
}

func TestUnreachableUpstreamAnswers503ThroughTheFilter(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	g := startGateway(t, func(c *Config) { c.Upstream = url })
	res := do(t, context.Background(), http.MethodGet, "http://"+g.Addr()+"/v1/models", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, upstreamConnectError, readAll(t, res))
	require.Equal(t, "cfg-1", res.Header.Get("x-gw-config"), "Envoy's own 503 passes the filter's response path")
}

func TestRequestHeadersGivenToFilterAreEnvoyShaped(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "http://api.example/v1/chat?x=1", strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer k")
	r.Header.Set("Connection", "keep-alive")
	hs := requestHeaders(r)
	require.Equal(t, [2]string{":authority", "api.example"}, hs[0])
	require.Equal(t, [2]string{":path", "/v1/chat?x=1"}, hs[1])
	require.Equal(t, [2]string{":method", "POST"}, hs[2])
	require.Equal(t, [2]string{":scheme", "http"}, hs[3])
	v, ok := hs.Get("authorization")
	require.True(t, ok)
	require.Equal(t, "Bearer k", v)
	_, ok = hs.Get("connection")
	require.False(t, ok, "hop-by-hop headers are not shown to the filter")
	id, ok := hs.Get("x-request-id")
	require.True(t, ok)
	require.Len(t, id, 36)
	for _, kv := range hs {
		require.Equal(t, strings.ToLower(kv[0]), kv[0])
	}
}

func TestHeadersHeldByTheFilterGoUpstreamWhenItResumesAsynchronously(t *testing.T) {
	tally := &mockllm.Tally{}
	g := startGateway(t, func(c *Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: tally.Observe}) })
	res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions",
		`{"messages":[{"role":"user","content":"a b c"}]}`,
		map[string]string{"x-gw-action": "hold-headers", "x-mock-output-tokens": "2"})
	body := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Equal(t, "tok tok", gjsonGet(body, "choices.0.message.content"))
	waitServed(t, tally, 1)
	require.Equal(t, 1, tally.Count())
	require.Equal(t, int64(4+3), tally.All()[0].InputTokens, "the held body reached the upstream whole")
}

func TestResponseBodyHeldByTheFilterIsSentWholeAtItsEnd(t *testing.T) {
	g := startGateway(t, nil)
	res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions",
		`{"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-gw-action": "buffer-response", "x-mock-output-tokens": "4"})
	body := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1+4+1+1, strings.Count(body, "data: "), body)
	require.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"))
	require.Eventually(t, func() bool { return metric(g, "gw_streams_completed_total") == 1 }, 20*time.Second, 5*time.Millisecond)
}

func gjsonGet(body, path string) string { return gjson.Get(body, path).String() }

// TestRepeatedKeyHeadersReachTheFilterAsEnvoyHandsThemOver writes requests byte by byte on a TCP
// connection, so every repeated header line reaches the gateway as the client sent it.
func TestRepeatedKeyHeadersReachTheFilterAsEnvoyHandsThemOver(t *testing.T) {
	g := startGateway(t, nil)
	for _, tc := range []struct {
		rule  string
		lines []string
		want  string
	}{
		{"authorization sent twice is one entry joined with a comma, and the value call sees it whole",
			[]string{"Authorization: Bearer k1", "Authorization: Bearer k1"},
			"value=Bearer k1,Bearer k1 auth=Bearer k1,Bearer k1 api="},
		{"authorization with two different keys, in any spelling of the name",
			[]string{"authorization: Bearer k1", "AUTHORIZATION: Bearer k2"},
			"value=Bearer k1,Bearer k2 auth=Bearer k1,Bearer k2 api="},
		{"x-api-key sent twice stays two entries in order; the value call would see only the first",
			[]string{"x-api-key: k2", "X-Api-Key: k1"},
			"value= auth= api=k2|k1"},
		{"a single key is unchanged",
			[]string{"Authorization: Bearer k1", "x-api-key: k3"},
			"value=Bearer k1 auth=Bearer k1 api=k3"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			conn, err := net.Dial("tcp", g.Addr())
			require.NoError(t, err)
			defer conn.Close()
			req := "GET /v1/models HTTP/1.1\r\nHost: api.example\r\nx-gw-action: keys\r\n" +
				strings.Join(tc.lines, "\r\n") + "\r\nConnection: close\r\n\r\n"
			_, err = conn.Write([]byte(req))
			require.NoError(t, err)
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode)
			require.Equal(t, tc.want, readAll(t, res))
		})
	}
}
