package e2e

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

// The attacks a tenant could make on its own key, replayed through real HTTP
// against the mock backend, whose own records say how many tokens it served.
// Every key must be held to its budget plus refill plus what one request
// can take once admitted: its hold, or, for a backend that generates past
// the hold, that one answer (the overage is then a debt that refuses every
// later request until refill repays it).

const attackBudget = 20000

const attackLimits = `{"per_api_key":{"tokens_per_minute":20000}}`

const attackModels = `"models":{"claude-4-vision":{"max_tokens_per_request":4096,"on_max_tokens":"clamp"}}`

// attackBodyBytes is the attacks' max_body_bytes: a body over it cannot be
// estimated.
const attackBodyBytes = `"token_budget":{"max_body_bytes":65536}`

func localAttackConfig() string {
	return `{"rate_limiting":{"limits":` + attackLimits + `,"budget_division":{"replicas":1}},` + attackModels + `,` + attackBodyBytes + `}`
}

func fleetAttackConfig() string {
	return `{"rate_limiting":{"storage":"redis","limits":` + attackLimits + `,"redis":{"cluster":"sharedstore","authority":"sharedstore","token":"` +
		fleetToken + `","timeout_ms":2000,"fallback_to_memory":false}},` + attackModels + `,` + attackBodyBytes + `}`
}

// attack is one way of trying to get tokens for free. run makes its
// requests through gw(i) (two gateways in fleet mode) with key.
type attack struct {
	name string
	// overage: the attack's requests make the backend generate past their
	// hold, so one admitted answer may exceed the hold.
	overage bool
	run     func(t *testing.T, gw func(i int) *gateway.Gateway, key string)
}

var deepNesting = strings.Repeat("[", 20000) + strings.Repeat("]", 20000)

var attacks = []attack{
	{name: "streams cut by the client after reading", run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		for i := 0; i < 20; i++ {
			// 70 lines are 35 of the 40 events: most of the answer is read.
			cutAfterLines(t, gw(i), key, chatReq("tell me a long story", 4096, true), 70,
				"x-mock-output-tokens", "4000", "x-mock-tokens-per-chunk", "100", "x-mock-chunk-delay-ms", "3")
		}
	}},
	{name: "streams reset by the upstream", run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		for i := 0; i < 20; i++ {
			send(t, gw(i), key, chatReq("tell me a long story", 4096, true), nil,
				"x-mock-output-tokens", "4000", "x-mock-tokens-per-chunk", "100", "x-mock-abort-after", "3000")
		}
	}},
	{name: "no ceiling and a backend that generates 100,000 tokens", overage: true, run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		for i := 0; i < 4; i++ {
			send(t, gw(i), key, `{"model":"gpt-4o","messages":[{"role":"user","content":"go on forever"}]}`, nil,
				"x-mock-output-tokens", "100000")
		}
	}},
	{name: "bodies the filter cannot parse but the backend serves", overage: true, run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		for i := 0; i < 8; i++ {
			send(t, gw(i), key, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"junk":`+deepNesting+`}`, nil,
				"x-mock-output-tokens", "5000")
		}
	}},
	{name: "a repeated key header on a drained key", run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		for send(t, gw(0), key, chatReq("hi", 4000, false), nil, "x-mock-output-tokens", "4000") == 200 {
		}
		for i, h := range []http.Header{
			{"Authorization": {"Bearer " + key, "Bearer " + key}},
			{"Authorization": {"Bearer " + key + ",other"}},
			{"X-Api-Key": {key, key}},
		} {
			require.Equal(t, 400, send(t, gw(i), "", chatReq("hi", 4000, false), h, "x-mock-output-tokens", "4000"))
		}
	}},
	{name: "clamp with no stated ceiling", run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		for i := 0; i < 8; i++ {
			send(t, gw(i), key, `{"model":"claude-4-vision","messages":[{"role":"user","content":"describe"}]}`, nil,
				"x-mock-output-tokens", "10000")
		}
	}},
	{name: "repeated members", run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		for i, body := range []string{
			`{"model":"gpt-4o","model":"claude-4-vision","messages":[{"role":"user","content":"hi"}],"max_tokens":10}`,
			`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":10,"max_tokens":0}`,
		} {
			require.Equal(t, 400, send(t, gw(i), key, body, nil, "x-mock-output-tokens", "10000"))
		}
	}},
	{name: "a burst of bodies too large to estimate", run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		body := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("go on ", 11000) + `"}],"max_tokens":3000}`
		var wg sync.WaitGroup
		for i := 0; i < 25; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				send(t, gw(i), key, body, nil, "x-mock-output-tokens", "3000")
			}()
		}
		wg.Wait()
	}},
	{name: "an answer larger than any buffer", overage: true, run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		send(t, gw(0), key, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, nil, "x-mock-output-tokens", "2300000")
	}},
	{name: "max_tokens 0 read as no ceiling", overage: true, run: func(t *testing.T, gw func(int) *gateway.Gateway, key string) {
		for i := 0; i < 6; i++ {
			send(t, gw(i), key, chatReq("hi", 0, false), nil, "x-mock-output-tokens", "10000")
		}
	}},
}

// send posts body with key (as a Bearer) and extra headers (repeated values
// are sent as repeated header lines), reads the whole answer and returns
// its status.
func send(t *testing.T, g *gateway.Gateway, key, body string, extra http.Header, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("content-type", "application/json")
	if key != "" {
		req.Header.Set("authorization", "Bearer "+key)
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	for i := 1; i < len(hdr); i += 2 {
		req.Header.Set(hdr[i-1], hdr[i])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body) // an upstream reset ends the body early
	return res.StatusCode
}

// cutAfterLines opens a stream, reads n lines of it and hangs up.
func cutAfterLines(t *testing.T, g *gateway.Gateway, key, body string, n int, hdr ...string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("authorization", "Bearer "+key)
	for i := 1; i < len(hdr); i += 2 {
		req.Header.Set(hdr[i-1], hdr[i])
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	if res.StatusCode == 200 {
		br := bufio.NewReader(res.Body)
		for i := 0; i < n; i++ {
			if _, err := br.ReadString('\n'); err != nil {
				break
			}
		}
	}
	_ = res.Body.Close() // the connection goes with it: a client reset
}

// quiet waits until the mock has recorded every request it is serving:
// its count stops changing (a cut stream is recorded once the mock notices).
func (l *servedLog) quiet(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	n, since := l.count(), time.Now()
	for time.Since(since) < 300*time.Millisecond {
		require.True(t, time.Now().Before(deadline), "the mock never went quiet")
		time.Sleep(10 * time.Millisecond)
		if m := l.count(); m != n {
			n, since = m, time.Now()
		}
	}
	return n
}

// tokensFrom sums what the mock served from record from on, and the
// largest single answer.
func (l *servedLog) tokensFrom(from int) (total, largest int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.all[from:] {
		if s.Status != 200 {
			continue
		}
		n := s.InputTokens + s.OutputTokens
		total += n
		largest = max(largest, n)
	}
	return total, largest
}

// charged is what the API-key dimension has been charged so far on the
// gateways: reserved plus overages minus refunds. The attacks run one key
// at a time, so its growth over one attack is that key's charge.
func charged(t *testing.T, gws []*gateway.Gateway) int64 {
	var n int64
	for _, g := range gws {
		series := func(outcome string) int64 {
			return promValue(t, g, `rate_limit_token_budget_tokens_total{dimension="api_key",outcome="`+outcome+`"}`)
		}
		n += series("reserved") + series("charged") - series("refunded")
	}
	return n
}

// runAttacks replays every attack on its own key and checks what the
// backend served against the key's budget. overdrawn is how many requests
// may each be served a whole overage before the first overdraw is charged:
// one where settlement is in the same VM; two on the fleet store, where the
// client can read the answer's last byte and send its next request before
// the settlement callout of the one before has reached sharedstore.
func runAttacks(t *testing.T, served *servedLog, gw func(int) *gateway.Gateway, gws []*gateway.Gateway, refillPerSec float64, overdrawn int64) {
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			key := "sk-attacker-" + strconv.Itoa(i)
			from := served.quiet(t)
			time.Sleep(600 * time.Millisecond) // metrics reach the host on the filter's 500 ms tick
			before := charged(t, gws)
			start := time.Now()
			a.run(t, gw, key)
			served.quiet(t)
			time.Sleep(600 * time.Millisecond)
			paid := charged(t, gws) - before
			total, largest := served.tokensFrom(from)
			refill := int64(time.Since(start).Seconds()*refillPerSec) + 1
			allowance := int64(attackBudget) + refill + 4096 + 64 // one hold: a ceiling plus a short input
			if a.overage {
				allowance = attackBudget + refill + overdrawn*largest
			}
			t.Logf("served %d tokens, charged %d, through a %d budget (allowance %d)", total, paid, attackBudget, allowance)
			require.LessOrEqual(t, total, allowance, "the key was held to its budget")
			if total >= attackBudget {
				require.NotEqual(t, 200, send(t, gw(0), key, chatReq("one more", 4000, false), nil, "x-mock-output-tokens", "4000"),
					"a key that was served its budget is spent")
			}
		})
	}
}

func TestE2EAttacksOnOneKeyAreHeldToItsBudgetLocally(t *testing.T) {
	served := &servedLog{}
	clock := &frozenClock{t: time.Unix(1_800_000_000, 0)}
	g := startGateway(t, localAttackConfig(), withClock(clock), func(c *gateway.Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add}) })
	runAttacks(t, served, func(int) *gateway.Gateway { return g }, []*gateway.Gateway{g}, 0, 1)
	require.Empty(t, g.Host().Traps())
}

func TestE2EAttacksOnOneKeyAreHeldToItsFleetBudget(t *testing.T) {
	served := &servedLog{}
	addr := redistest.Start(t)
	r1, r2 := startReplica(t, addr), startReplica(t, addr)
	onServed := func(c *gateway.Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add}) }
	a := startGateway(t, fleetAttackConfig(), withClusters(map[string]string{"sharedstore": r1.URL()}), onServed)
	b := startGateway(t, fleetAttackConfig(), withClusters(map[string]string{"sharedstore": r2.URL()}), onServed)
	gw := func(i int) *gateway.Gateway {
		if i%2 == 0 {
			return a
		}
		return b
	}
	// Redis refills on its own clock: 20,000 a minute.
	runAttacks(t, served, gw, []*gateway.Gateway{a, b}, attackBudget/60.0, 2)
	require.Empty(t, a.Host().Traps())
	require.Empty(t, b.Host().Traps())
}
