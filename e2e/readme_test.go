package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"encoding/json"
	"io"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := wasmbuild.Root()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	return string(b)
}

// walkThrough is the README's first shell block that talks to the gateway: a loop of one curl
// command.
type walkThrough struct {
	times   int
	path    string
	headers [][2]string
	body    string
}

func readWalkThrough(t *testing.T) walkThrough {
	t.Helper()
	readme := repoFile(t, "README.md")
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme, -1)
	block := ""
	for _, b := range blocks {
		if strings.Contains(b[1], "curl -s localhost:10000") {
			block = b[1]
			break
		}
	}
	require.NotEmpty(t, block, "the README's walk-through")
	loop := regexp.MustCompile(`for i in ([0-9 ]+); do`).FindStringSubmatch(block)
	require.NotNil(t, loop, "the walk-through repeats one request:\n%s", block)
	var w walkThrough
	w.times = len(strings.Fields(loop[1]))
	cmd := strings.ReplaceAll(block[strings.Index(block, "curl "):strings.Index(block, "done")], "\\\n", " ")
	u := regexp.MustCompile(`curl -s localhost:10000(/\S+)`).FindStringSubmatch(cmd)
	require.NotNil(t, u, cmd)
	w.path = u[1]
	for _, h := range regexp.MustCompile(`-H '([^']*)'`).FindAllStringSubmatch(cmd, -1) {
		name, value, ok := strings.Cut(h[1], ": ")
		require.True(t, ok, h[1])
		w.headers = append(w.headers, [2]string{name, value})
	}
	d := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(cmd)
	require.NotNil(t, d, cmd)
	w.body = d[1]
	return w
}

// The README's curl walk-through, replayed as written against the gateway `make run` starts
// (the Makefile's default CONFIG, the built-in mock, the real clock): its last request is the
// 429 the text promises, and the ones before it are admitted.
func TestTheReadmeWalkThroughReachesA429(t *testing.T) {
	w := readWalkThrough(t)
	cfg := regexp.MustCompile(`(?m)^CONFIG\s*\?=\s*(\S+)$`).FindStringSubmatch(repoFile(t, "Makefile"))
	require.NotNil(t, cfg, "make run's CONFIG")
	g := startGateway(t, repoFile(t, cfg[1]))
	for i := 1; i <= w.times; i++ {
		req, err := http.NewRequest(http.MethodPost, "http://"+g.Addr()+w.path, strings.NewReader(w.body))
		require.NoError(t, err)
		req.Header.Set("content-type", "application/x-www-form-urlencoded") // what curl -d sends
		for _, h := range w.headers {
			req.Header.Set(h[0], h[1])
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		r := readResp(t, res)
		if i < w.times {
			require.Equal(t, http.StatusOK, r.status, "request %d: %s", i, r.body)
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, r.status, "request %d of the walk-through is refused", i)
		require.NotEmpty(t, r.header.Get("retry-after"))
		require.Equal(t, "api_key", r.details["token_dimension"])
		require.Equal(t, "minute", r.details["token_budget"])
	}
}

// Every control header the mock parses is documented in the README's table.
func TestTheReadmeDocumentsEveryMockControlHeader(t *testing.T) {
	src := repoFile(t, filepath.Join("examples", "mockllm", "controls.go"))
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`"(x-mock-[a-z-]+)"`).FindAllStringSubmatch(src, -1) {
		names[m[1]] = true
	}
	require.GreaterOrEqual(t, len(names), 5, "the mock's headers were found")
	readme := repoFile(t, "README.md")
	var missing []string
	for n := range names {
		if !strings.Contains(readme, "| `"+n+": ") {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing)
}

func TestARejectedReloadSaysWhyInItsBody(t *testing.T) {
	g := startGateway(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100}},"budget_division":{"replicas":1}}}`)
	res, err := http.Post("http://"+g.AdminAddr()+"/reload", "application/json",
		strings.NewReader(`{"rate_limiting":{"storage":"etcd","limits":{"per_api_key":{"tokens_per_minut":5}}}}`))
	require.NoError(t, err)
	r := readResp(t, res)
	require.Equal(t, http.StatusBadRequest, r.status)
	body := string(r.body)
	require.Contains(t, body, "reload rejected")
	require.Contains(t, body, `rate_limiting.limits.per_api_key: unknown field "tokens_per_minut"`, "the parse error, with its path")
	require.Contains(t, body, `rate_limiting.storage: must be "memory" or "redis"`, "and the validation error beside it")
	require.Equal(t, 429, post(t, g, "/v1/chat/completions", "sk-r", chat(1000)).status, "the running config stays")
}

// readResp reads a response the way post does, with a refusal's details.
func readResp(t *testing.T, res *http.Response) resp {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := resp{status: res.StatusCode, header: res.Header, body: b}
	if res.StatusCode == http.StatusTooManyRequests {
		var m map[string]map[string]any
		require.NoError(t, json.Unmarshal(b, &m), string(b))
		out.details, _ = m["error"]["details"].(map[string]any)
	}
	return out
}
