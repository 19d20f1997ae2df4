package e2e

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/config"
)

// readmeSection is the README's text from a heading to the next heading of any level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme := repoFile(t, "README.md")
	i := strings.Index(readme, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, heading)
	var out []string
	fenced := false
	for _, line := range strings.Split(readme[i+len(heading)+2:], "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			break // the next heading (a "#" inside a shell block is a comment)
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// The README's spend walk-through, replayed as written: make run on its CONFIG, the loop of
// curls (200 with the remaining spend it names before each admitted request, then the 429), then the wait it
// says before reading the metrics, after which the spend counter is there.
func TestTheReadmesSpendWalkThroughWaitsForTheTickBeforeReadingMetrics(t *testing.T) {
	sec := readmeSection(t, "## USD spend limits")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(sec)
	require.NotNil(t, block)
	b := block[1]
	cfg := regexp.MustCompile(`make run CONFIG=(\S+)`).FindStringSubmatch(b)
	require.NotNil(t, cfg)
	loop := regexp.MustCompile(`for i in ([0-9 ]+); do`).FindStringSubmatch(b)
	require.NotNil(t, loop)
	cmd := strings.ReplaceAll(b[strings.Index(b, "curl "):strings.Index(b, "done")], "\\\n", " ")
	u := regexp.MustCompile(`curl -s localhost:10000(/\S+)`).FindStringSubmatch(cmd)
	require.NotNil(t, u)
	var headers [][2]string
	for _, h := range regexp.MustCompile(`-H '([^']*)'`).FindAllStringSubmatch(cmd, -1) {
		name, value, ok := strings.Cut(h[1], ": ")
		require.True(t, ok)
		headers = append(headers, [2]string{name, value})
	}
	body := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(cmd)
	require.NotNil(t, body)
	listed := regexp.MustCompile(`x-spend-day-remaining-usd ([0-9.]+(?:, [0-9.]+)*)`).FindStringSubmatch(b)
	require.NotNil(t, listed, "the walk-through names the remaining spend before each request")
	remaining := append([]string{""}, strings.Split(listed[1], ", ")...) // remaining[i] before request i

	g := startGateway(t, repoFile(t, cfg[1]))
	n := len(strings.Fields(loop[1]))
	require.Len(t, remaining, n, "a remaining figure for each admitted request, then the refusal")
	for i := 1; i <= n; i++ {
		req, err := http.NewRequest(http.MethodPost, "http://"+g.Addr()+u[1], strings.NewReader(body[1]))
		require.NoError(t, err)
		req.Header.Set("content-type", "application/x-www-form-urlencoded")
		for _, h := range headers {
			req.Header.Set(h[0], h[1])
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		r := readResp(t, res)
		if i < n {
			require.Equal(t, http.StatusOK, r.status, "request %d: %s", i, r.body)
			require.Equal(t, remaining[i], r.header.Get("x-spend-day-remaining-usd"), "request %d", i)
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, r.status)
		require.Contains(t, string(r.body), `"code":"spend_limit_exceeded"`)
		require.Equal(t, "false", r.header.Get("x-should-retry"))
	}

	// The wait the walk-through says, then the read.
	after := b[strings.Index(b, "done"):]
	wait := regexp.MustCompile(`(?m)^sleep ([0-9.]+)`).FindStringSubmatch(after)
	require.NotNil(t, wait, "the walk-through waits for the filter's tick before reading the metrics")
	require.Less(t, strings.Index(after, wait[0]), strings.Index(after, "stats/prometheus"), "before, not after")
	s, err := strconv.ParseFloat(wait[1], 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, s, 2*0.5, "at least two of the filter's 500 ms ticks")
	time.Sleep(time.Duration(s * float64(time.Second)))
	res, err := http.Get("http://" + g.AdminAddr() + "/stats/prometheus")
	require.NoError(t, err)
	defer res.Body.Close()
	text, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^rate_limit_spend_usd_total(\{[^}]*\})? ([0-9]+)$`).FindAllStringSubmatch(string(text), -1)
	require.NotEmpty(t, m, "the spend counter is there after the wait")
	var total int64
	for _, x := range m {
		v, err := strconv.ParseInt(x[2], 10, 64)
		require.NoError(t, err)
		total += v
	}
	require.Positive(t, total, "and counts the three answers' spend")
}

// What the README says of the headers and the body limit is what the filter does.
func TestTheReadmeNamesTheDefaultHeaderFamilyItsResetFormatAndTheBodyLimit(t *testing.T) {
	readme := repoFile(t, "README.md")
	require.Contains(t, readme, "`x-ratelimit-tokens-{limit,remaining,reset}`")
	require.Contains(t, readme, "`x-ratelimit-tokens-day-*`")
	require.Contains(t, readme, "a Unix time in seconds")
	require.Equal(t, int64(1<<20), int64(config.DefaultMaxBodyBytes))
	require.Contains(t, readme, "`token_budget.max_body_bytes`, **1 MiB** by default")

	g := startGateway(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":20000,"tokens_per_day":100000}},"budget_division":{"replicas":1}}}`)
	before := time.Now().Unix()
	r := post(t, g, "/v1/chat/completions", "sk-h", chat(100))
	require.Equal(t, http.StatusOK, r.status)
	for _, family := range []string{"x-ratelimit-tokens-", "x-ratelimit-tokens-day-"} {
		for _, part := range []string{"limit", "remaining", "reset"} {
			require.NotEmpty(t, r.header.Get(family+part), family+part)
		}
		reset, err := strconv.ParseInt(r.header.Get(family+"reset"), 10, 64)
		require.NoError(t, err, "the reset is an integer")
		require.GreaterOrEqual(t, reset, before, "a Unix time, not a duration")
		require.LessOrEqual(t, reset, before+86400+5)
	}
}

// make test needs PostgreSQL as well as Redis, and the README says how .ci/run installs both.
func TestTheReadmeSaysMakeTestNeedsRedisAndPostgreSQLAndHowCIInstallsThem(t *testing.T) {
	sec := readmeSection(t, "## Two commands")
	require.Contains(t, sec, "**Redis and PostgreSQL**")
	ci := repoFile(t, ".ci/run")
	pkgs := regexp.MustCompile(`need_apt\+=\(([a-z-]+)\)`).FindAllStringSubmatch(ci, -1)
	require.NotEmpty(t, pkgs)
	for _, p := range pkgs {
		if p[1] == "make" || p[1] == "curl" {
			continue
		}
		require.Contains(t, sec, p[1], "the README names the package .ci/run installs")
	}
	require.Contains(t, ci, ". .ci/postgres.sh")
	require.Contains(t, sec, "`.ci/postgres.sh`")
	require.Contains(t, sec, "127.0.0.1:5432")
	require.Contains(t, sec, "make test: ", "and shows the closing line")
}
