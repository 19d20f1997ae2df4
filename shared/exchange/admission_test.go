package exchange

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
)

const hiBody = `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`

func TestOnlyAMeteredRouteUnderAConfigIsMetered(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   string
		path  string
		phase Phase
	}{
		{"a chat route is metered", keyBudget, "/v1/chat/completions", PhaseBody},
		{"another path passes", keyBudget, "/v1/embeddings", PhasePassThrough},
		{"no config meters nothing", "", "/v1/chat/completions", PhasePassThrough},
	} {
		t.Run(c.name, func(t *testing.T) {
			var x Exchange
			env := recording(Env{Now: func() int64 { return now }})
			if c.cfg != "" {
				env = newRig(t, c.cfg).x.env
			}
			x.Start(env)
			req := chat(hiBody)
			req.headers[1][1] = c.path
			require.Equal(t, Continue, x.RequestHeaders(req, false))
			require.Equal(t, c.phase, x.Phase())
			if c.phase == PhasePassThrough {
				require.Empty(t, x.Drain(), "a request not metered is not touched")
				require.Equal(t, Continue, x.RequestBody(req, len(req.body), true))
				x.ResponseHeaders(&response{headers: jsonOK()}, true, nil)
				x.Log()
				require.Empty(t, x.Drain())
			}
		})
	}
}

// A metered request is planned on its estimate, reserved, and settled on
// the usage the backend reported; the difference is refunded.
func TestAnAdmittedRequestReservesItsEstimateAndSettlesOnReportedUsage(t *testing.T) {
	r := newRig(t, keyBudget)
	require.Equal(t, AfterAdmission, r.send(chat(hiBody)))
	require.Equal(t, []string{"remove_request_header content-length", "admit tokens=108"}, r.drain(),
		"the body may be rewritten, so its length goes")
	require.Equal(t, PhaseAdmitting, r.x.Phase())
	require.Equal(t, Pause, r.x.Admission(), "the request waits for the store")
	r.admitAll(false)
	require.Equal(t, []string{"count_request admitted", "count_tokens reserved api_key 108"}, r.drain())
	require.Equal(t, Continue, r.x.Admission())
	r.respond(jsonOK(), `{"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	require.Equal(t, []string{"count_tokens refunded api_key 93", "settle 15"}, r.drain())
	r.x.Log()
	r.x.Done()
	require.Equal(t, []string{`record_decision {"outcome":"admitted","hold":108,"end":"settled","usage":15,` +
		`"key_hash":"a4a6d307ad00fa67176e1099fdbc4f4a09bb527a7f24718a5030f2f173d11f7f"}`}, r.drain(),
		"the decision is recorded once, at the log, with the key's hash and never the key")
}

func TestIdentityRulesAnswerBeforeAnyBudget(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     string
		headers [][2]string
		want    []string
	}{
		{"two different keys are refused", keyBudget,
			[][2]string{{"authorization", "Bearer sk-a"}, {"x-api-key", "sk-b"}},
			[]string{"count_request invalid", "local_reply 400 conflicting_api_keys"}},
		{"a missing key is refused when keys are required", withConfig(`"identity":{"missing_api_key":"refuse"}`),
			nil, []string{"count_request unauthorized", "local_reply 401 invalid_api_key"}},
		{"an unknown key is refused when only listed keys pass", withConfig(`"identity":{"unknown_api_keys":"refuse"}`),
			[][2]string{{"authorization", "Bearer sk-a"}}, []string{"count_request unauthorized", "local_reply 401 invalid_api_key"}},
		{"a bypass key passes unmetered and is recorded", `{"rate_limiting":{"bypass_keys":["sk-a"],"limits":{"per_api_key":{"tokens_per_minute":10}}}}`,
			[][2]string{{"authorization", "Bearer sk-a"}},
			[]string{"count_request exempt", `record_decision {"outcome":"exempt","key_hash":"a4a6d307ad00fa67176e1099fdbc4f4a09bb527a7f24718a5030f2f173d11f7f"}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.cfg)
			req := chat(hiBody)
			req.headers = append([][2]string{{":path", "/v1/chat/completions"}}, c.headers...)
			a := r.x.RequestHeaders(req, false)
			require.Equal(t, c.want, r.drain())
			if r.x.Phase() == PhaseExempt {
				require.Equal(t, Continue, a)
				require.Equal(t, Continue, r.x.RequestBody(req, len(req.body), true))
				r.x.Log()
				require.Empty(t, r.drain(), "an exempt request is recorded once, and never admitted")
				return
			}
			require.Equal(t, Pause, a)
			require.Equal(t, PhaseReplied, r.x.Phase())
			require.Equal(t, Continue, r.x.RequestBody(req, len(req.body), true), "nothing is read after a reply")
			r.x.ResponseHeaders(&response{headers: jsonOK()}, true, nil)
			require.Empty(t, r.drain(), "the local reply gets no budget headers")
		})
	}
}

// A body the filter cannot estimate is refused by default
// (on_unreadable_body "refuse"): 413 for one over max_body_bytes, naming the
// setting, 400 for one that is not JSON, both in the refusals' JSON shape
// and marked not to be retried. Nothing is admitted.
func TestABodyTheFilterCannotEstimateIsRefusedByDefault(t *testing.T) {
	for _, c := range []struct {
		name, cfg, body string
		status          int
		code, says      string
	}{
		{"too large", withConfig(`"token_budget":{"max_body_bytes":4}`), `{"messages":[]}`, 413, "request_too_large", "token_budget.max_body_bytes (4 bytes)"},
		{"not JSON", keyBudget, `{"model":`, 400, "invalid_json", "not valid JSON"},
		{"nested deeper than any JSON reader takes", keyBudget, strings.Repeat("[", 10001) + strings.Repeat("]", 10001), 400, "invalid_json", "not valid JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.cfg)
			require.Equal(t, Pause, r.send(chat(c.body)))
			fx := r.x.Drain()
			var reply *Effect
			for i := range fx {
				require.NotEqual(t, Admit, fx[i].Kind, "nothing is admitted")
				if fx[i].Kind == LocalReply {
					reply = &fx[i]
				}
			}
			require.NotNil(t, reply)
			require.Equal(t, c.status, reply.Size)
			require.Equal(t, c.code, errorCode(reply.Body))
			require.Contains(t, string(reply.Body), c.says)
			require.Contains(t, reply.Headers, refusal.Header{Name: "x-should-retry", Value: "false"}, "waiting cannot cure it")
			require.Contains(t, reply.Headers, refusal.Header{Name: "content-type", Value: "application/json"})
			require.Equal(t, PhaseReplied, r.x.Phase())
		})
	}
}

// Under on_unreadable_body "admit" a body the filter cannot estimate goes
// upstream unchanged, but never on a zero hold: it reserves an input
// estimated from its byte count (its declared length when it was too large
// to buffer) plus default_output_tokens, so a burst of them is held to the
// budget. A request with no body at all still takes a zero hold.
func TestUnderAdmitABodyTheFilterCannotEstimateHoldsItsBytesAndTheDefaultOutput(t *testing.T) {
	admit := `"token_budget":{"on_unreadable_body":"admit"`
	for _, c := range []struct {
		name, reason, cfg string
		req               func() *request
		size              int  // the bytes buffered when the filter decides (0: the whole body)
		eos               bool // the headers end the request
		hold              int64
	}{
		{"not JSON", "not_json", withConfig(admit + `}`), func() *request { return chat(`{"model":`) }, 0, false, estimate.Bytes(9) + 4096},
		{"too large, on its declared length", "body_too_large", withConfig(admit + `,"max_body_bytes":4}`),
			func() *request { return chat(strings.Repeat("x", 4000)) }, 5, false, 1000 + 4096},
		{"too large, with no length declared, on what was buffered", "body_too_large", withConfig(admit + `,"max_body_bytes":4}`),
			func() *request { r := chat(strings.Repeat("x", 4000)); r.headers = r.headers[:3]; return r }, 400, false, 100 + 4096},
		{"the host cannot hand it over, in either mode", "body_unreadable", keyBudget,
			func() *request { r := chat(hiBody); r.noBody = true; return r }, 0, false, estimate.Bytes(int64(len(hiBody))) + 4096},
		{"default_output_tokens is the output held", "not_json", withConfig(admit + `,"default_output_tokens":100}`),
			func() *request { return chat(`{"model":`) }, 0, false, estimate.Bytes(9) + 100},
		{"no body at all", "no_body", keyBudget, func() *request { return chat("") }, 0, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.cfg)
			req := c.req()
			a := r.x.RequestHeaders(req, c.eos)
			if !c.eos {
				size, eos := len(req.body), true
				if c.size > 0 {
					size, eos = c.size, false
				}
				a = r.x.RequestBody(req, size, eos)
			}
			require.Equal(t, AfterAdmission, a)
			require.Equal(t, []string{"count_fail_open " + c.reason, "admit tokens=" + strconv.FormatInt(c.hold, 10)},
				r.drain(CountFailOpen, Admit, SetRequestBody, LocalReply))
		})
	}
}

// Under "admit", the model header names the model of a body the filter
// did not read: its max_tokens_per_request bounds the output held (under
// clamp the limit is held whole, since the body's own ceiling can be
// neither read nor rewritten), and its per_model budget takes the hold.
func TestUnderAdmitAnUnreadBodyTakesTheModelHeadersLimits(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":1000000},"per_model":{"big":{"tokens_per_minute":1000000},"small":{"tokens_per_minute":1000000}}}},
		"identity":{"model_header":"x-model"},"token_budget":{"on_unreadable_body":"admit"},
		"models":{"big":{"max_tokens_per_request":20000,"on_max_tokens":"clamp"},"small":{"max_tokens_per_request":8000}}}`
	for model, want := range map[string]int64{"big": 20000, "small": 4096, "other": 4096} {
		r := newRig(t, cfg)
		req := chat(`not json`)
		req.headers = append(req.headers, [2]string{"x-model", model})
		require.Equal(t, AfterAdmission, r.send(req), model)
		r.drain()
		p := r.plan()
		require.Equal(t, model, r.x.Identity().Model)
		var dims []string
		for _, op := range p.Tokens {
			require.Equal(t, estimate.Bytes(8)+want, op.Amount, model)
			dims = append(dims, op.Dimension.String())
		}
		if model != "other" {
			require.Contains(t, dims, "model", model)
		}
	}
}

func TestABodyStillArrivingIsBufferedWhole(t *testing.T) {
	r := newRig(t, keyBudget)
	req := chat(hiBody)
	require.Equal(t, Continue, r.x.RequestHeaders(req, false))
	r.drain()
	require.Equal(t, Pause, r.x.RequestBody(req, 10, false))
	require.Empty(t, r.drain(), "nothing is decided on part of a body")
	require.Equal(t, AfterAdmission, r.x.RequestBody(req, len(req.body), true))
	require.Equal(t, []string{"admit tokens=108"}, r.drain())
}

func TestARepeatedDecisiveMemberIsRefusedInEveryMode(t *testing.T) {
	for _, body := range []string{`{"model":"a","model":"b"}`, `{"stream":true,"STREAM":false}`, `{"max_tokens":1,"max_tokens":9}`} {
		r := newRig(t, `{"rate_limiting":{"mode":"shadow","limits":{"per_api_key":{"tokens_per_minute":10}}}}`)
		require.Equal(t, Pause, r.send(chat(body)), body)
		require.Equal(t, []string{"count_request invalid", "local_reply 400 duplicate_field"}, r.drain(CountRequest, LocalReply, Admit), body)
	}
}

func TestAModelsPerRequestLimitsRefuseWhatCanNeverFit(t *testing.T) {
	for _, c := range []struct{ name, model, body, code string }{
		{"context", `{"max_context_length":5}`, `{"model":"m","messages":[{"role":"user","content":"a long enough prompt to pass five tokens"}]}`, "context_length_exceeded"},
		{"images", `{"max_images_per_request":1}`, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"a"}},{"type":"image_url","image_url":{"url":"b"}}]}]}`, "too_many_images"},
		{"ceiling", `{"max_tokens_per_request":50}`, `{"model":"m","max_tokens":100,"messages":[]}`, "max_tokens_exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, withConfig(`"token_budget":{"default_output_tokens":40},"models":{"m":`+c.model+`}`))
			require.Equal(t, Pause, r.send(chat(c.body)))
			require.Equal(t, []string{"count_request invalid", "local_reply 400 " + c.code}, r.drain(CountRequest, LocalReply, Admit))
		})
	}
}

// Under refuse, a request that states no ceiling reserves the default at
// most the limit; under clamp every ceiling the backend reads is made a
// plain integer within the limit and the reservation is the limit.
func TestAnOutputCeilingIsReservedAsTheModelsLimitAllows(t *testing.T) {
	for _, c := range []struct {
		name, model, body string
		want              []string
	}{
		{"refuse, unstated: the default", `{"max_tokens_per_request":50}`, `{"model":"m","messages":[]}`,
			[]string{"admit tokens=43"}},
		{"refuse, within the limit: as stated", `{"max_tokens_per_request":50}`, `{"model":"m","max_tokens":20,"messages":[]}`,
			[]string{"admit tokens=23"}},
		{"clamp, above: rewritten to the limit", `{"max_tokens_per_request":50,"on_max_tokens":"clamp"}`, `{"model":"m","max_tokens":100,"messages":[]}`,
			[]string{`set_request_body {"model":"m","max_tokens":50,"messages":[]}`, "admit tokens=53"}},
		{"clamp, unstated: the route's field added", `{"max_tokens_per_request":50,"on_max_tokens":"clamp"}`, `{"model":"m","messages":[]}`,
			[]string{`set_request_body {"model":"m","messages":[],"max_tokens":50}`, "admit tokens=53"}},
		{"clamp, within: forwarded byte for byte", `{"max_tokens_per_request":50,"on_max_tokens":"clamp"}`, `{"model":"m","max_tokens":20,"messages":[]}`,
			[]string{"admit tokens=23"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, withConfig(`"token_budget":{"default_output_tokens":40},"models":{"m":`+c.model+`}`))
			require.Equal(t, AfterAdmission, r.send(chat(c.body)))
			require.Equal(t, c.want, r.drain(SetRequestBody, Admit, LocalReply))
		})
	}
}

// A streamed OpenAI request that did not ask for usage is made to, in the
// same rewrite as a clamp, so the stream can settle on the backend's count.
func TestAStreamedRequestIsAskedForItsUsageInTheOneRewrite(t *testing.T) {
	for _, c := range []struct {
		name, cfg, body string
		want            []string
	}{
		{"injected", keyBudget, `{"model":"m","stream":true,"max_tokens":10,"messages":[]}`,
			[]string{`set_request_body {"model":"m","stream":true,"max_tokens":10,"messages":[],"stream_options":{"include_usage":true}}`}},
		{"the client asked already", keyBudget, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":10,"messages":[]}`, nil},
		{"not streamed", keyBudget, `{"model":"m","max_tokens":10,"messages":[]}`, nil},
		{"injection off", withConfig(`"token_budget":{"inject_stream_usage":false}`), `{"model":"m","stream":true,"max_tokens":10,"messages":[]}`, nil},
		{"injected and clamped together", withConfig(`"models":{"m":{"max_tokens_per_request":5,"on_max_tokens":"clamp"}}`),
			`{"model":"m","stream":true,"max_tokens":10,"messages":[]}`,
			[]string{`set_request_body {"model":"m","stream":true,"max_tokens":5,"messages":[],"stream_options":{"include_usage":true}}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.cfg)
			require.Equal(t, AfterAdmission, r.send(chat(c.body)))
			require.Equal(t, c.want, r.drain(SetRequestBody))
		})
	}
}

// The store's answer decides: admitted, refused (429 naming the limit),
// or unavailable (503, fail closed), also for an answer that is none of
// these.
func TestTheStoresAnswerDecidesTheRequest(t *testing.T) {
	refusal := &limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, RetryAfterSec: 7, Private: true}
	for _, c := range []struct {
		name  string
		o     limit.Outcome
		want  []string
		phase Phase
	}{
		{"refused", limit.Outcome{Refusal: refusal},
			[]string{"count_request refused", "count_refusal token_budget", "local_reply 429 token_budget_exceeded"}, PhaseReplied},
		{"store down", limit.Outcome{Err: errors.New("unreachable")},
			[]string{"count_request unavailable", "local_reply 503 rate_limit_store_unavailable"}, PhaseReplied},
		{"spend unchecked", limit.Outcome{Err: limit.ErrSpendUnavailable},
			[]string{"count_request unavailable", "local_reply 503 spend_store_unavailable"}, PhaseReplied},
		{"neither admitted nor refused", limit.Outcome{},
			[]string{"count_request unavailable", "local_reply 503 rate_limit_store_unavailable"}, PhaseReplied},
		{"skipped families are counted", limit.Outcome{Result: limit.ResultAdmitted, Skipped: []string{"token_budget"}},
			[]string{"count_skipped token_budget", "count_request admitted"}, PhaseForwarded},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, keyBudget)
			r.send(chat(hiBody))
			r.drain()
			r.answer(c.o, false)
			require.Equal(t, c.want, r.drain())
			require.Equal(t, c.phase, r.x.Phase())
		})
	}
}

// An answer that comes after Admit returned resumes the paused request;
// one that comes after the host ended the stream gives its hold back.
func TestALateAdmissionResumesTheRequestOrIsReleased(t *testing.T) {
	r := newRig(t, keyBudget)
	r.send(chat(hiBody))
	r.admitAll(true)
	require.Equal(t, []string{"resume_request"}, r.drain(ResumeRequest))

	r = newRig(t, keyBudget)
	r.send(chat(hiBody))
	p := r.plan()
	r.drain()
	r.x.Done()
	r.answer(limit.Outcome{Result: limit.ResultAdmitted, Hold: limit.Hold{Entries: p.HoldEntries()}}, true)
	require.Equal(t, []string{"release"}, r.drain(), "no resume, no count: the stream is gone")
}

// In shadow mode a refusal is counted and the request is admitted on the
// rest of its plan; with nothing left it is admitted at once.
func TestAShadowRefusalIsCountedAndTheRestOfThePlanDecides(t *testing.T) {
	two := `{"rate_limiting":{"mode":"shadow","limits":{"global":{"tokens_per_minute":1000},"per_api_key":{"tokens_per_minute":1000}}}}`
	r := newRig(t, two)
	r.send(chat(hiBody))
	require.Len(t, r.plan().Tokens, 2)
	r.drain()
	r.answer(limit.Outcome{Refusal: &limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimGlobal, Budget: limit.PeriodMinute}}, false)
	require.Equal(t, []string{"count_shadow_refusal token_budget global", "admit tokens=108 retry"}, r.drain())
	require.Len(t, r.plan().Tokens, 1, "the refusing dimension is taken out")
	r.admitAll(false)
	require.Equal(t, PhaseForwarded, r.x.Phase())

	r = newRig(t, `{"rate_limiting":{"mode":"shadow","limits":{"per_api_key":{"tokens_per_minute":10}}}}`)
	r.send(chat(hiBody))
	r.drain()
	r.answer(limit.Outcome{Refusal: &limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute}}, true)
	require.Equal(t, []string{"count_shadow_refusal token_budget api_key", "count_request admitted", "resume_request"}, r.drain())
	require.Equal(t, PhaseForwarded, r.x.Phase())
}

// The filter asks the backend for an uncompressed answer and drops the
// length of a body it may rewrite, by removing the request's headers; a
// header the request does not carry is not removed (no host call).
func TestOnlyTheHeadersTheRequestCarriesAreRemoved(t *testing.T) {
	for _, c := range []struct {
		name    string
		headers [][2]string
		want    []string
	}{
		{"both", [][2]string{{"accept-encoding", "gzip, br"}, {"content-length", "20"}},
			[]string{"remove_request_header accept-encoding", "remove_request_header content-length"}},
		{"an empty accept-encoding is removed too", [][2]string{{"accept-encoding", ""}, {"content-length", "20"}},
			[]string{"remove_request_header accept-encoding", "remove_request_header content-length"}},
		{"a repeated accept-encoding is removed once, every value with it",
			[][2]string{{"accept-encoding", "gzip"}, {"accept-encoding", "br"}},
			[]string{"remove_request_header accept-encoding"}},
		{"no accept-encoding", [][2]string{{"content-length", "20"}}, []string{"remove_request_header content-length"}},
		{"a chunked body has no length to drop", [][2]string{{"transfer-encoding", "chunked"}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, keyBudget)
			req := chat(hiBody)
			req.headers = append([][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"},
				{"authorization", "Bearer sk-a"}}, c.headers...)
			require.Equal(t, Continue, r.x.RequestHeaders(req, false))
			require.Equal(t, c.want, r.drain())
		})
	}
}

// identity.strip_api_key_headers removes every configured key header the
// request carries once the caller is identified, on every route: the
// caller is still metered by its key, and the provider never sees it.
func TestStrippedKeyHeadersAreRemovedAfterTheCallerIsIdentified(t *testing.T) {
	const strip = `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":1000}}},"identity":{"strip_api_key_headers":true}}`
	for _, c := range []struct {
		name, cfg, path string
		headers         [][2]string
		want            []string
	}{
		{"bearer key", strip, "/v1/chat/completions", [][2]string{{"authorization", "Bearer sk-a"}},
			[]string{"remove_request_header authorization"}},
		{"x-api-key", strip, "/v1/messages", [][2]string{{"x-api-key", "sk-a"}},
			[]string{"remove_request_header x-api-key"}},
		{"both carry the same key", strip, "/v1/chat/completions", [][2]string{{"authorization", "Bearer sk-a"}, {"x-api-key", "sk-a"}},
			[]string{"remove_request_header authorization", "remove_request_header x-api-key"}},
		{"an unmetered route", strip, "/v1/models", [][2]string{{"authorization", "Bearer sk-a"}},
			[]string{"remove_request_header authorization"}},
		{"no key header, nothing to remove", strip, "/v1/chat/completions", nil, nil},
		{"off by default", keyBudget, "/v1/chat/completions", [][2]string{{"authorization", "Bearer sk-a"}}, nil},
		{"only the configured headers", `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":1000}}},` +
			`"identity":{"api_key_headers":["x-gateway-key"],"strip_api_key_headers":true}}`, "/v1/chat/completions",
			[][2]string{{"x-gateway-key", "sk-a"}, {"authorization", "Bearer provider"}},
			[]string{"remove_request_header x-gateway-key"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.cfg)
			req := chat(hiBody)
			req.headers = append([][2]string{{":method", "POST"}, {":path", c.path}}, c.headers...)
			r.x.RequestHeaders(req, false)
			require.Equal(t, c.want, r.drain(RemoveRequestHeader))
			if c.path != "/v1/models" && len(c.headers) > 0 && c.want != nil {
				require.NotEmpty(t, r.x.who.APIKeyHash, "the caller was identified before the header went")
			}
		})
	}
}
