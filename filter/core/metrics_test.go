package core

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/filter/sdkhost"
	"github.com/tokenbudget/tokenbudget/shared/exchange"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

func entry(dim limit.Dimension, budgets ...limit.Period) *limit.HoldEntry {
	e := &limit.HoldEntry{Kind: limit.KindTokens, Dimension: dim}
	for _, b := range budgets {
		e.Limits = append(e.Limits, limit.Limit{Budget: b})
	}
	return e
}

// emulated is the binding's host over the SDK's emulator, which keeps
// the metrics.
type emulated struct {
	abi.Host
	emu proxytest.HostEmulator
}

func newEmulated(t *testing.T) emulated {
	emu, reset := proxytest.NewHostEmulator(proxytest.NewEmulatorOption().WithVMContext(&types.DefaultVMContext{}))
	t.Cleanup(reset)
	return emulated{sdkhost.New(nil), emu}
}

// Metric is a counter's value by name, as the host holds it.
func (e emulated) Metric(name string) (int64, bool) {
	v, err := e.emu.GetCounterMetric(name)
	return int64(v), err == nil
}

// The remembered series must count exactly what naming each series would:
// the period series per Limit, the total once per Limit, on known and
// unknown label values alike, however often they move.
func TestTokenSeriesCountTheSameWhetherRememberedOrNamed(t *testing.T) {
	h := newEmulated(t)
	m := newMetricSet(h)
	for range 3 {
		m.CountTokens(entry(limit.DimAPIKey, limit.PeriodMinute, limit.PeriodDay), exchange.TokensReserved, 100)
		m.CountTokens(entry(limit.DimAPIKey, limit.PeriodMinute, limit.PeriodDay), exchange.TokensRefunded, 30)
		m.CountTokens(entry(limit.Dimension(99), limit.PeriodMinute, limit.Period(99)), exchange.TokensCharged, 7) // values outside the named dimensions and periods
		m.CountTokens(entry(limit.DimGlobal, limit.PeriodMinute), exchange.TokenMovement(9), 5)                    // a movement no constant names
	}
	m.CountTokens(entry(limit.DimAPIKey, limit.PeriodMinute), exchange.TokensReserved, 0)
	m.CountTokens(&limit.HoldEntry{Kind: limit.KindConcurrency, Dimension: limit.DimAPIKey, Limits: []limit.Limit{{Budget: limit.PeriodConcurrent}}}, exchange.TokensReserved, 1)
	m.CountRequest(exchange.OutcomeAdmitted)
	m.CountRequest(exchange.OutcomeAdmitted)
	m.CountRequest(exchange.OutcomeRefused)
	m.flush()

	for _, c := range []struct {
		want  int64
		name  string
		pairs []string
	}{
		{300, metrics.TokenBudgetPeriodTokens, []string{metrics.LabelDimension, "api_key", metrics.LabelBudget, "minute", metrics.LabelOutcome, "reserved"}},
		{300, metrics.TokenBudgetPeriodTokens, []string{metrics.LabelDimension, "api_key", metrics.LabelBudget, "day", metrics.LabelOutcome, "reserved"}},
		{600, metrics.TokenBudgetTokens, []string{metrics.LabelDimension, "api_key", metrics.LabelOutcome, "reserved"}},
		{180, metrics.TokenBudgetTokens, []string{metrics.LabelDimension, "api_key", metrics.LabelOutcome, "refunded"}},
		{21, metrics.TokenBudgetPeriodTokens, []string{metrics.LabelDimension, "unknown", metrics.LabelBudget, "unknown", metrics.LabelOutcome, "charged"}},
		{42, metrics.TokenBudgetTokens, []string{metrics.LabelDimension, "unknown", metrics.LabelOutcome, "charged"}},
		{15, metrics.TokenBudgetTokens, []string{metrics.LabelDimension, "global", metrics.LabelOutcome, "unknown"}},
		{2, metrics.Requests, []string{metrics.LabelOutcome, "admitted"}},
		{1, metrics.Requests, []string{metrics.LabelOutcome, "refused"}},
	} {
		got, ok := h.Metric(metrics.Name(c.name, c.pairs...))
		require.True(t, ok, "%s %v", c.name, c.pairs)
		require.Equal(t, c.want, got, "%s %v", c.name, c.pairs)
	}
	_, ok := h.Metric(metrics.Name(metrics.TokenBudgetTokens, metrics.LabelDimension, "api_key", metrics.LabelOutcome, "charged"))
	require.False(t, ok, "a series that never moved is never defined")
}

func TestATotalTooLargeForOneIncrementIsAddedPerPeriod(t *testing.T) {
	h := newEmulated(t)
	m := newMetricSet(h)
	big := int64(math.MaxInt64/2 + 1)
	m.CountTokens(entry(limit.DimAPIKey, limit.PeriodMinute, limit.PeriodDay), exchange.TokensReserved, big)
	m.flush()
	got, ok := h.Metric(metrics.Name(metrics.TokenBudgetTokens, metrics.LabelDimension, "api_key", metrics.LabelOutcome, "reserved"))
	require.True(t, ok)
	require.Equal(t, big+big, got, "two increments of big, wrapping in the host as they would one by one")
}

// Increments are summed in the VM and reach the host in one call per
// series on the root's tick, and when the root is done, so nothing counted
// is lost and a request makes no metric host call of its own.
func TestMetricIncrementsReachTheHostOnTheTickAndWhenTheRootIsDone(t *testing.T) {
	name := metrics.Name(metrics.Requests, metrics.LabelOutcome, "admitted")
	for _, c := range []struct {
		name string
		end  func(r *Root)
	}{
		{"tick", func(r *Root) { r.OnTick() }},
		{"done", func(r *Root) { r.OnPluginDone() }},
		{"delete", func(r *Root) { r.OnDelete() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newEmulated(t)
			r := NewRoot(1, h)
			require.True(t, r.OnConfigure([]byte(`{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000}}}}`)))
			require.Equal(t, uint32(tickPeriodMs), h.emu.GetTickPeriod(), "every root ticks")
			for range 3 {
				r.metrics.CountRequest(exchange.OutcomeAdmitted)
			}
			got, _ := h.Metric(name)
			require.Zero(t, got, "not before the flush")
			c.end(r)
			got, ok := h.Metric(name)
			require.True(t, ok)
			require.Equal(t, int64(3), got)
			r.OnTick()
			got, _ = h.Metric(name)
			require.Equal(t, int64(3), got, "a flush hands each increment over once")
		})
	}
}
