package exchange

// Names for the tests' failure messages and effect lines; the module never
// prints a phase or an effect.

var phaseNames = [...]string{"start", "pass_through", "exempt", "body", "admitting", "forwarded", "replied", "done"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "phase(" + itoa64(int64(p)) + ")"
}

var effectNames = [...]string{
	RemoveRequestHeader: "remove_request_header", SetRequestBody: "set_request_body", LocalReply: "local_reply",
	Admit: "admit", ResumeRequest: "resume_request", Settle: "settle", Release: "release",
	SetResponseHeaders: "set_response_headers", SetResponseBody: "set_response_body", RecordDecision: "record_decision",
	CountRequest: "count_request", CountSkipped: "count_skipped", CountFailOpen: "count_fail_open",
	CountTokens: "count_tokens", CountRefusal: "count_refusal", CountShadowRefusal: "count_shadow_refusal",
	CountSpendRefusal: "count_spend_refusal", CountSpendUSD: "count_spend_usd",
}

func (k EffectKind) String() string {
	if int(k) < len(effectNames) && effectNames[k] != "" {
		return effectNames[k]
	}
	return "effect(" + itoa64(int64(k)) + ")"
}
