package budget

import (
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// FallbackPlan is plan as the replica-local buckets enforce it while the
// fleet store is unreachable: the same request and identity planned on
// rt.Fallback(), whose token budgets are divided as an in-memory deployment
// divides them, so an outage does not hand every replica the whole fleet
// budget. It returns plan unchanged when rt has no fallback rules, or when
// plan was not made by Plan (its keys do not read back).
//
// It runs only on the outage path: the identity is read back from the
// plan's own bucket keys ("tb|<kind>|<dimension>|<version>|<identity>"),
// which Plan writes, so the request path keeps nothing extra for it.
func FallbackPlan(rt *config.Runtime, plan limit.Plan) limit.Plan {
	if rt == nil || rt.Fallback() == nil {
		return plan
	}
	var id Identity
	amount := int64(0)
	for _, group := range [2][]limit.Op{plan.Requests, plan.Tokens} {
		for i := range group {
			op := &group[i]
			dim, who, ok := splitKey(op.Key)
			if !ok || dim != op.Dimension.String() {
				return plan
			}
			switch op.Dimension {
			case limit.DimGlobal:
			case limit.DimClient:
				id.Client = who
			case limit.DimAPIKey:
				id.APIKeyHash = who
			case limit.DimUser:
				id.User = who
			case limit.DimTeam:
				id.Team = who
			case limit.DimModel:
				id.Model = who
			default:
				return plan
			}
			if op.Kind == limit.KindTokens {
				amount = op.Amount
			}
		}
	}
	fb := rt.Fallback()
	if id.APIKeyHash != "" {
		id.Key = fb.Key(id.APIKeyHash)
	}
	out, _ := Plan(fb, id, amount)
	// Spend limits are not divided: the local counters check the same
	// limits and periods the fleet would have.
	out.Spend = plan.Spend
	return out
}

// splitKey reads a bucket key written by appendKey back into its dimension
// and identity. The identity is everything after the fourth bar, so an
// identity that contains a bar (a user name, say) reads back whole.
func splitKey(key string) (dim, identity string, ok bool) {
	rest, ok := strings.CutPrefix(key, "tb|")
	if !ok || len(rest) < 2 || rest[1] != '|' {
		return "", "", false
	}
	rest = rest[2:]
	dim, rest, ok = strings.Cut(rest, "|")
	if !ok {
		return "", "", false
	}
	_, identity, ok = strings.Cut(rest, "|")
	return dim, identity, ok
}
