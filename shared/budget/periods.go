package budget

import (
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// unlimited is a dimension with nothing configured.
var unlimited = config.Rules{Tokens: config.TokenBudget{
	Minute: config.Allowance{Unlimited: true}, Day: config.Allowance{Unlimited: true},
}}

// anyModel is what a request without a model would have been charged
// somewhere: a token budget and request limits when any model has them. It
// only decides whether the model dimension counts as skipped.
func anyModel(rt *config.Runtime) config.Rules {
	r := unlimited
	for _, m := range rt.Models {
		if m.Tokens.Any() {
			r.Tokens.Minute.Unlimited = false
		}
		if m.Requests.Any() {
			r.Requests.PerMinute = 1
		}
	}
	return r
}

// requestPeriods counts the request-count periods in force.
func requestPeriods(q *config.RequestLimits) int {
	n := 0
	if q.PerSecond > 0 {
		n++
	}
	if q.PerMinute > 0 {
		n++
	}
	if q.PerDay > 0 {
		n++
	}
	return n
}

// putRequestLimits writes the request-count periods in force into limits
// from at on and returns where they end: the second bucket holds the burst
// and refills at the rate; minute and day hold one period of requests and
// refill it over the period.
func putRequestLimits(limits []limit.Limit, at int, q *config.RequestLimits) int {
	if q.PerSecond > 0 {
		burst := q.Burst
		if burst < 1 {
			burst = max(int64(q.PerSecond+0.999999999), 1)
		}
		putLimit(&limits[at], limit.PeriodSecond, burst, q.PerSecond)
		at++
	}
	if q.PerMinute > 0 {
		putLimit(&limits[at], limit.PeriodMinute, q.PerMinute, float64(q.PerMinute)/60)
		at++
	}
	if q.PerDay > 0 {
		putLimit(&limits[at], limit.PeriodDay, q.PerDay, float64(q.PerDay)/86400)
		at++
	}
	return at
}

// putLimit writes every field of a Limit into its slot.
func putLimit(l *limit.Limit, budget limit.Period, capacity int64, refillPerSec float64) {
	l.Budget, l.Capacity, l.RefillPerSec = budget, capacity, refillPerSec
}

// tokenPeriods counts the token periods in force (a zero allowance counts).
func tokenPeriods(tb *config.TokenBudget) int {
	n := 0
	if !tb.Minute.Unlimited {
		n++
	}
	if !tb.Day.Unlimited {
		n++
	}
	return n
}

// putTokenLimits writes the token periods in force into limits from at on
// and returns where they end: capacity is one period of the rate
// (spendable at once), refilled continuously over the period. A zero
// allowance gets capacity 0 and no refill, so it refuses.
func putTokenLimits(limits []limit.Limit, at int, tb *config.TokenBudget) int {
	if !tb.Minute.Unlimited {
		c := max(tb.Minute.Capacity, 0)
		putLimit(&limits[at], limit.PeriodMinute, c, float64(c)/60)
		at++
	}
	if !tb.Day.Unlimited {
		c := max(tb.Day.Capacity, 0)
		putLimit(&limits[at], limit.PeriodDay, c, float64(c)/86400)
		at++
	}
	return at
}

func tokensVersion(r *config.Rules) string {
	if r.TokensVersion != "" {
		return r.TokensVersion
	}
	return r.Version
}

func requestsVersion(r *config.Rules) string {
	if r.RequestsVersion != "" {
		return r.RequestsVersion
	}
	return r.Version
}

// keyLength is the length of a bucket key written by appendKey.
func keyLength(d *dimension, version string) int {
	return len("tb|x|") + len(d.dim.String()) + 1 + len(version) + 1 + len(d.identity)
}

// Bucket keys are "tb|<kind>|<dim>|<version>|<identity>". The version
// makes a parameter change start fresh buckets; the identity is the key
// hash for api_key, never the raw key.

// The kinds of bucket key, in the order of Buffers.prefixes.
const (
	keyRequests = iota
	keyConcurrency
	keyTokens
	keyRecord
	keyKinds
)

var keyKindByte = [keyKinds]byte{keyRequests: 'r', keyConcurrency: 'c', keyTokens: 't', keyRecord: 'q'}

// prefixMemo is a key prefix "tb|<kind>|<dim>|<version>|" and the
// version it was written for; a record key's prefix has two versions.
type prefixMemo struct{ version, version2, text string }

// appendKey appends the bucket key of kind for dimension i of the plan
// being built to b and returns it as a view of b. Buffers that planned
// before keep each prefix in a memo, which changes only with the version:
// in the VM writing it anew cost over a thousand instructions a key. A
// dimension without an identity (global) is then its prefix, and takes
// no room in b. A first plan keeps no memo, so a one-off Plan allocates
// none.
func (bu *Buffers) appendKey(b []byte, kind, i int, d *dimension, version string) ([]byte, string) {
	from := len(b)
	if m := &bu.prefixes[i][kind]; m.text != "" && m.version == version {
		if d.identity == "" {
			return b, m.text
		}
		b = append(b, m.text...)
	} else {
		b = append(b, "tb|"...)
		b = append(b, keyKindByte[kind], '|')
		b = append(b, d.dim.String()...)
		b = append(b, '|')
		b = append(b, version...)
		b = append(b, '|')
		if bu.warm {
			m.version, m.text = version, string(b[from:])
		}
	}
	b = append(b, d.identity...)
	return b, viewFrom(b, from)
}

// appendRecordKey appends the key of the record that holds dimension i's
// request counts and tokens together (limit.Op.Record),
// "tb|q|<dim>|<requests version>|<tokens version>|<identity>", as
// appendKey appends a bucket key. Both versions are in it: a reload that
// changes either budget of the dimension starts the record afresh.
func (bu *Buffers) appendRecordKey(b []byte, i int, d *dimension, requests, tokens string) ([]byte, string) {
	from := len(b)
	if m := &bu.prefixes[i][keyRecord]; m.text != "" && m.version == requests && m.version2 == tokens {
		b = append(b, m.text...)
	} else {
		b = append(b, "tb|q|"...)
		b = append(b, d.dim.String()...)
		b = append(b, '|')
		b = append(b, requests...)
		b = append(b, '|')
		b = append(b, tokens...)
		b = append(b, '|')
		if bu.warm {
			m.version, m.version2, m.text = requests, tokens, string(b[from:])
		}
	}
	b = append(b, d.identity...)
	return b, viewFrom(b, from)
}
