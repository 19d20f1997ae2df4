package grafana

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	promparser "github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// The alert rules of examples/prometheus are checked here, beside the dashboard, because they answer to the same
// two things: the metric tables the code defines (series, read from shared/metrics and from sharedstore's
// prometheus.*Opts) and the specification's aggregation classes (checkAggregation).

func TestEveryAlertRuleLoadsInPrometheusAndNamesACodeMetricAggregatedAsItsClassAsks(t *testing.T) {
	names, families := series(t)
	p := promparser.NewParser(promparser.Options{})
	groups, errs := rulefmt.ParseFile(filepath.Join(root, "examples", "prometheus", "alerts.yaml"), false,
		model.UTF8Validation, p, slog.New(slog.DiscardHandler))
	require.Empty(t, errs, "Prometheus' rule parser refuses the file")
	require.NotEmpty(t, groups.Groups)

	alerts := map[string]bool{}
	used := map[string]bool{}
	for _, g := range groups.Groups {
		require.NotEmpty(t, g.Rules, g.Name)
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "%s: every rule is an alert", g.Name)
			require.False(t, alerts[r.Alert], "alert %s is defined once", r.Alert)
			alerts[r.Alert] = true
			require.NotEmpty(t, r.Labels["severity"], r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], r.Alert)
			expr, err := p.ParseExpr(r.Expr)
			require.NoError(t, err, r.Alert)
			checkSelectors(t, r.Alert, r.Expr, expr, names, families, used)
		}
	}
	for _, f := range []string{"rate_limit_store_reachable", "rate_limit_spend_records_dropped_total", "tokenbudget_sharedstore_redis_errors_total"} {
		require.True(t, used[f], "the rules watch %s", f)
	}
}
