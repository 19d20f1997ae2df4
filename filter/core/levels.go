package core

import (
	"math"
	"sort"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/budget"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
	"github.com/tokenbudget/tokenbudget/sharedstore"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
)

// levelGauges write rate_limit_tokens_remaining on the tick: the levels of
// the token buckets no tenant owns (global, and per_model for each model
// the config names), read from shared data. Their series are fixed by the
// config, so cardinality stays bounded; no key's, user's or client's level
// is ever a series.
//
// Under storage "redis" the shared level lives in Redis and shared data
// holds only the fallback buckets, which are not what every replica sees:
// the gauges are not written there (DECISIONS.md, "The levels of the
// buckets no tenant owns").
type levelGauges struct {
	h abi.Host
	// plans are one plan per model named (the global bucket rides in the
	// first), built once per config with the models' identities only.
	plans []levelPlan
	ids   map[string]uint32 // series name → host id
}

type levelPlan struct {
	model string
	plan  sharedstore.Plan
}

// levelsFor returns the gauges of rt, nil when it has no such bucket or
// its buckets are the fleet store's.
func levelsFor(h abi.Host, rt *config.Runtime) *levelGauges {
	if rt.Storage == config.StorageRedis {
		return nil
	}
	g := &levelGauges{h: h, ids: map[string]uint32{}}
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
	return g
}

// write reads the levels from s and records each gauge.
func (g *levelGauges) write(s *local.Store) {
	if g == nil || s == nil {
		return
	}
	for i := range g.plans {
		lp := &g.plans[i]
		s.TokenLevels(lp.plan, func(d sharedstore.Dimension) bool {
			if lp.model == "" {
				return d == limit.DimGlobal
			}
			return d == limit.DimModel
		}, func(op *sharedstore.Op, l sharedstore.Limit, v float64) {
			if name := g.seriesName(op.Dimension, l.Budget, lp.model); name != "" {
				g.record(name, v)
			}
		})
	}
}

// The values of bucket_type: the dimension, then the period. They are part
// of the product's interface (alerts select them), like the family names.
const (
	bucketGlobalMinute   = "global_minute"
	bucketGlobalDay      = "global_day"
	bucketPerModelMinute = "per_model_minute"
	bucketPerModelDay    = "per_model_day"
)

func (g *levelGauges) seriesName(d limit.Dimension, p limit.Period, model string) string {
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
	if d == limit.DimModel {
		return metrics.Name(metrics.TokensRemaining, metrics.LabelBucketType, bt, metrics.LabelModel, model)
	}
	return metrics.Name(metrics.TokensRemaining, metrics.LabelBucketType, bt)
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
