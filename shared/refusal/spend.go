package refusal

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// SpendRefusal renders the 429 of an exhausted spend limit:
//
//	{"error":{"type":"insufficient_quota","code":"spend_limit_exceeded",
//	  "message":"API Key daily spend limit exceeded.",
//	  "details":{"scope":"api_key","period":"day","period_end":"2026-09-09T00:00:00Z",
//	             "limit_usd":"5.00","usage_usd":"5.02"}}}
//
// periodEnd is the Unix second the refusing period ends (the Window of the
// call's start). limit_usd and usage_usd appear only when the refusing
// limit is the caller's own key's; a team's or user's spend is not the
// caller's to read. x-should-retry is false and there is no Retry-After:
// retrying before period_end cannot succeed, and the SDKs would otherwise
// retry at once.
func SpendRefusal(ex spend.Exceeded, periodEnd int64) (status int, body []byte, headers []Header) {
	if ex.Balance {
		return BalanceExhausted()
	}
	body = make([]byte, 0, 256)
	body = append(body, `{"error":{"type":"insufficient_quota","code":"spend_limit_exceeded","message":`...)
	body = appendJSONString(body, ex.Slot.Label()+" spend limit exceeded.")
	body = append(body, `,"details":{"scope":`...)
	body = appendJSONString(body, ex.Slot.Scope().String())
	body = append(body, `,"period":`...)
	body = appendJSONString(body, ex.Slot.Period().String())
	body = append(body, `,"period_end":"`...)
	body = calendar.AppendRFC3339(body, periodEnd)
	body = append(body, '"')
	if ex.Slot.Scope() == spend.APIKey {
		body = append(body, `,"limit_usd":"`...)
		body = money.AppendUSD(body, int64(ex.Limit))
		body = append(body, `","usage_usd":"`...)
		body = money.AppendUSD(body, int64(ex.Used))
		body = append(body, '"')
	}
	body = append(body, "}}}"...)
	return 429, body, []Header{{"content-type", "application/json"}, noRetry}
}

// BalanceExhausted renders the 429 of a team whose account balance is at
// or below zero, shaped like a spend refusal; it names no amount (the
// team's balance is not the caller's to read) and no period (only a top-up
// ends it), and says not to retry.
func BalanceExhausted() (status int, body []byte, headers []Header) {
	return 429, []byte(`{"error":{"type":"insufficient_quota","code":"balance_exhausted","message":"Team balance exhausted."}}`),
		[]Header{{"content-type", "application/json"}, noRetry}
}

// spendHeaderNames are the success headers of the caller's own key limits.
var spendHeaderNames = [2][3]string{
	{"x-spend-day-limit-usd", "x-spend-day-remaining-usd", "x-spend-day-reset"},
	{"x-spend-month-limit-usd", "x-spend-month-remaining-usd", "x-spend-month-reset"},
}

// AppendSpendHeaders appends the spend headers of an admitted request: for
// each configured limit of the caller's own key (day, month), the limit,
// what remains before this request's own cost (known only at its end;
// never below 0) in decimal USD, and the Unix second the period resets.
// Team and user limits are never shown, like shared token buckets. day and
// month are the windows of the call's start.
func AppendSpendHeaders(dst []Header, p *spend.Policy, used *spend.Usage, day, month calendar.Window) []Header {
	slots := [2]spend.Slot{spend.KeyDay, spend.KeyMonth}
	windows := [2]calendar.Window{day, month}
	// All values go in one string, sliced per header: one allocation for
	// the six values rather than one each.
	var buf [2 * 3 * 24]byte
	var ends [2 * 3]int
	var shown [2]bool
	b := buf[:0]
	for i, s := range slots {
		l := p.Limits[s]
		if !l.Set {
			continue
		}
		shown[i] = true
		b = money.AppendUSD(b, int64(l.Amount))
		ends[3*i] = len(b)
		b = money.AppendUSD(b, int64(max(l.Amount-used[s], 0)))
		ends[3*i+1] = len(b)
		b = strconv.AppendInt(b, windows[i].End, 10)
		ends[3*i+2] = len(b)
	}
	if len(b) == 0 {
		return dst
	}
	values := string(b)
	start := 0
	for i := range slots {
		if !shown[i] {
			continue
		}
		for k, name := range spendHeaderNames[i] {
			end := ends[3*i+k]
			dst = append(dst, Header{name, values[start:end]})
			start = end
		}
	}
	return dst
}

// PriceEntryHeader names the pricing entry an admitted request is priced
// at: the model's own entry, the one its spelling resolved to (gpt-4o for
// gpt-4o-2024-08-06), or "default".
const PriceEntryHeader = "x-spend-price-entry"

// AppendPriceEntry appends PriceEntryHeader when entry can be a header
// value as it is (visible ASCII; a config's model name is anything).
func AppendPriceEntry(dst []Header, entry string) []Header {
	if entry == "" || len(entry) > maxModelInMessage {
		return dst
	}
	for i := 0; i < len(entry); i++ {
		if c := entry[i]; c <= ' ' || c >= 0x7f {
			return dst
		}
	}
	return append(dst, Header{PriceEntryHeader, entry})
}

// maxModelInMessage bounds how much of a client-chosen model name the
// model_not_priced message echoes.
const maxModelInMessage = 200

// ModelNotPriced renders the 400 of a request a spend limit applies to for
// a model the price list cannot price (no entry of its own and no default):
// charging it $0 would let it past every limit, and waiting cannot help.
func ModelNotPriced(model string) (status int, body []byte, headers []Header) {
	if len(model) > maxModelInMessage {
		model = model[:maxModelInMessage] + "…"
	}
	return Invalid("model_not_priced", "model",
		"No price is configured for model \""+model+"\", and a spend limit applies to this request; ask the operator to add it to the pricing section.")
}

// SpendUnavailable renders the answer while the spend ledger cannot say
// whether a limit has room (the fleet store failed its lookup): 503 with a
// Retry-After, shaped like Unavailable.
func SpendUnavailable(retryAfterSec int64) (status int, body []byte, headers []Header) {
	retry := strconv.FormatInt(max(retryAfterSec, 1), 10)
	body = make([]byte, 0, 224)
	body = append(body, `{"error":{"type":"service_unavailable","code":"spend_store_unavailable","message":`...)
	body = appendJSONString(body, "The spend-limit store is unavailable. Retry after "+retry+" seconds.")
	body = append(body, `,"details":{"retry_after_seconds":`...)
	body = append(body, retry...)
	body = append(body, "}}}"...)
	return 503, body, []Header{{"content-type", "application/json"}, {"retry-after", retry}}
}
