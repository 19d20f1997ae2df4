package config

// divider resolves a configured token budget into the allowance one replica
// enforces, per period, most authoritative source first:
//
//  1. configured 0: Unlimited (the operator's convention; never divided);
//  2. a present deployment share for the period: that share, for every
//     dimension whose configured budget for the period is nonzero (a share
//     of 0 is an authoritative zero allowance that refuses);
//  3. the budget_division.replicas hint: floor(configured / replicas), which
//     may be a zero allowance. While storage is "redis" the fleet buckets
//     carry the deployment total, so the hint does not divide them; it sizes
//     the replica-local fallback buckets instead (see fallbackDivider);
//  4. otherwise the configured value.
//
// The two periods are independent: a share for one leaves the other on the
// hint.
type divider struct {
	replicas           int64 // 0 = no hint in effect
	shareMin, shareDay *int64
}

func newDivider(c *Config) divider {
	return c.divider(c.RateLimiting.Storage != StorageRedis)
}

// fallbackDivider is the division of the replica-local buckets a replica
// admits on while the fleet store is unreachable (storage "redis" with
// fallback_to_memory): the division an in-memory deployment applies, so an
// outage admits about the configured total across the fleet rather than
// that total on every replica. ok is false when it would divide nothing the
// fleet division does not (no hint above one replica, or no fallback), so
// no second rule set is compiled.
func fallbackDivider(c *Config) (d divider, ok bool) {
	rl := &c.RateLimiting
	if rl.Storage != StorageRedis || rl.Redis == nil || !boolOr(rl.Redis.FallbackToMemory, defaultFallbackToMemory) {
		return divider{}, false
	}
	d = c.divider(true)
	return d, d.replicas > 1
}

// divider resolves the division sources; withHint says whether the
// replicas hint is in effect.
func (c *Config) divider(withHint bool) divider {
	var d divider
	rl := &c.RateLimiting
	if withHint && rl.BudgetDivision != nil && rl.BudgetDivision.Replicas != nil {
		if r := int64(*rl.BudgetDivision.Replicas); r >= 1 {
			d.replicas = r
		}
	}
	if s := c.DeploymentTokenBudget; s != nil {
		if s.ShareTokensPerMinute != nil {
			v := max(int64(*s.ShareTokensPerMinute), 0)
			d.shareMin = &v
		}
		if s.ShareTokensPerDay != nil {
			v := max(int64(*s.ShareTokensPerDay), 0)
			d.shareDay = &v
		}
	}
	return d
}

func (d divider) resolve(configured int64, share *int64) Allowance {
	switch {
	case configured <= 0:
		return Allowance{Unlimited: true}
	case share != nil:
		return Allowance{Capacity: *share}
	case d.replicas > 0:
		return Allowance{Capacity: configured / d.replicas}
	default:
		return Allowance{Capacity: configured}
	}
}

func (d divider) minute(configured int64) Allowance { return d.resolve(configured, d.shareMin) }
func (d divider) day(configured int64) Allowance    { return d.resolve(configured, d.shareDay) }

// asWritten is an override that keeps the operator's value: 0 disables the
// budget, anything else is the capacity, undivided.
func asWritten(v int64) Allowance {
	if v <= 0 {
		return Allowance{Unlimited: true}
	}
	return Allowance{Capacity: v}
}
