package wire

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

// The spend part of the protocol. USD spend rides in the same calls as the
// token budgets: the admission carries the request's spend identities,
// periods and limits (SpendAdmit) and the answer must carry a SpendVerdict;
// the settlement carries the inference record (SpendRecord) the ledger
// adds to its counters. Amounts are integer nano-USD (1 USD = 1e9), slots
// are spend.Slot names ("team_month", "api_key_day", "api_key_month",
// "user_day", "user_month"), periods are UTC keys (day YYYYMMDD, month
// YYYYMM) of the call's start.
//
// A service that does not check spend answers an admission that carries
// one without a verdict (or with checked false): the filter then treats
// the spend part as unavailable (limit.ErrSpendUnavailable), never
// as "no limit".

// SpendAdmit is the spend part of POST /v1/admit.
type SpendAdmit struct {
	Team   string `json:"team,omitempty"`
	APIKey string `json:"api_key,omitempty"`
	User   string `json:"user,omitempty"`
	// Start is the call's start at the gateway (Unix nanoseconds); Day and
	// Month are its UTC period keys, the counters the call is checked and
	// later counted in.
	Start int64 `json:"start_unix_nano"`
	Day   int64 `json:"day"`
	Month int64 `json:"month"`
	// Limits are the limits the filter's configuration sets for this
	// request, one per limited slot; every one must pass.
	Limits []SpendLimit `json:"limits"`
	// Fleet asks the service to check the limits and balance its ledger
	// stores for these identities too (a spend part with no limit of its
	// own is sent only then).
	Fleet bool `json:"fleet,omitempty"`
	// Reserve is the call's maximum cost, held on every limited counter
	// while it runs (limit.Spend.Reserve); 0 holds nothing.
	Reserve int64 `json:"reserve_nano_usd,omitempty"`
}

// SpendLimit is one slot's limit.
type SpendLimit struct {
	Slot         string `json:"slot"`
	LimitNanoUSD int64  `json:"limit_nano_usd"`
}

// SpendVerdict is the spend part of the admission's answer.
type SpendVerdict struct {
	// Checked is true when the service compared every limit with the usage
	// of the call's periods.
	Checked bool `json:"checked"`
	// Unavailable: the ledger could not read a limit's usage; the filter
	// answers 503 spend_store_unavailable.
	Unavailable bool `json:"unavailable,omitempty"`
	// Usage is each limited slot's spend before this request.
	Usage []SpendUsage `json:"usage,omitempty"`
	// Refusal names the limit that refused the request (Admitted false).
	Refusal *SpendExceeded `json:"refusal,omitempty"`
	// Left is what is left of every limit that applied (the stricter of
	// the filter's and the ledger's, slots the filter does not limit
	// included) and, slot SlotBalance, of the team's balance, before this
	// request's own reservation. The filter keeps it for its fallback and
	// never shows it to a caller.
	Left []SpendLeft `json:"left,omitempty"`
}

// SpendLeft is what is left of one slot's limit (or of the balance).
type SpendLeft struct {
	Slot        string `json:"slot"`
	LeftNanoUSD int64  `json:"left_nano_usd"`
}

// SpendUsage is one slot's spend so far in the call's period.
type SpendUsage struct {
	Slot        string `json:"slot"`
	UsedNanoUSD int64  `json:"used_nano_usd"`
}

// SlotBalance is the refusal "slot" of a team whose account balance is
// exhausted (at or below zero): the fleet store refuses every call of the
// team until it is topped up.
const SlotBalance = "balance"

// SpendExceeded is the refusing limit and the usage it met (Slot
// SlotBalance: the balance, LimitNanoUSD 0, UsedNanoUSD how far below zero
// it is).
type SpendExceeded struct {
	Slot         string `json:"slot"`
	LimitNanoUSD int64  `json:"limit_nano_usd"`
	UsedNanoUSD  int64  `json:"used_nano_usd"`
}

// SpendRecord is the inference record of POST /v1/settle: who spent, on
// which model, when the call started (its periods), the usage by kind and
// the filter's priced estimate, to add to every slot in Slots (the
// policy-bearing counters). The settlement's hold id identifies the record,
// so a retried settlement adds nothing twice.
type SpendRecord struct {
	Team        string     `json:"team,omitempty"`
	APIKey      string     `json:"api_key,omitempty"`
	User        string     `json:"user,omitempty"`
	Model       string     `json:"model,omitempty"`
	Start       int64      `json:"start_unix_nano"`
	Day         int64      `json:"day"`
	Month       int64      `json:"month"`
	Slots       []string   `json:"slots"`
	Usage       SpendKinds `json:"usage"`
	CostNanoUSD int64      `json:"cost_nano_usd"`
}

// SpendKinds is tokens.Kinds on the wire.
type SpendKinds struct {
	Input        int64 `json:"input"`
	CachedInput  int64 `json:"cached_input"`
	CacheWrite   int64 `json:"cache_write"`
	CacheWrite1h int64 `json:"cache_write_1h"`
	Output       int64 `json:"output"`
}

// SlotNamed is the slot a wire name stands for.
func SlotNamed(name string) (spend.Slot, bool) {
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// FromSpend is the spend part of a plan's admission; nil when no limit
// applies (the member is then absent).
func FromSpend(sp limit.Spend) *SpendAdmit {
	if !sp.Any() {
		return nil
	}
	a := &SpendAdmit{Team: sp.Policy.Team, APIKey: sp.Policy.APIKey, User: sp.Policy.User,
		Start: sp.Start, Day: int64(sp.Day.Key), Month: int64(sp.Month.Key), Fleet: sp.Fleet, Reserve: int64(max(sp.Reserve, 0))}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if l := sp.Policy.Limits[s]; l.Set {
			a.Limits = append(a.Limits, SpendLimit{Slot: s.String(), LimitNanoUSD: int64(l.Amount)})
		}
	}
	return a
}

// Spend is the plan's spend part the admission describes, its periods
// computed again from Start; an error when a slot is unknown, a limit
// negative, or Day and Month are not Start's periods.
func (a *SpendAdmit) Spend() (limit.Spend, error) {
	if a == nil {
		return limit.Spend{}, nil
	}
	day, month, ok := calendar.Both(a.Start)
	if !ok || int64(day.Key) != a.Day || int64(month.Key) != a.Month {
		return limit.Spend{}, errs.New("spend: day and month are not the periods of start_unix_nano")
	}
	if a.Reserve < 0 {
		return limit.Spend{}, errs.New("spend: reserve_nano_usd is negative")
	}
	sp := limit.Spend{Day: day, Month: month, Start: a.Start, Fleet: a.Fleet, Reserve: money.Amount(a.Reserve),
		Policy: spend.Policy{Team: a.Team, APIKey: a.APIKey, User: a.User}}
	for _, l := range a.Limits {
		s, ok := SlotNamed(l.Slot)
		if !ok || l.LimitNanoUSD < 0 {
			return limit.Spend{}, errs.New("spend: bad limit for slot " + jsonx.Quote(l.Slot))
		}
		sp.Policy.Limits[s] = spend.Limit{Amount: money.Amount(l.LimitNanoUSD), Set: true}
	}
	return sp, nil
}

// applySpend reads the verdict on a plan with a spend part into o. An
// absent, unchecked or unavailable verdict, or one that names a slot the
// plan does not limit, is ErrSpendUnavailable: nothing may pass a spend
// limit unchecked.
func (v *SpendVerdict) applySpend(o *limit.Outcome, p *spend.Policy) error {
	switch {
	case v == nil || !v.Checked:
		return errs.Wrap("sharedstore answered without checking spend", limit.ErrSpendUnavailable)
	case v.Unavailable:
		return errs.Wrap("sharedstore spend ledger", limit.ErrSpendUnavailable)
	}
	for _, u := range v.Usage {
		s, ok := SlotNamed(u.Slot)
		if !ok || !p.Limits[s].Set || u.UsedNanoUSD < 0 {
			return errs.Wrap("sharedstore spend usage for slot "+jsonx.Quote(u.Slot), limit.ErrSpendUnavailable)
		}
		o.Spend[s] = money.Amount(u.UsedNanoUSD)
	}
	for _, l := range v.Left {
		left := spend.Limit{Amount: money.Amount(max(l.LeftNanoUSD, 0)), Set: true}
		if l.Slot == SlotBalance {
			o.SpendLeft.Balance = left
			continue
		}
		s, ok := SlotNamed(l.Slot)
		if !ok {
			return errs.Wrap("sharedstore spend left for slot "+jsonx.Quote(l.Slot), limit.ErrSpendUnavailable)
		}
		o.SpendLeft.Left[s] = left
	}
	f := v.Refusal
	if f == nil {
		return nil
	}
	if f.Slot == SlotBalance {
		o.SpendRefusal = &spend.Exceeded{Balance: true, Used: money.Amount(f.UsedNanoUSD)}
	} else {
		// The service may refuse on a slot the filter does not limit: a
		// team's limits stored in the fleet ledger apply too.
		s, ok := SlotNamed(f.Slot)
		if !ok || (p.ID(s) == "" && s.Scope() != spend.Team) {
			return errs.Wrap("sharedstore spend refusal for slot "+jsonx.Quote(f.Slot), limit.ErrSpendUnavailable)
		}
		o.SpendRefusal = &spend.Exceeded{Slot: s, Limit: money.Amount(f.LimitNanoUSD), Used: money.Amount(f.UsedNanoUSD)}
	}
	if !o.Admitted() {
		// Spend (balance, then limits) is checked before any bucket: its
		// refusal is the verdict even when a bucket refusal rode along.
		o.Result = limit.ResultSpendRefused
	}
	return nil
}

// SpendOutcome reads the answer's spend part for a plan whose spend part
// is sp: the usage and any spend refusal into o. See applySpend for what
// is ErrSpendUnavailable.
func (r AdmitResponse) SpendOutcome(o *limit.Outcome, sp *limit.Spend) error {
	if !sp.Any() {
		return nil
	}
	return r.Spend.applySpend(o, &sp.Policy)
}

// RecordOf is the inference record a settlement of h carries; nil when
// the hold has no spend part.
func RecordOf(h limit.Hold) *SpendRecord {
	sp := &h.Spend
	if !sp.Any() {
		return nil
	}
	k := h.SpendUsage
	r := &SpendRecord{Team: sp.Policy.Team, APIKey: sp.Policy.APIKey, User: sp.Policy.User, Model: sp.Model,
		Start: sp.Start, Day: int64(sp.Day.Key), Month: int64(sp.Month.Key), CostNanoUSD: int64(h.SpendCost),
		Usage: SpendKinds{Input: k.Input, CachedInput: k.CachedInput, CacheWrite: k.CacheWrite, CacheWrite1h: k.CacheWrite1h, Output: k.Output}}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if sp.Policy.Limits[s].Set {
			r.Slots = append(r.Slots, s.String())
		}
	}
	return r
}

// Kinds is the record's usage by kind.
func (k SpendKinds) Kinds() tokens.Kinds {
	return tokens.Kinds{Input: k.Input, CachedInput: k.CachedInput, CacheWrite: k.CacheWrite, CacheWrite1h: k.CacheWrite1h, Output: k.Output}
}

// appendSpendAdmit writes a as json.Marshal does.
func appendSpendAdmit(dst []byte, a *SpendAdmit) []byte {
	dst = append(dst, '{')
	dst = appendOptString(dst, "team", a.Team)
	dst = appendOptString(dst, "api_key", a.APIKey)
	dst = appendOptString(dst, "user", a.User)
	dst = appendInt(dst, "start_unix_nano", a.Start)
	dst = appendInt(dst, "day", a.Day)
	dst = appendInt(dst, "month", a.Month)
	dst = append(dst, `,"limits":`...)
	if a.Limits == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, l := range a.Limits {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"slot":`...)
			dst = jsonx.AppendString(dst, l.Slot)
			dst = append(dst, `,"limit_nano_usd":`...)
			dst = jsonx.AppendInt(dst, l.LimitNanoUSD)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if a.Fleet {
		dst = append(dst, `,"fleet":true`...)
	}
	if a.Reserve != 0 {
		dst = appendInt(dst, "reserve_nano_usd", a.Reserve)
	}
	return append(dst, '}')
}

// appendSpendVerdict writes v as json.Marshal does.
func appendSpendVerdict(dst []byte, v *SpendVerdict) []byte {
	dst = append(dst, `{"checked":`...)
	dst = strconv.AppendBool(dst, v.Checked)
	if v.Unavailable {
		dst = append(dst, `,"unavailable":true`...)
	}
	if len(v.Usage) > 0 {
		dst = append(dst, `,"usage":[`...)
		for i, u := range v.Usage {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"slot":`...)
			dst = jsonx.AppendString(dst, u.Slot)
			dst = append(dst, `,"used_nano_usd":`...)
			dst = jsonx.AppendInt(dst, u.UsedNanoUSD)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if f := v.Refusal; f != nil {
		dst = append(dst, `,"refusal":{"slot":`...)
		dst = jsonx.AppendString(dst, f.Slot)
		dst = append(dst, `,"limit_nano_usd":`...)
		dst = jsonx.AppendInt(dst, f.LimitNanoUSD)
		dst = append(dst, `,"used_nano_usd":`...)
		dst = jsonx.AppendInt(dst, f.UsedNanoUSD)
		dst = append(dst, '}')
	}
	if len(v.Left) > 0 {
		dst = append(dst, `,"left":[`...)
		for i, l := range v.Left {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"slot":`...)
			dst = jsonx.AppendString(dst, l.Slot)
			dst = append(dst, `,"left_nano_usd":`...)
			dst = jsonx.AppendInt(dst, l.LeftNanoUSD)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendSpendRecord writes r as json.Marshal does.
func appendSpendRecord(dst []byte, r *SpendRecord) []byte {
	dst = append(dst, '{')
	dst = appendOptString(dst, "team", r.Team)
	dst = appendOptString(dst, "api_key", r.APIKey)
	dst = appendOptString(dst, "user", r.User)
	dst = appendOptString(dst, "model", r.Model)
	dst = appendInt(dst, "start_unix_nano", r.Start)
	dst = appendInt(dst, "day", r.Day)
	dst = appendInt(dst, "month", r.Month)
	dst = append(dst, `,"slots":`...)
	if r.Slots == nil {
		dst = append(dst, "null"...)
	} else {
		dst = jsonx.AppendStrings(dst, r.Slots)
	}
	u := r.Usage
	dst = append(dst, `,"usage":{"input":`...)
	dst = jsonx.AppendInt(dst, u.Input)
	dst = append(dst, `,"cached_input":`...)
	dst = jsonx.AppendInt(dst, u.CachedInput)
	dst = append(dst, `,"cache_write":`...)
	dst = jsonx.AppendInt(dst, u.CacheWrite)
	dst = append(dst, `,"cache_write_1h":`...)
	dst = jsonx.AppendInt(dst, u.CacheWrite1h)
	dst = append(dst, `,"output":`...)
	dst = jsonx.AppendInt(dst, u.Output)
	dst = append(dst, `},"cost_nano_usd":`...)
	dst = jsonx.AppendInt(dst, r.CostNanoUSD)
	return append(dst, '}')
}

// appendOptString writes `"name":"v",` style members of an object that
// always has a later member: an omitempty string, followed by a comma.
func appendOptString(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	dst = append(dst, `":`...)
	dst = jsonx.AppendString(dst, v)
	return append(dst, ',')
}

// appendInt writes `"name":n`, preceded by a comma unless it opens the
// object (dst ends in '{' or ',').
func appendInt(dst []byte, name string, n int64) []byte {
	if l := len(dst); l > 0 && dst[l-1] != '{' && dst[l-1] != ',' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	dst = append(dst, `":`...)
	return jsonx.AppendInt(dst, n)
}

// decodeSpendVerdictPtr reads the answer's spend member (names matched
// case-insensitively, null clears, as the rest of the answer).
func decodeSpendVerdictPtr(v jsonx.Value, p **SpendVerdict) error {
	if v.Kind == jsonx.Null {
		*p = nil
		return nil
	}
	if v.Kind != jsonx.Object {
		return typeError("spend", v)
	}
	if *p == nil {
		*p = &SpendVerdict{}
	}
	d := *p
	return decodeObject(v, "spend", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "checked":
			return decodeBool(val, "spend.checked", &d.Checked)
		case "unavailable":
			return decodeBool(val, "spend.unavailable", &d.Unavailable)
		case "usage":
			return decodeSlice(val, "spend.usage", &d.Usage, func(v jsonx.Value, u *SpendUsage) error {
				return decodeObject(v, "spend.usage[]", func(key []byte, val jsonx.Value) error {
					switch string(key) {
					case "slot":
						return decodeString(val, "spend.usage[].slot", &u.Slot)
					case "used_nano_usd":
						return decodeInt(val, "spend.usage[].used_nano_usd", &u.UsedNanoUSD)
					}
					return nil
				})
			})
		case "left":
			return decodeSlice(val, "spend.left", &d.Left, func(v jsonx.Value, l *SpendLeft) error {
				return decodeObject(v, "spend.left[]", func(key []byte, val jsonx.Value) error {
					switch string(key) {
					case "slot":
						return decodeString(val, "spend.left[].slot", &l.Slot)
					case "left_nano_usd":
						return decodeInt(val, "spend.left[].left_nano_usd", &l.LeftNanoUSD)
					}
					return nil
				})
			})
		case "refusal":
			if val.Kind == jsonx.Null {
				d.Refusal = nil
				return nil
			}
			if val.Kind != jsonx.Object {
				return typeError("spend.refusal", val)
			}
			if d.Refusal == nil {
				d.Refusal = &SpendExceeded{}
			}
			f := d.Refusal
			return decodeObject(val, "spend.refusal", func(key []byte, val jsonx.Value) error {
				switch string(key) {
				case "slot":
					return decodeString(val, "spend.refusal.slot", &f.Slot)
				case "limit_nano_usd":
					return decodeInt(val, "spend.refusal.limit_nano_usd", &f.LimitNanoUSD)
				case "used_nano_usd":
					return decodeInt(val, "spend.refusal.used_nano_usd", &f.UsedNanoUSD)
				}
				return nil
			})
		}
		return nil
	})
}

// decodeSpendAdmitPtr reads the admission's spend member (exact names, as
// the rest of the request).
func decodeSpendAdmitPtr(v jsonx.Value, p **SpendAdmit) error {
	if v.Kind == jsonx.Null {
		*p = nil
		return nil
	}
	if v.Kind != jsonx.Object {
		return typeError("spend", v)
	}
	if *p == nil {
		*p = &SpendAdmit{}
	}
	a := *p
	return decodeObject(v, "spend", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "team":
			return decodeString(val, "spend.team", &a.Team)
		case "api_key":
			return decodeString(val, "spend.api_key", &a.APIKey)
		case "user":
			return decodeString(val, "spend.user", &a.User)
		case "start_unix_nano":
			return decodeInt(val, "spend.start_unix_nano", &a.Start)
		case "day":
			return decodeInt(val, "spend.day", &a.Day)
		case "month":
			return decodeInt(val, "spend.month", &a.Month)
		case "fleet":
			return decodeBool(val, "spend.fleet", &a.Fleet)
		case "reserve_nano_usd":
			return decodeInt(val, "spend.reserve_nano_usd", &a.Reserve)
		case "limits":
			return decodeSlice(val, "spend.limits", &a.Limits, func(v jsonx.Value, l *SpendLimit) error {
				return decodeObject(v, "spend.limits[]", func(key []byte, val jsonx.Value) error {
					switch string(key) {
					case "slot":
						return decodeString(val, "spend.limits[].slot", &l.Slot)
					case "limit_nano_usd":
						return decodeInt(val, "spend.limits[].limit_nano_usd", &l.LimitNanoUSD)
					}
					return nil
				})
			})
		}
		return nil
	})
}

// decodeSpendRecordPtr reads the settlement's spend member (exact names).
func decodeSpendRecordPtr(v jsonx.Value, p **SpendRecord) error {
	if v.Kind == jsonx.Null {
		*p = nil
		return nil
	}
	if v.Kind != jsonx.Object {
		return typeError("spend", v)
	}
	if *p == nil {
		*p = &SpendRecord{}
	}
	r := *p
	return decodeObject(v, "spend", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "team":
			return decodeString(val, "spend.team", &r.Team)
		case "api_key":
			return decodeString(val, "spend.api_key", &r.APIKey)
		case "user":
			return decodeString(val, "spend.user", &r.User)
		case "model":
			return decodeString(val, "spend.model", &r.Model)
		case "start_unix_nano":
			return decodeInt(val, "spend.start_unix_nano", &r.Start)
		case "day":
			return decodeInt(val, "spend.day", &r.Day)
		case "month":
			return decodeInt(val, "spend.month", &r.Month)
		case "slots":
			return decodeSlice(val, "spend.slots", &r.Slots, func(v jsonx.Value, s *string) error {
				return decodeString(v, "spend.slots[]", s)
			})
		case "usage":
			u := &r.Usage
			return decodeObject(val, "spend.usage", func(key []byte, val jsonx.Value) error {
				switch string(key) {
				case "input":
					return decodeInt(val, "spend.usage.input", &u.Input)
				case "cached_input":
					return decodeInt(val, "spend.usage.cached_input", &u.CachedInput)
				case "cache_write":
					return decodeInt(val, "spend.usage.cache_write", &u.CacheWrite)
				case "cache_write_1h":
					return decodeInt(val, "spend.usage.cache_write_1h", &u.CacheWrite1h)
				case "output":
					return decodeInt(val, "spend.usage.output", &u.Output)
				}
				return nil
			})
		case "cost_nano_usd":
			return decodeInt(val, "spend.cost_nano_usd", &r.CostNanoUSD)
		}
		return nil
	})
}
