package exchange

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// The rule tests drive one Exchange with events and compare the effects it
// answers with, rendered one line each (see show). A store is not needed:
// each test answers the Admit effect with the outcome its rule is about.

// keyBudget is a per-key token budget large enough never to refuse.
const keyBudget = `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":1000000,"tokens_per_day":10000000}}}}`

// withConfig is keyBudget with more top-level members (`"a":1,"b":2`).
func withConfig(members string) string {
	return strings.TrimSuffix(keyBudget, "}") + "," + members + "}"
}

// now is the tests' clock: 2026-01-01T00:00:00Z.
const now = int64(1767225600) * 1e9

type rig struct {
	t *testing.T
	x Exchange
	// admitted is the plan of the last Admit effect drained.
	admitted limit.Plan
}

func newRig(t *testing.T, cfg string) *rig {
	t.Helper()
	rt, _, err := config.Load([]byte(cfg))
	require.NoError(t, err, cfg)
	r := &rig{t: t}
	anyClamp := false
	for _, m := range rt.Models {
		anyClamp = anyClamp || m.Clamp
	}
	r.x.Start(recording(Env{Config: rt, Keys: identity.NewKeyCache(16), Now: func() int64 { return now }, AnyClamp: anyClamp}))
	return r
}

// chat is a chat-completions request with key sk-a and body.
func chat(body string) *request {
	return &request{headers: [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"},
		{"authorization", "Bearer sk-a"}, {"content-length", strconv.Itoa(len(body))}},
		props: map[string]string{"source/address": "10.0.0.7:5000"}, body: []byte(body)}
}

// send runs the request's headers and whole body.
func (r *rig) send(req *request) Action {
	a := r.x.RequestHeaders(req, false)
	req.endHeaders()
	if a != Continue {
		return a
	}
	a = r.x.RequestBody(req, len(req.body), true)
	req.endCallback()
	return a
}

// admitAll answers the pending Admit (which must be the last effect) with
// an admission of the whole plan.
func (r *rig) admitAll(async bool) {
	r.t.Helper()
	p := r.plan()
	r.answer(limit.Outcome{Result: limit.ResultAdmitted, Hold: limit.Hold{Backend: limit.BackendLocal,
		Entries: p.HoldEntries(), Overage: p.Overage, Spend: p.Spend}}, async)
}

// answer answers the pending Admit with o: async, as the event a fleet
// store's callout makes; otherwise as the exchange consumes an answer a
// store returns from Admit (the recorder's Admit returns none, so that
// each test can look at the plan first; TestAStoreThatAnswersAtOnceIsHeardAfterAdmitReturns
// pins the return itself).
func (r *rig) answer(o limit.Outcome, async bool) {
	if async {
		r.x.Admitted(&o)
		return
	}
	r.x.answered(&o, false)
}

// plan is the plan of the last Admit effect, pending or drained.
func (r *rig) plan() limit.Plan {
	r.t.Helper()
	if fx := r.x.Pending(); len(fx) > 0 && fx[len(fx)-1].Kind == Admit {
		return *fx[len(fx)-1].Plan
	}
	require.NotNil(r.t, r.admitted.Tokens, "an admission was asked for")
	return r.admitted
}

// respond runs response headers and the body in the given chunks.
func (r *rig) respond(headers [][2]string, chunks ...string) {
	resp := &response{headers: headers}
	r.x.ResponseHeaders(resp, len(chunks) == 0, nil)
	for i, c := range chunks {
		resp.chunk = []byte(c)
		r.x.ResponseBody(resp, len(c), i == len(chunks)-1)
	}
}

func jsonOK() [][2]string {
	return [][2]string{{":status", "200"}, {"content-type", "application/json"}}
}

func sseOK() [][2]string {
	return [][2]string{{":status", "200"}, {"content-type", "text/event-stream"}}
}

// drain renders and empties the pending effects, keeping only the kinds
// given (all when none).
func (r *rig) drain(kinds ...EffectKind) []string {
	var out []string
	for _, e := range r.x.Drain() {
		if e.Kind == Admit {
			r.admitted = *e.Plan
		}
		if len(kinds) > 0 && !hasKind(kinds, e.Kind) {
			continue
		}
		out = append(out, show(e))
	}
	return out
}

func hasKind(kinds []EffectKind, k EffectKind) bool {
	for _, want := range kinds {
		if want == k {
			return true
		}
	}
	return false
}

// show renders an effect as one line: its kind and what it carries.
func show(e Effect) string {
	s := e.Kind.String()
	switch e.Kind {
	case RemoveRequestHeader:
		s += " " + e.Name
	case SetResponseHeaders:
		for _, h := range e.Headers {
			s += " " + h.Name + "=" + h.Value
		}
	case SetRequestBody, SetResponseBody, RecordDecision:
		s += " " + string(e.Body)
	case LocalReply:
		s += " " + strconv.Itoa(e.Size) + " " + errorCode(e.Body)
	case Admit:
		s += " tokens=" + strconv.FormatInt(planTokens(*e.Plan), 10)
		if e.Retry {
			s += " retry"
		}
	case Settle:
		s += " " + strconv.FormatInt(e.Tokens, 10)
	case CountRequest, CountTokens:
		s += " " + e.Name
		if e.Kind == CountTokens {
			s += " " + e.Entry.Dimension.String() + " " + strconv.FormatInt(e.Tokens, 10)
		}
	case CountSkipped, CountFailOpen:
		s += " " + e.Name
	case CountRefusal:
		s += " " + e.Value
	case CountShadowRefusal:
		s += " " + e.Value + " " + e.Name
	case CountSpendRefusal:
		if e.Exceeded.Balance {
			s += " balance"
		} else {
			s += " " + e.Exceeded.Slot.Scope().String() + " " + e.Exceeded.Slot.Period().String()
		}
	case CountSpendUSD:
		s += " " + strconv.FormatInt(e.Tokens, 10)
	}
	return s
}

// planTokens is the token amount a plan reserves (-1 with no token op).
func planTokens(p limit.Plan) int64 {
	for _, op := range p.Tokens {
		return op.Amount
	}
	return -1
}

// errorCode is the "code" of a local reply's JSON error body.
func errorCode(body []byte) string {
	const key = `"code":"`
	i := strings.Index(string(body), key)
	if i < 0 {
		return ""
	}
	rest := string(body[i+len(key):])
	return rest[:strings.IndexByte(rest, '"')]
}
