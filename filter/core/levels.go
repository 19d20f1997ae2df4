package core

import (
	"math"
	"sort"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/budget"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/remote"
)

// levelGauges write rate_limit_tokens_remaining on the tick: the levels of
// the token buckets no tenant owns (global, and per_model for each model
// the config names). Their series are fixed by the config, so cardinality
// stays bounded; no key's, user's or client's level is ever a series.
//
// Under storage "memory" the levels are read from shared data on every
// tick (a get per bucket). Under storage "redis" shared data holds only the
// fallback buckets, not the level every replica sees, so the tick asks
// sharedstore (POST /v1/levels, one call for all the buckets) every
// fleetLevelTicks ticks, one call at a time (DECISIONS.md, "The levels of
// the buckets no tenant owns").
type levelGauges struct {
	h abi.Host
	// plans are one plan per bucket owner: the global bucket (model "")
	// and each model's, built once per config.
	plans []levelPlan
	ids   map[string]uint32 // series name → host id
	// names are the series names built so far, so a tick builds none.
	names map[seriesKey]string

	// fleet is every plan's wanted token op in one plan, and models the
	// model of each ("" for global), for the fleet store's read.
	fleet    limit.Plan
	models   []string
	remote   *remote.Store
	ticks    int
	inflight bool
}

// fleetLevelTicks is how often the fleet store's levels are read: every
// 10 ticks, 5 s, well inside a scrape interval.
const fleetLevelTicks = 10

type levelPlan struct {
	model string
	plan  limit.Plan
}

// wants reports whether op is the bucket a plan is kept for.
func (lp *levelPlan) wants(d limit.Dimension) bool {
	if lp.model == "" {
		return d == limit.DimGlobal
	}
	return d == limit.DimModel
}

// levelsFor returns the gauges of rt (its fleet store rem under storage
// "redis"), nil when it has no such bucket.
func levelsFor(h abi.Host, rt *config.Runtime, rem *remote.Store) *levelGauges {
	if rt.Storage == config.StorageRedis && rem == nil {
		return nil
	}
	g := &levelGauges{h: h, ids: map[string]uint32{}, names: map[seriesKey]string{}}
	names := make([]string, 0, len(rt.Models))
	for name := range rt.Models {
		names = append(names, name)
	}
	sort.Strings(names)
	if !rt.Global.Tokens.Minute.Unlimited || !rt.Global.Tokens.Day.Unlimited {
		p, _ := budget.Plan(rt, budget.Identity{}, 0) // no identity: the global bucket alone
		g.plans = append(g.plans, levelPlan{plan: p})
	}
	for _, name := range names {
		if m := rt.ModelOf(name); m != nil && (!m.Tokens.Minute.Unlimited || !m.Tokens.Day.Unlimited) {
			p, _ := budget.Plan(rt, budget.Identity{Model: name}, 0)
			g.plans = append(g.plans, levelPlan{model: name, plan: p})
		}
	}
	if len(g.plans) == 0 {
		return nil
	}
	if rt.Storage == config.StorageRedis {
		g.remote = rem
		for i := range g.plans {
			lp := &g.plans[i]
			for _, op := range lp.plan.Tokens {
				if lp.wants(op.Dimension) {
					op.Amount = 0
					g.fleet.Tokens = append(g.fleet.Tokens, op)
					g.models = append(g.models, lp.model)
				}
			}
		}
		g.ticks = fleetLevelTicks - 1 // the first tick reads
	}
	return g
}

// write reads the levels from s, or asks the fleet store for them, and
// records each gauge.
func (g *levelGauges) write(s *local.Store) {
	if g == nil {
		return
	}
	if g.remote != nil {
		g.askFleet()
		return
	}
	if s == nil {
		return
	}
	for i := range g.plans {
		lp := &g.plans[i]
		s.TokenLevels(lp.plan, lp.wants, func(op *limit.Op, l limit.Limit, v float64) {
			if name := g.seriesName(op.Dimension, l.Budget, lp.model); name != "" {
				g.record(name, v)
			}
		})
	}
}

// askFleet sends the fleet store's read every fleetLevelTicks ticks, one at
// a time; a failed read leaves the gauges at their last value (the store's
// reachability has its own gauge).
func (g *levelGauges) askFleet() {
	if g.ticks++; g.ticks < fleetLevelTicks || g.inflight {
		return
	}
	g.ticks, g.inflight = 0, true
	g.remote.Levels(g.fleet, func(levels []limit.OpLevel, err error) {
		g.inflight = false
		if err != nil {
			return
		}
		at := 0
		for i, op := range g.fleet.Tokens {
			for range op.Limits {
				if at >= len(levels) {
					return
				}
				l := levels[at]
				at++
				if l.Dimension != op.Dimension {
					return // not the answer to this plan
				}
				if name := g.seriesName(l.Dimension, l.Budget, g.models[i]); name != "" {
					g.record(name, float64(l.Level.Remaining))
				}
			}
		}
	})
}

// The values of bucket_type: the dimension, then the period. They are part
// of the product's interface (alerts select them), like the family names.
const (
	bucketGlobalMinute   = "global_minute"
	bucketGlobalDay      = "global_day"
	bucketPerModelMinute = "per_model_minute"
	bucketPerModelDay    = "per_model_day"
)

// seriesKey names one gauge series.
type seriesKey struct {
	d     limit.Dimension
	p     limit.Period
	model string
}

// seriesName is the stat name of the gauge of d's bucket for period p (of
// model, for a per_model bucket); "" for one the gauge does not report.
func (g *levelGauges) seriesName(d limit.Dimension, p limit.Period, model string) string {
	k := seriesKey{d, p, model}
	if name, ok := g.names[k]; ok {
		return name
	}
	var bt string
	switch {
	case d == limit.DimGlobal && p == limit.PeriodMinute:
		bt = bucketGlobalMinute
	case d == limit.DimGlobal && p == limit.PeriodDay:
		bt = bucketGlobalDay
	case d == limit.DimModel && p == limit.PeriodMinute:
		bt = bucketPerModelMinute
	case d == limit.DimModel && p == limit.PeriodDay:
		bt = bucketPerModelDay
	default:
		return ""
	}
	name := metrics.Name(metrics.TokensRemaining, metrics.LabelBucketType, bt)
	if d == limit.DimModel {
		name = metrics.Name(metrics.TokensRemaining, metrics.LabelBucketType, bt, metrics.LabelModel, model)
	}
	g.names[k] = name
	return name
}

// record sets one gauge; a level below zero (a debt) reads as 0, since a
// host gauge is unsigned.
func (g *levelGauges) record(name string, v float64) {
	id, ok := g.ids[name]
	if !ok {
		hid, st := g.h.DefineMetric(abi.MetricGauge, name)
		if st != abi.StatusOK {
			return
		}
		id = hid
		g.ids[name] = id
	}
	g.h.RecordMetric(id, uint64(math.Max(0, math.Floor(v))))
}
