// Package metrics names the filter's counters and says how their labels are
// carried. proxy-wasm metrics have no labels: like every Envoy extension the
// filter folds them into the stat name as "_<label>=<value>" segments, and
// Envoy's stats_config.stats_tags rules (TagRules, also written into
// envoy/envoy.yaml) lift them back out as Prometheus labels. One package owns
// both halves so the names and the extraction rules cannot drift apart.
package metrics

// Counter families. Their names are part of the product's interface:
// dashboards and alerts select them, so they do not change.
const (
	TokenBudgetTokens        = "rate_limit_token_budget_tokens_total"          // {dimension,outcome}
	TokenBudgetPeriodTokens  = "rate_limit_token_budget_period_tokens_total"   // {dimension,budget,outcome}
	TokenBudgetRefusals      = "rate_limit_token_budget_refusals_total"        // {dimension}
	TokenBudgetPeriodRefusal = "rate_limit_token_budget_period_refusals_total" // {dimension,budget}
	Exceeded                 = "rate_limit_exceeded_total"                     // {limit_type}
	Skipped                  = "rate_limit_skipped_total"                      // {dimension}
	RedisUnavailable         = "rate_limit_redis_unavailable_total"            // {dimension,action}
	// ShadowRefusals counts the refusals a dimension in shadow mode would
	// have made; the request was admitted.
	ShadowRefusals = "rate_limit_shadow_refusals_total" // {dimension,limit_type}
	// StoreReachable is a gauge: 1 while the fleet store answers, 0 from
	// its first failed admission until one succeeds again.
	StoreReachable = "rate_limit_store_reachable"
	// BucketMapFill is a gauge: how full a bucket map is, in percent of
	// max_buckets, by map family under the dimension label (token_budget,
	// token_budget_day, requests), as the map that last made a bucket was.
	BucketMapFill = "rate_limit_bucket_map_fill_percent" // {dimension}
	// FailOpen counts requests admitted with no token reservation because
	// the body could not be read (reason=body_too_large, not_json, no_body).
	FailOpen = "rate_limit_token_budget_fail_open_total" // {reason}
	// Requests counts requests on the text-generation routes by outcome
	// (admitted, refused, exempt, unavailable, invalid, unauthorized).
	Requests = "rate_limit_requests_total" // {outcome}
	// SpendRefusals counts requests a USD spend limit refused, by the
	// refusing limit's scope (team, api_key, user) and period (day, month).
	SpendRefusals = "rate_limit_spend_refusals_total" // {scope,period}
	// SpendUSD counts spend in nano-USD (1 USD = 1,000,000,000), not
	// dollars: Envoy counters are integers and money is never a float. Each
	// request's cost is added once per scope it was counted under (a
	// request under a key and a team limit adds to both series). Divide by
	// 1e9 for dollars.
	SpendUSD = "rate_limit_spend_usd_total" // {scope}, nano-USD
	// StoreCallsDropped counts settlements and releases the fleet store
	// never took within their retry window (the buckets recover by
	// refill); SpendRecordsDropped counts the settlements among them that
	// carried an inference record, whose spend the fleet ledger never saw.
	StoreCallsDropped   = "rate_limit_store_calls_dropped_total"
	SpendRecordsDropped = "rate_limit_spend_records_dropped_total"
	// TokensRemaining is a gauge: the level of each token bucket no tenant
	// owns, written on the tick. bucket_type is the dimension and the
	// period: global_minute, global_day, per_model_minute, per_model_day;
	// a per_model bucket also carries its model, so the series are bounded
	// by the configured models.
	TokensRemaining = "rate_limit_tokens_remaining" // {bucket_type[,model]}
)

// Label names, in the order they appear in a stat name.
const (
	LabelDimension = "dimension"
	LabelBudget    = "budget"
	LabelOutcome   = "outcome"
	LabelLimitType = "limit_type"
	LabelAction    = "action"
	LabelReason    = "reason"
	LabelScope     = "scope"
	LabelPeriod    = "period"
	// LabelBucketType and LabelModel label TokensRemaining.
	LabelBucketType = "bucket_type"
	LabelModel      = "model"
)

// labelOrder is the only order Name writes labels in; TagRules relies on it
// to know which label can follow which.
var labelOrder = []string{LabelDimension, LabelBudget, LabelOutcome, LabelLimitType, LabelAction, LabelReason, LabelScope, LabelPeriod,
	LabelBucketType, LabelModel}

// Name folds label values into a stat name. Pairs are given as
// label, value, label, value... and are written in labelOrder whatever the
// argument order, so one series always has one name.
func Name(family string, pairs ...string) string {
	n := len(family)
	for i := 1; i < len(pairs); i += 2 {
		n += len(pairs[i-1]) + len(pairs[i]) + 2
	}
	b := make([]byte, 0, n)
	b = append(b, family...)
	for _, label := range labelOrder {
		for i := 1; i < len(pairs); i += 2 {
			if pairs[i-1] == label {
				b = append(b, '_')
				b = append(b, label...)
				b = append(b, '=')
				b = append(b, pairs[i]...)
			}
		}
	}
	return string(b)
}

// TagRule is one Envoy stats_tags entry: the first capture group is cut
// from the stat name, the nested group is the tag's value.
type TagRule struct {
	Name  string
	Regex string
}

// TagRules returns the stats_tags rules that undo Name. A value may contain
// underscores (token_budget_api_key), so each rule stops lazily at the next
// known label or the end of the name; RE2 has no lookahead, and the
// terminator sits outside the first group so Envoy leaves it in the name for
// the next rule.
func TagRules() []TagRule {
	rules := make([]TagRule, 0, len(labelOrder))
	for i, label := range labelOrder {
		next := ""
		for _, l := range labelOrder[i+1:] {
			if next != "" {
				next += "|"
			}
			next += l
		}
		term := "$"
		if next != "" {
			term = "(?:_(?:" + next + ")=|$)"
		}
		rules = append(rules, TagRule{Name: label, Regex: "(_" + label + "=([a-zA-Z0-9_.:-]+?))" + term})
	}
	return rules
}
