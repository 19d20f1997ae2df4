package exchange

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// RequestHeaders is the request's headers. A metered route identifies the
// caller, refuses what identity rules refuse, asks the backend for an
// answer whose usage can be read and, when the request has no body, admits
// it at once.
func (x *Exchange) RequestHeaders(req Request, endOfStream bool) Action {
	rt := x.env.Config
	if rt == nil {
		x.phase = PhasePassThrough
		return Continue
	}
	path, _ := req.Header(":path")
	api, ok := usage.Route(path)
	if !ok {
		x.stripKeyHeaders(rt, req)
		x.phase = PhasePassThrough
		return Continue
	}
	x.rt, x.api, x.phase = rt, api, PhaseBody
	conflict := x.identify(req)
	x.stripKeyHeaders(rt, req)
	if conflict {
		x.invalid("conflicting_api_keys", "authorization", "The request carries more than one API key value (a repeated key header, or two different keys).")
		return Pause
	}
	if rt.Exempt(x.addr, x.who.APIKeyHash) {
		x.conclude(OutcomeExempt, 0, nil, nil)
		x.record()
		return Continue
	}
	if msg, refuse := x.keyRefused(); refuse {
		x.log.code = "invalid_api_key"
		status, body, headers := refusal.Unauthorized(msg)
		x.conclude(OutcomeUnauthorized, status, body, headers)
		return Pause
	}
	// The usage block must be readable: ask the backend for an uncompressed
	// answer (a compressor filter before this one re-compresses for the
	// client, as in Envoy's usual chain). A header the request does not
	// carry costs no host call: identify read the whole map.
	pairs := req.Headers()
	if hasHeader(pairs, "accept-encoding") {
		x.fx.RemoveRequestHeader("accept-encoding")
	}
	// The length a body too large to buffer declares is the byte count its
	// hold is estimated from under on_unreadable_body "admit"; it is read
	// only then (admitUnread).
	cl, hasLength := firstValue(pairs, "content-length")
	x.bodyLength = cl
	if x.mayRewriteBody() && hasLength {
		// Headers are read-only once this callback returns Continue, and the
		// body is read (and maybe rewritten) later: drop the length now and
		// let the proxy frame the body, as Envoy filters that rewrite do.
		x.fx.RemoveRequestHeader("content-length")
	}
	if endOfStream {
		x.failOpen("no_body")
		x.admit(false)
		return AfterAdmission
	}
	return Continue
}

// mayRewriteBody says whether this request's body might be rewritten: the
// stream-usage injection on OpenAI routes, or a model limit that clamps.
func (x *Exchange) mayRewriteBody() bool {
	return x.env.AnyClamp || x.rt.InjectStreamUsage && injectsUsage(x.api)
}

// injectsUsage says the API's streams report usage only when asked
// (stream_options.include_usage), so the filter asks on the client's
// behalf.
func injectsUsage(api usage.API) bool {
	return api == usage.OpenAIChat || api == usage.OpenAICompletions
}

// RequestBody is a request body callback: size bytes are buffered so far,
// the whole body when endOfStream. The body is read once, whole. A body the
// filter cannot estimate (larger than max_body_bytes, not JSON) is refused
// under on_unreadable_body "refuse", the default, or admitted unchanged on
// a hold estimated from its byte count under "admit" (see admitUnread); a
// body the host could not hand over is admitted so under either.
func (x *Exchange) RequestBody(req Request, size int, endOfStream bool) Action {
	if x.phase != PhaseBody {
		return Continue
	}
	if int64(size) > x.rt.MaxBodyBytes {
		if !x.rt.AdmitUnreadableBody {
			x.log.code = "request_too_large"
			status, body, headers := refusal.BodyTooLarge(x.rt.MaxBodyBytes)
			x.conclude(OutcomeInvalid, status, body, headers)
			return Pause
		}
		x.failOpen("body_too_large")
		declared, _ := strconv.ParseInt(x.bodyLength, 10, 64)
		x.admitUnread(max(int64(size), declared))
		return AfterAdmission
	}
	if !endOfStream {
		return Pause // StopIterationAndBuffer: read the whole body once
	}
	body, ok := req.Body(size)
	if !ok {
		// The host's failure, not the client's: never refused, never free.
		x.failOpen("body_unreadable")
		x.admitUnread(int64(size))
		return AfterAdmission
	}
	// Parsed where it is kept: the request into x.req, the members on this
	// frame for the rewrite.
	var members estimate.Members
	err := x.buffers().parser.ParseInto(&x.req, &members, body, x.rt.DefaultOutputTokens)
	if dup, ok := err.(estimate.DuplicateFieldError); ok {
		// Backends disagree on which copy they read (Python and Go keep
		// the last, others the first): the model, ceiling or stream mode
		// being metered would be a guess. Refused in every mode.
		x.invalid("duplicate_field", dup.Field, "The request names \""+dup.Field+
			"\" more than once; send each of model, the output ceiling, n, best_of, stream and stream_options once.")
		return Pause
	}
	if err != nil {
		if !x.rt.AdmitUnreadableBody {
			x.log.code = "invalid_json"
			status, body, headers := refusal.NotJSON()
			x.conclude(OutcomeInvalid, status, body, headers)
			return Pause
		}
		x.failOpen("not_json")
		x.admitUnread(int64(size))
		return AfterAdmission
	}
	if !x.readBody(&members, body, size) {
		return Pause
	}
	x.admit(true)
	return AfterAdmission
}

// admitUnread admits a body the filter did not read (on_unreadable_body
// "admit", or a body the host could not hand over) unchanged, on a hold of
// an input estimated from its n bytes (estimate.Bytes) plus
// default_output_tokens, so it cannot burst past a token budget. The model
// is the model header's, if one is configured (the body's is unknown): its
// per_model budgets, concurrency and price apply, and its
// max_tokens_per_request bounds the output reserved, or under clamp is
// reserved whole, as the body's own ceiling cannot be read nor rewritten.
// max_context_length is not checked: bytes are no measure of a prompt (a
// base64 image is thousands of bytes and a few hundred tokens), and the
// settlement charges what the backend reports.
func (x *Exchange) admitUnread(n int64) {
	x.req = estimate.Request{Input: estimate.Bytes(n), Output: x.rt.DefaultOutputTokens}
	if mr := x.rt.ModelOf(x.who.Model); mr != nil && mr.MaxTokensPerRequest > 0 {
		if mr.Clamp {
			x.req.Output = mr.MaxTokensPerRequest
		} else {
			x.req.Output = min(x.req.Output, mr.MaxTokensPerRequest)
		}
	}
	x.admit(true)
}

// readBody takes what admission needs from the parsed body and makes the
// one rewrite the rules ask for (usage injection, output clamp) from the
// members the parse located. false means the request was answered here.
func (x *Exchange) readBody(m *estimate.Members, body []byte, size int) bool {
	req := &x.req
	if x.who.Model == "" || req.Model != "" {
		x.who.Model = req.Model
	}
	w := newRewrite(body, *m)
	if x.rt.InjectStreamUsage && req.Stream && !req.StreamIncludeUsage {
		x.injected = w.injectUsage(x.api)
	}
	entry, mr := x.rt.ModelEntry(x.who.Model)
	x.log.modelEntry = entry
	if mr != nil && x.applyModelLimits(mr, &w) {
		return false
	}
	if out, changed := w.apply(); changed {
		x.fx.SetRequestBody(size, out)
	}
	return true
}

// applyModelLimits enforces the model's per-request limits. An input above
// max_context_length, or more image parts than max_images_per_request, can
// never fit: 400. A stated output ceiling above max_tokens_per_request is
// refused (400), or, with on_max_tokens "clamp", the forwarded body is made
// to carry ceilings no larger than the limit (see clampOutput): also when
// the request states none, or states 0 or less (not a ceiling: backends
// read it as "no limit"), because the backend would otherwise generate
// freely. Under clamp an unstated ceiling reserves the limit; under refuse
// it reserves the default, at most the limit.
func (x *Exchange) applyModelLimits(mr *config.ModelRules, w *rewrite) (refused bool) {
	if mr.MaxContextLength > 0 && x.req.Input > mr.MaxContextLength {
		x.invalid("context_length_exceeded", "messages", "This request's input (about "+itoa64(x.req.Input)+
			" tokens) exceeds the "+itoa64(mr.MaxContextLength)+"-token context limit of model "+x.who.Model+".")
		return true
	}
	if mi := mr.MaxImagesPerRequest; mi > 0 && x.req.Images > mi {
		x.invalid("too_many_images", "messages", "This request carries "+itoa64(x.req.Images)+
			" images; model "+x.who.Model+" accepts at most "+itoa64(mi)+" per request.")
		return true
	}
	max := mr.MaxTokensPerRequest
	if max <= 0 {
		return false
	}
	if mr.Clamp {
		if w.clampOutput(x.api, max) || !x.req.OutputStated {
			x.req.Output = max
		}
		return false
	}
	if x.req.Output <= max {
		return false
	}
	if x.req.OutputStated {
		x.invalid("max_tokens_exceeded", "max_tokens", "The requested output ceiling ("+itoa64(x.req.Output)+
			" tokens) exceeds the "+itoa64(max)+"-token limit of model "+x.who.Model+".")
		return true
	}
	x.req.Output = max
	return false
}

// invalid answers a request the rules refuse whatever the budgets: 400.
func (x *Exchange) invalid(code, param, msg string) {
	x.log.code = code
	status, body, headers := refusal.Invalid(code, param, msg)
	x.conclude(OutcomeInvalid, status, body, headers)
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
