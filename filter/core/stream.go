package core

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/budget"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/sse"
	"github.com/tokenbudget/tokenbudget/shared/usage"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// maxResponseCopy bounds the copy of a non-streamed response kept to read
// its usage block; a larger answer releases its hold (its usage is unknown).
const maxResponseCopy = 8 << 20

// unavailableRetryAfter is the Retry-After of a fail-closed 503: long enough for a store to come back, short enough not to strand clients.
const unavailableRetryAfter = 5

// Stream is one HTTP request through the filter. Its hold (if any) ends
// exactly once: settled at the response's normal end with usage, released
// on everything else, at the latest when the host says the stream is done.
type Stream struct {
	root *Root
	id   uint32
	// onAdmitted is s.admitted, bound once: a method value handed to the
	// store allocates each time it is taken.
	onAdmitted func(sharedstore.Outcome)

	rt    *config.Runtime // the config this request was admitted under
	store sharedstore.Store
	api   usage.API
	route bool // a text-generation route this filter meters

	who  budget.Identity
	addr netip.Addr // the peer, as Envoy reports it
	req  estimate.Request

	keyConflict    bool // the key headers carry two different keys
	admitting      bool // inside store.Admit: an answer now is synchronous
	decided        bool
	paused         bool
	refusedLocally bool
	done           bool // the host ended the stream (on_done)

	hold   sharedstore.Hold
	held   bool // hold taken and not yet ended
	levels []sharedstore.OpLevel
	// planned is the token amount admission asked to hold; with no token
	// bucket in the plan it is what a charge "of the hold" prices.
	planned int64
	// price prices this request's usage when a spend limit applies;
	// spendUsed is the spend preflight read, for the success headers.
	price     pricing.Entry
	spendUsed spend.Usage

	streamed bool
	injected bool // the filter added include_usage; the client did not ask
	// split frames a streamed answer once, for the usage reader and for
	// dropping the usage chunk the filter asked for (see streamEvents).
	split    *sse.Splitter
	out      []byte // the forwarded chunk when it differs from the one read
	answered bool   // response headers arrived
	failed   bool   // upstream answered an error status
	encoded  bool   // the answer is compressed: its usage cannot be read
	cacheHit bool
	sse      *usage.Stream
	body     []byte
	tooLarge bool

	plan sharedstore.Plan // what admit asked for, kept for a shadow-mode retry
	log  decision
}

func (s *Stream) host() abi.Host { return s.root.host }

func (s *Stream) OnRequestHeaders(numHeaders int, endOfStream bool) abi.Action {
	rt := s.root.rt
	if rt == nil {
		return abi.ActionContinue
	}
	path, _ := s.host().GetHeader(abi.MapRequestHeaders, ":path")
	api, ok := usage.Route(path)
	if !ok {
		return abi.ActionContinue
	}
	s.route, s.api, s.rt, s.store = true, api, rt, s.root.store
	s.identify()
	if s.keyConflict {
		s.invalid("conflicting_api_keys", "authorization", "The request carries more than one API key value (a repeated key header, or two different keys).")
		return abi.ActionPause
	}
	if rt.Exempt(s.addr, s.who.APIKeyHash) {
		s.route = false
		s.root.metrics.request("exempt")
		s.log.outcome = "exempt"
		s.record()
		return abi.ActionContinue
	}
	if msg, refuse := s.keyRefused(); refuse {
		s.root.metrics.request("unauthorized")
		s.log.outcome, s.log.code = "unauthorized", "invalid_api_key"
		status, body, headers := refusal.Unauthorized(msg)
		s.reply(status, body, headers)
		return abi.ActionPause
	}
	// The usage block must be readable: ask the backend for an uncompressed
	// answer (a compressor filter before this one re-compresses for the
	// client, as in Envoy's usual chain).
	s.host().RemoveHeader(abi.MapRequestHeaders, "accept-encoding")
	if s.mayRewriteBody() {
		// Headers are read-only once this callback returns Continue, and the
		// body is read (and maybe rewritten) later: drop the length now and
		// let the proxy frame the body, as Envoy filters that rewrite do.
		s.host().RemoveHeader(abi.MapRequestHeaders, "content-length")
	}
	if endOfStream {
		s.failOpen("no_body")
		return s.admit(false)
	}
	return abi.ActionContinue
}

// identify resolves who the request is for. User and team come from the
// API-key table, or from headers only the operator declared trusted (set by
// an auth filter in front): a client cannot name another tenant's bucket.
// Every header entry is read in one host call: the key headers must be seen
// whole (a repeated key header is refused, see identity.Lookup), and the
// other identity headers are found in the same pairs.
func (s *Stream) identify() {
	pairs, _ := s.host().GetHeaders(abi.MapRequestHeaders)
	raw, ok, conflict := identity.Lookup(pairs, s.rt.APIKeyHeaders)
	s.keyConflict = conflict
	if ok {
		s.who.APIKeyHash = s.root.keys.Hash(raw)
		s.who.Key = s.rt.Key(s.who.APIKeyHash)
	}
	s.who.User, s.who.Team = s.who.Key.User, s.who.Key.Team
	if v, ok := firstValue(pairs, s.rt.TrustedUserHeader); ok {
		s.who.User = v
	}
	if v, ok := firstValue(pairs, s.rt.TrustedTeamHeader); ok {
		s.who.Team = v
	}
	if v, ok := s.trustedProperty(s.rt.TrustedUserMetadata); ok {
		s.who.User = v
	}
	if v, ok := s.trustedProperty(s.rt.TrustedTeamMetadata); ok {
		s.who.Team = v
	}
	s.addr, s.who.Client = s.clientAddr()
	if v, ok := firstValue(pairs, s.rt.ModelHeader); ok {
		s.who.Model = v
	}
}

// firstValue is the first non-empty value of header name ("" = none
// configured) among pairs, as Envoy's own header lookup answers.
func firstValue(pairs [][2]string, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	for i := range pairs {
		if pairs[i][0] == name {
			return pairs[i][1], pairs[i][1] != ""
		}
	}
	return "", false
}

// keyRefused applies identity.missing_api_key and identity.unknown_api_keys
// "refuse": without them a request with no key skips the per-key budget and
// every unknown key gets a fresh one, so an operator who sells per-key
// budgets can require keys. Whitelisted clients and bypass keys were let
// through before this check.
func (s *Stream) keyRefused() (msg string, refuse bool) {
	switch {
	case s.who.APIKeyHash == "" && s.rt.RefuseMissingKeys:
		return "This gateway requires an API key (Authorization: Bearer <key> or x-api-key).", true
	case s.who.APIKeyHash != "" && !s.who.Key.Known && s.rt.RefuseUnknownKeys:
		return "The API key is not known to this gateway.", true
	}
	return "", false
}

// maxIdentityLen bounds an identity read from metadata; a longer value is
// not a user or team name and is ignored.
const maxIdentityLen = 256

// trustedProperty reads an identity an auth filter in front put in Envoy
// metadata (a path under metadata or filter_state, checked by the config).
func (s *Stream) trustedProperty(path []string) (string, bool) {
	if len(path) == 0 {
		return "", false
	}
	v, st := s.host().GetProperty(path...)
	if st != abi.StatusOK || len(v) == 0 || len(v) > maxIdentityLen {
		return "", false
	}
	return string(v), true
}

// clientAddr is the peer address Envoy reports, without its port, and its
// text form (empty when the address is not valid).
func (s *Stream) clientAddr() (netip.Addr, string) {
	v, st := s.host().GetProperty("source", "address")
	if st != abi.StatusOK {
		return netip.Addr{}, ""
	}
	// The host handed v over for good and nothing writes it again, so its
	// text can be read, and kept, without a copy.
	text := unsafe.String(unsafe.SliceData(v), len(v))
	var a netip.Addr
	if ap, err := netip.ParseAddrPort(text); err == nil {
		a = ap.Addr().Unmap()
	} else {
		a, _ = netip.ParseAddr(text)
		a = a.Unmap()
	}
	if !a.IsValid() {
		return a, ""
	}
	return a, addrText(a, text)
}

// addrText is a.String(), taken from the text Envoy sent when it already
// spells the address that way (an IPv4 peer always does: the parser takes
// only the canonical dotted quad), so the common peer costs no string.
func addrText(a netip.Addr, text string) string {
	var buf [64]byte
	canon := a.AppendTo(buf[:0])
	if len(text) > 0 && text[0] == '[' {
		text = text[1:]
	}
	if len(text) >= len(canon) && string(canon) == text[:len(canon)] {
		return text[:len(canon)]
	}
	return a.String()
}

// mayRewriteBody says whether this request's body might be rewritten: the
// stream-usage injection on OpenAI routes, or a model limit that clamps.
func (s *Stream) mayRewriteBody() bool {
	return s.root.anyClamp || s.rt.InjectStreamUsage && (s.api == usage.OpenAIChat || s.api == usage.OpenAICompletions)
}

func (s *Stream) OnRequestBody(bodySize int, endOfStream bool) abi.Action {
	if !s.route || s.decided || s.paused {
		return abi.ActionContinue
	}
	if int64(bodySize) > s.rt.MaxBodyBytes {
		s.failOpen("body_too_large")
		return s.admit(false)
	}
	if !endOfStream {
		return abi.ActionPause // StopIterationAndBuffer: read the whole body once
	}
	body, st := s.host().GetBuffer(abi.BufferRequestBody, 0, bodySize)
	if st != abi.StatusOK {
		s.failOpen("body_unreadable")
		return s.admit(false)
	}
	req, err := estimate.Parse(body, s.rt.DefaultOutputTokens)
	if dup, ok := err.(estimate.DuplicateFieldError); ok {
		// Backends disagree on which copy they read (Python and Go keep
		// the last, others the first): the model, ceiling or stream mode
		// being metered would be a guess. Refused in every mode.
		s.invalid("duplicate_field", dup.Field, "The request names \""+dup.Field+
			"\" more than once; send each of model, the output ceiling, n, best_of, stream and stream_options once.")
		return abi.ActionPause
	}
	if err != nil {
		s.failOpen("not_json")
		return s.admit(false)
	}
	s.req = req
	if s.who.Model == "" || req.Model != "" {
		s.who.Model = req.Model
	}
	rewritten, changed := body, false
	if s.rt.InjectStreamUsage && req.Stream && !req.StreamIncludeUsage {
		rewritten, changed = usage.InjectIncludeUsage(s.api, rewritten)
		if !changed {
			rewritten = body
		}
		s.injected = changed
	}
	if mr, ok := s.rt.Model(s.who.Model); ok {
		var refused, clamped bool
		if rewritten, clamped, refused = s.applyModelLimits(mr, rewritten); refused {
			return abi.ActionPause
		}
		changed = changed || clamped
	}
	if changed {
		s.host().SetBuffer(abi.BufferRequestBody, 0, bodySize, rewritten)
	}
	return s.admit(true)
}

// applyModelLimits enforces the model's per-request limits. An
// input above max_context_length, or more image parts than
// max_images_per_request, can never fit: 400. A stated output
// ceiling above max_tokens_per_request is refused (400), or, with
// on_max_tokens "clamp", the forwarded body is made to carry ceilings no
// larger than the limit (see clampOutput): also when the request states
// none, or states 0 or less (not a ceiling: backends read it as "no
// limit"), because the backend would otherwise generate freely. Under
// clamp an unstated ceiling reserves the limit; under refuse it reserves
// the default, at most the limit.
func (s *Stream) applyModelLimits(mr config.ModelRules, body []byte) (out []byte, clamped, refused bool) {
	if mr.MaxContextLength > 0 && s.req.Input > mr.MaxContextLength {
		s.invalid("context_length_exceeded", "messages", "This request's input (about "+itoa64(s.req.Input)+
			" tokens) exceeds the "+itoa64(mr.MaxContextLength)+"-token context limit of model "+s.who.Model+".")
		return body, false, true
	}
	if mi := mr.MaxImagesPerRequest; mi > 0 && s.req.Images > mi {
		s.invalid("too_many_images", "messages", "This request carries "+itoa64(s.req.Images)+
			" images; model "+s.who.Model+" accepts at most "+itoa64(mi)+" per request.")
		return body, false, true
	}
	max := mr.MaxTokensPerRequest
	if max <= 0 {
		return body, false, false
	}
	if mr.Clamp {
		body, clamped = clampOutput(s.api, body, max)
		if clamped || !s.req.OutputStated {
			s.req.Output = max
		}
		return body, clamped, false
	}
	if s.req.Output <= max {
		return body, false, false
	}
	if s.req.OutputStated {
		s.invalid("max_tokens_exceeded", "max_tokens", "The requested output ceiling ("+itoa64(s.req.Output)+
			" tokens) exceeds the "+itoa64(max)+"-token limit of model "+s.who.Model+".")
		return body, false, true
	}
	s.req.Output = max
	return body, false, false
}

func (s *Stream) invalid(code, param, msg string) {
	s.root.metrics.request("invalid")
	s.log.outcome, s.log.code = "invalid", code
	status, body, headers := refusal.Invalid(code, param, msg)
	s.reply(status, body, headers)
}

// admit plans and reserves. withTokens is false when the body could not be
// read or parsed: the request is admitted unchanged with no reservation
// as the token-budget rules say, but it still takes a zero-token hold on its token buckets, so
// the usage the backend reports is charged at settlement (a body a backend
// parses but the filter cannot, such as one with a BOM or NaN, must not be
// free), and request-count limits still apply.
func (s *Stream) admit(withTokens bool) abi.Action {
	amount := int64(0)
	if withTokens {
		amount = s.req.Hold()
	}
	sp, ok := s.spendPlan()
	if !ok {
		return abi.ActionPause
	}
	plan, skipped := budget.Plan(s.rt, s.who, amount)
	for _, d := range skipped {
		s.root.metrics.skipped(d)
	}
	s.log.skipped = skipped
	plan.Spend = sp
	s.planned = amount
	if len(plan.Requests) == 0 && len(plan.Tokens) == 0 && !sp.Any() {
		s.decided = true
		s.root.metrics.request(outcomeAdmitted)
		s.log.outcome = outcomeAdmitted
		return abi.ActionContinue
	}
	s.plan = plan
	s.admitting = true
	s.store.Admit(plan, s.onAdmitted)
	s.admitting = false
	if !s.decided {
		s.paused = true // the answer comes through the root's callout response
		return abi.ActionPause
	}
	if s.refusedLocally {
		return abi.ActionPause
	}
	return abi.ActionContinue
}

// admitted receives the store's answer, synchronously from the shared-data
// backend or later from the remote backend's callout response. A late
// answer for a stream that is gone releases what it reserved.
func (s *Stream) admitted(o sharedstore.Outcome) {
	s.decided = true
	if s.done {
		if o.Err == nil && o.Admitted {
			s.store.Release(o.Hold)
		}
		return
	}
	async := !s.admitting
	if async {
		s.host().SetEffectiveContext(s.id)
	}
	for _, f := range o.Skipped {
		s.root.metrics.skipped(f)
		s.log.skipped = append(s.log.skipped, f)
	}
	switch {
	case o.Err == nil && !o.Admitted && o.SpendRefusal != nil:
		s.spendRefused(*o.SpendRefusal)
	case !o.Admitted && o.Refusal != nil && s.rt.AnyShadow() && s.rt.Shadow(o.Refusal.Dimension, s.who.Model):
		s.shadowRefused(*o.Refusal)
	case o.Err != nil:
		s.root.metrics.request("unavailable")
		s.log.outcome = "unavailable"
		status, body, headers := refusal.Unavailable(unavailableRetryAfter)
		if errors.Is(o.Err, sharedstore.ErrSpendUnavailable) {
			status, body, headers = refusal.SpendUnavailable(unavailableRetryAfter)
		}
		s.reply(status, body, headers)
	case !o.Admitted && o.Refusal != nil:
		s.root.metrics.request("refused")
		limitType := refusal.LimitType(o.Refusal.Kind, o.Refusal.Budget)
		s.root.metrics.refusal(*o.Refusal, limitType)
		s.log.outcome, s.log.limitType, s.log.dimension = "refused", limitType, o.Refusal.Dimension
		now := s.host().NowNanos() / 1e9
		status, body, headers := refusal.Refusal(*o.Refusal, o.Levels, now)
		if s.rt.OpenAIHeaders || s.rt.IETFHeaders {
			own := o.Levels
			if o.Refusal.Private {
				own = append(own[:len(own):len(own)], sharedstore.OpLevel{Kind: o.Refusal.Kind,
					Dimension: o.Refusal.Dimension, Budget: o.Refusal.Budget, Level: o.Refusal.Level})
			}
			headers = refusal.AppendCompatHeaders(headers, own, s.headerStyles(), now)
		}
		s.reply(status, body, headers)
	default:
		s.root.metrics.request(outcomeAdmitted)
		s.hold, s.levels, s.spendUsed = o.Hold, o.Levels, o.Spend
		s.held = len(o.Hold.Entries) > 0 || o.Hold.Spend.Any()
		s.log.outcome, s.log.hold = outcomeAdmitted, o.Hold.Reserved()
		s.log.fellBack = s.root.remote != nil && o.Hold.Backend == sharedstore.BackendLocal
		for i := range o.Hold.Entries {
			e := &o.Hold.Entries[i]
			s.root.metrics.tokens(e, outcomeReserved, e.Amount)
		}
		if async {
			s.host().ContinueStream(abi.StreamRequest)
		}
	}
}

func (s *Stream) reply(status int, body []byte, headers []refusal.Header) {
	hs := make([][2]string, len(headers))
	for i, h := range headers {
		hs[i] = [2]string{h.Name, h.Value}
	}
	s.refusedLocally = true
	s.host().SendLocalResponse(status, "tokenbudget", body, hs)
}

func (s *Stream) OnRequestTrailers(numTrailers int) abi.Action { return abi.ActionContinue }

func (s *Stream) OnResponseHeaders(numHeaders int, endOfStream bool) abi.Action {
	if !s.route || s.refusedLocally {
		return abi.ActionContinue
	}
	h := s.host()
	r := s.root
	r.headers = refusal.AppendSuccessHeaders(r.headers[:0], s.levels)
	if sp := &s.hold.Spend; sp.Any() {
		r.headers = refusal.AppendSpendHeaders(r.headers, &sp.Policy, &s.spendUsed, sp.Day, sp.Month)
	}
	if s.rt.OpenAIHeaders || s.rt.IETFHeaders {
		r.headers = refusal.AppendCompatHeaders(r.headers, s.levels, s.headerStyles(), h.NowNanos()/1e9)
	}
	for _, hd := range r.headers {
		h.ReplaceHeader(abi.MapResponseHeaders, hd.Name, hd.Value)
	}
	if !s.held {
		return abi.ActionContinue
	}
	s.answered = true
	status, _ := h.GetHeader(abi.MapResponseHeaders, ":status")
	if code, err := strconv.Atoi(status); err != nil || code < 200 || code > 299 {
		s.failed = true
	}
	if n := s.rt.CacheHitHeader; n != "" {
		if v, st := h.GetHeader(abi.MapResponseHeaders, n); st == abi.StatusOK && strings.EqualFold(v, s.rt.CacheHitValue) {
			s.cacheHit = true
		}
	}
	if ce, st := h.GetHeader(abi.MapResponseHeaders, "content-encoding"); st == abi.StatusOK && ce != "" && !strings.EqualFold(ce, "identity") {
		s.encoded = true
	}
	if ct, _ := h.GetHeader(abi.MapResponseHeaders, "content-type"); hasPrefixFold(ct, "text/event-stream") {
		s.streamed = true
		s.sse = usage.NewStream(s.api, estimate.Text)
		s.split = &sse.Splitter{}
	}
	if endOfStream {
		s.finish()
	}
	return abi.ActionContinue
}

func (s *Stream) OnResponseBody(bodySize int, endOfStream bool) abi.Action {
	forward := s.split != nil && s.injected
	if !s.held && !forward {
		return abi.ActionContinue
	}
	observe := s.held && !s.failed && !s.cacheHit && !s.encoded
	var chunk []byte
	if bodySize > 0 && (observe || forward) {
		chunk = s.responseChunk(bodySize)
	}
	switch {
	case forward:
		// The usage chunk exists only because this filter asked for it:
		// read it for settlement, then take it out of the client's stream.
		out := s.split.Forward(s.out[:0], chunk, endOfStream, streamEvents{s, observe})
		if !sameBytes(out, chunk) {
			// The host copies what it is given: the buffer serves the next
			// chunk that changes.
			s.host().SetBuffer(abi.BufferResponseBody, 0, bodySize, out)
			if copied := len(out) > 0 && (len(chunk) == 0 || &out[0] != &chunk[0]); copied && cap(out) <= 64<<10 {
				s.out = out[:0] // never a prefix of chunk: that is the host's scratch buffer
			}
		}
	case observe && len(chunk) > 0:
		s.observe(chunk)
	}
	if endOfStream {
		s.finish()
	}
	return abi.ActionContinue
}

// sameBytes says out is chunk itself, as Forward returns an unchanged chunk.
func sameBytes(out, chunk []byte) bool {
	return len(out) == len(chunk) && (len(out) == 0 || &out[0] == &chunk[0])
}

// streamEvents hands each event of a streamed answer the filter forwards
// to the usage reader when the answer is read for settlement, and drops
// the usage-only chunk the filter asked for on the client's behalf.
type streamEvents struct {
	s       *Stream
	observe bool
}

func (e streamEvents) Event(name, data []byte) bool {
	if e.observe {
		return e.s.sse.Event(name, data)
	}
	return sse.IsOpenAIUsageOnlyChunk(data)
}

// responseChunk reads the response body chunk the callback announced, nil
// when the host cannot give it. A streamed chunk is read into the host's
// scratch buffer when it has one: the event reader and the dropper copy
// what they keep, and nothing holds the chunk past this callback.
func (s *Stream) responseChunk(size int) []byte {
	var c []byte
	var st abi.Status
	if sr := s.root.scratch; s.streamed && sr != nil {
		c, st = sr.GetBufferScratch(abi.BufferResponseBody, 0, size)
	} else {
		c, st = s.host().GetBuffer(abi.BufferResponseBody, 0, size)
	}
	if st != abi.StatusOK {
		return nil
	}
	return c
}

// observe reads one response chunk as it passes; the filter never holds the
// response back.
func (s *Stream) observe(chunk []byte) {
	if s.streamed {
		s.split.Read(chunk, streamEvents{s, true})
		return
	}
	if s.tooLarge {
		return
	}
	if len(s.body)+len(chunk) > maxResponseCopy {
		s.tooLarge, s.body = true, nil
		return
	}
	if s.body == nil {
		// The host handed this buffer over for good (not a scratch read): a
		// body in one chunk, the usual case, is kept without a copy. A later
		// chunk's append copies, as the buffer has no spare capacity.
		s.body = chunk[:len(chunk):len(chunk)]
		return
	}
	s.body = append(s.body, chunk...)
}

func (s *Stream) OnResponseTrailers(numTrailers int) abi.Action {
	if s.held {
		s.finish()
	}
	return abi.ActionContinue
}

// finish ends the hold at the response's end: settle with the backend's
// usage, release on failure, cache hit, or no usage.
func (s *Stream) finish() {
	if !s.held {
		return
	}
	switch {
	case s.failed || s.cacheHit:
		s.release()
	case s.encoded:
		// The backend compressed its answer although the filter asked it not
		// to: the usage cannot be read, and releasing would make the request
		// free. It is charged what it held.
		s.settleHeld()
	case s.streamed:
		if !s.sse.Completed() {
			s.cut()
			return
		}
		if _, ok := s.sse.Usage(); !ok && s.lostEvents() {
			s.settleHeld() // the usage may have been in what was lost
			return
		}
		if u, ok := s.sse.Usage(); ok {
			s.settle(u.Total(), u.Kinds())
			return
		}
		total := s.req.Input + s.sse.DeltaTokens()
		s.settle(total, s.kindsOf(total))
	case s.tooLarge:
		// Too large to read its usage (logprobs can make an answer huge):
		// charged what it held, never free.
		s.settleHeld()
	default:
		if u, ok := usage.FromJSON(s.api, s.body); ok {
			s.settle(u.Total(), u.Kinds())
			return
		}
		s.release()
	}
}

// lostEvents says the usage reader missed an event too large to read; a
// stream read only to be forwarded (an error answer) loses nothing.
func (s *Stream) lostEvents() bool {
	return s.split != nil && s.held && !s.failed && !s.cacheHit && !s.encoded && s.split.Lost()
}

// cut ends a hold whose answer stopped before its normal end: the client
// or the upstream reset, or the stream ended without its final event. By
// default (on_cut_stream "charge_seen") it is charged what it delivered, so
// reading an answer and resetting before its last event buys nothing; the
// seed's rule ("release") gives everything back.
func (s *Stream) cut() {
	if s.lostEvents() {
		// An event too large to read was dropped: it may have been the one
		// that ends the stream. Charged what it held rather than released.
		s.settleHeld()
		return
	}
	if s.rt.ReleaseCutStreams || s.failed || s.cacheHit {
		s.release() // an error answer or a cache hit costs nothing, cut or not
	} else {
		s.settle(s.delivered())
	}
	s.log.end = endCut
}

// delivered is what a cut answer consumed, as far as the filter saw it:
//   - a stream: the input the backend reported (else the estimate) plus the
//     larger of the output it reported and the deltas counted, since a usage
//     block seen mid-stream (Anthropic's message_start) may predate most of
//     the output;
//   - a non-streamed answer that had begun: its usage if the body was whole,
//     else its hold (the backend generates before it sends, and the usage
//     cannot be read);
//   - no answer yet: the input estimate, which the backend has read.
//
// The kinds are the same figure split for pricing: the backend's own split
// where it reported usage (the output raised to the deltas counted), else
// input up to the estimate and output the rest.
func (s *Stream) delivered() (int64, usage.Kinds) {
	switch {
	case s.encoded:
		return s.heldTokens(), s.kindsOf(s.heldTokens()) // unreadable, as at a normal end
	case s.streamed:
		input, output := s.req.Input, s.sse.DeltaTokens()
		if u, ok := s.sse.Usage(); ok {
			input, output = u.Total()-u.Output, max(u.Output, output)
			u.Output = output
			return input + output, u.Kinds()
		}
		return input + output, s.kindsOf(input + output)
	case s.answered:
		if u, ok := usage.FromJSON(s.api, s.body); ok && !s.tooLarge {
			return u.Total(), u.Kinds()
		}
		return s.heldTokens(), s.kindsOf(s.heldTokens())
	default:
		return s.req.Input, s.kindsOf(s.req.Input)
	}
}

// heldTokens is what "charged its hold" charges: the hold's token
// reservation, or the amount admission planned when no token bucket took
// one (a request under spend limits only is priced on the same figure).
func (s *Stream) heldTokens() int64 {
	if n, ok := s.hold.TokenReservation(); ok {
		return n
	}
	return s.planned
}

// settleHeld charges the hold when the usage cannot be read.
func (s *Stream) settleHeld() {
	t := s.heldTokens()
	s.settle(t, s.kindsOf(t))
}

// settle ends the hold on actual tokens; k is the same usage by kind, which
// prices the request when a spend limit applies.
func (s *Stream) settle(actual int64, k usage.Kinds) {
	s.chargeSpend(k)
	s.held = false
	s.body = nil
	s.log.end, s.log.usage = endSettled, actual
	reserved := s.hold.Reserved()
	for i := range s.hold.Entries {
		e := &s.hold.Entries[i]
		if actual < reserved {
			s.root.metrics.tokens(e, outcomeRefunded, reserved-actual)
		} else {
			s.root.metrics.tokens(e, outcomeCharged, actual-reserved)
		}
	}
	s.store.Settle(s.hold, actual)
}

func (s *Stream) release() {
	s.held = false
	s.body = nil
	s.log.end, s.log.usage = endReleased, 0
	for i := range s.hold.Entries {
		e := &s.hold.Entries[i]
		s.root.metrics.tokens(e, outcomeRefunded, e.Amount)
	}
	s.store.Release(s.hold)
}

// OnLog comes before OnDone: a hold still open here belongs to an answer
// that never reached its normal end, and ending it now lets the decision
// (with how the hold ended) reach the access log.
func (s *Stream) OnLog() {
	if s.held {
		s.cut()
	}
	if s.route {
		s.record()
	}
}

func (s *Stream) headerStyles() refusal.Styles {
	return refusal.Styles{OpenAI: s.rt.OpenAIHeaders, IETF: s.rt.IETFHeaders}
}

// failOpen notes a body admitted without a token reservation.
func (s *Stream) failOpen(reason string) {
	s.root.metrics.failOpen(reason)
	s.log.failOpen = reason
}

// OnDone is the host's word that the stream is over. A hold still open here
// belongs to a stream that never reached its normal end.
func (s *Stream) OnDone() {
	s.done = true
	if s.held {
		s.cut()
	}
}

func (s *Stream) OnDelete() {
	s.done = true
	delete(s.root.streams, s.id)
	s.root.recycle(s)
}

// hasPrefixFold is a case-insensitive strings.HasPrefix.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
