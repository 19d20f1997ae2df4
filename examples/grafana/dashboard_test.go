// Package grafana holds the Grafana dashboard (tokenbudget.json) and the test that keeps it true
// to the code: every query parses, names only metrics the code defines, aggregates the fleet the
// way the specification asks, and together the queries cover every metric family.
package grafana

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	promparser "github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

const root = "../.."

type kind int

const (
	counter kind = iota
	gauge
	histogram
)

// goFiles parses the non-test Go files of one package directory.
func goFiles(t *testing.T, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, dir))
	require.NoError(t, err)
	var files []*ast.File
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, dir, e.Name()), nil, 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	require.NotEmpty(t, files, dir)
	return files
}

// filterFamilies reads the filter's family names from shared/metrics, the one table the filter
// names its counters from: every exported string constant that is not a label name. proxy-wasm
// stats ending in _total are counters (the filter defines counters only); anything else would
// be a gauge.
func filterFamilies(t *testing.T) map[string]kind {
	t.Helper()
	out := map[string]kind{}
	for _, f := range goFiles(t, "shared/metrics") {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !n.IsExported() || strings.HasPrefix(n.Name, "Label") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					name, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					out[name] = gauge
					if strings.HasSuffix(name, "_total") {
						out[name] = counter
					}
				}
			}
		}
	}
	return out
}

// sharedstoreFamilies reads sharedstore's and its spend worker's families from their
// prometheus.*Opts literals.
func sharedstoreFamilies(t *testing.T) map[string]kind {
	t.Helper()
	kinds := map[string]kind{"CounterOpts": counter, "GaugeOpts": gauge, "HistogramOpts": histogram}
	out := map[string]kind{}
	var files []*ast.File
	for _, dir := range []string{"sharedstore/server", "sharedstore/spendworker"} {
		files = append(files, goFiles(t, dir)...)
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := cl.Type.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" || !strings.HasSuffix(sel.Sel.Name, "Opts") {
				return true
			}
			k, ok := kinds[sel.Sel.Name]
			require.True(t, ok, "metric kind %s: teach this test how it aggregates", sel.Sel.Name)
			for _, e := range cl.Elts {
				kv := e.(*ast.KeyValueExpr)
				key := kv.Key.(*ast.Ident).Name
				require.NotContains(t, []string{"Namespace", "Subsystem"}, key, "names are written whole")
				if key == "Name" {
					name, err := strconv.Unquote(kv.Value.(*ast.BasicLit).Value)
					require.NoError(t, err)
					out[name] = k
				}
			}
			return true
		})
	}
	return out
}

// series maps every series name the code exports to its family and kind (a histogram family
// exports _bucket, _sum and _count).
func series(t *testing.T) (map[string]string, map[string]kind) {
	t.Helper()
	families := filterFamilies(t)
	for n, k := range sharedstoreFamilies(t) {
		families[n] = k
	}
	require.Contains(t, families, "rate_limit_requests_total", "the filter's families were found")
	require.Contains(t, families, "tokenbudget_sharedstore_request_duration_seconds", "sharedstore's families were found")
	names := map[string]string{}
	for f, k := range families {
		if k == histogram {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f+s] = f
			}
			continue
		}
		names[f] = f
	}
	return names, families
}

type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name, Type string
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func loadDashboard(t *testing.T) (dashboard, []panel) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "examples", "grafana", "tokenbudget.json"))
	require.NoError(t, err)
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	require.NoError(t, dec.Decode(&d))
	var all []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return d, all
}

// replicaLabels name one replica; grouping or matching on them shows a replica, not the fleet.
var replicaLabels = map[string]bool{"instance": true, "pod": true, "pod_name": true, "kubernetes_pod_name": true, "replica": true, "hostname": true}

// checkAggregation applies the fleet rules to one selector, given its ancestors (innermost
// last): a counter (or a histogram's _sum/_count) is rate()d or increase()d and then summed; a
// histogram's _bucket is rated, summed by (le, ...) and only then given to histogram_quantile;
// a gauge is taken by max or min (a shared bucket seen from every replica must not be summed).
// No sum groups by, and no selector matches on, a label that names a replica.
func checkAggregation(name string, k kind, bucket bool, path []promparser.Node) string {
	var up []promparser.Node
	for i := len(path) - 1; i >= 0; i-- {
		switch path[i].(type) {
		case *promparser.ParenExpr, *promparser.StepInvariantExpr:
			continue
		}
		up = append(up, path[i])
	}
	at := func(i int) promparser.Node {
		if i < len(up) {
			return up[i]
		}
		return nil
	}
	agg := func(n promparser.Node, ops ...promparser.ItemType) (*promparser.AggregateExpr, bool) {
		a, ok := n.(*promparser.AggregateExpr)
		if !ok || a.Without {
			return nil, false
		}
		for _, op := range ops {
			if a.Op == op {
				for _, g := range a.Grouping {
					if replicaLabels[g] {
						return nil, false
					}
				}
				return a, true
			}
		}
		return nil, false
	}
	if k == gauge {
		if _, ok := agg(at(0), promparser.MAX, promparser.MIN); !ok {
			return name + ": a gauge is taken by max or min across replicas"
		}
		return ""
	}
	if _, ok := at(0).(*promparser.MatrixSelector); !ok {
		return name + ": a counter is read over a range, inside rate() or increase()"
	}
	call, ok := at(1).(*promparser.Call)
	if !ok || (call.Func.Name != "rate" && call.Func.Name != "increase") {
		return name + ": a counter is read through rate() or increase()"
	}
	sum, ok := agg(at(2), promparser.SUM)
	if !ok {
		return name + ": the rate is summed over the replicas (sum or sum by, never by a replica's label)"
	}
	if bucket {
		hasLe := false
		for _, g := range sum.Grouping {
			hasLe = hasLe || g == "le"
		}
		q, ok := at(3).(*promparser.Call)
		if !hasLe || !ok || q.Func.Name != "histogram_quantile" {
			return name + ": buckets are summed by (le, ...) and then given to histogram_quantile"
		}
	}
	return ""
}

// checkSelectors holds every selector of expr (the query or rule where
// names) to the code's metric names and to its family's aggregation class,
// and marks the families it reads in used.
func checkSelectors(t *testing.T, where, text string, expr promparser.Expr, names map[string]string, families map[string]kind, used map[string]bool) {
	t.Helper()
	selectors := 0
	promparser.Inspect(expr, func(n promparser.Node, path []promparser.Node) error {
		vs, ok := n.(*promparser.VectorSelector)
		if !ok {
			return nil
		}
		selectors++
		family, known := names[vs.Name]
		require.True(t, known, "%s: %q is not a metric the code defines", where, vs.Name)
		used[family] = true
		for _, m := range vs.LabelMatchers {
			require.False(t, replicaLabels[m.Name], "%s: %s selects one replica by %s", where, vs.Name, m.Name)
		}
		bucket := strings.HasSuffix(vs.Name, "_bucket") && families[family] == histogram
		require.Empty(t, checkAggregation(vs.Name, families[family], bucket, path), "%s: %s", where, text)
		return nil
	})
	require.Positive(t, selectors, text)
}

func TestEveryDashboardQueryParsesNamesACodeMetricAndAggregatesTheFleet(t *testing.T) {
	names, families := series(t)
	d, panels := loadDashboard(t)
	require.Equal(t, "tokenbudget", d.UID)
	require.Len(t, d.Templating.List, 1)
	require.Equal(t, "datasource", d.Templating.List[0].Name)

	used := map[string]bool{}
	ids := map[int]bool{}
	p := promparser.NewParser(promparser.Options{})
	queries := 0
	for _, pn := range panels {
		require.False(t, ids[pn.ID], "panel id %d is unique", pn.ID)
		ids[pn.ID] = true
		if pn.Type == "row" {
			continue
		}
		require.NotEmpty(t, pn.Targets, pn.Title)
		require.NotNil(t, pn.Datasource, pn.Title)
		require.Equal(t, "${datasource}", pn.Datasource.UID, pn.Title)
		for _, tg := range pn.Targets {
			queries++
			expr, err := p.ParseExpr(tg.Expr)
			require.NoError(t, err, "%s %s: %s", pn.Title, tg.RefID, tg.Expr)
			checkSelectors(t, pn.Title, tg.Expr, expr, names, families, used)
		}
	}
	require.Positive(t, queries)
	var missing []string
	for f := range families {
		if !used[f] {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "every metric family has a panel")
}

func TestTheAggregationRulesRefuseWhatTheSpecificationForbids(t *testing.T) {
	p := promparser.NewParser(promparser.Options{})
	tests := []struct {
		expr   string
		kind   kind
		bucket bool
		ok     bool
	}{
		{`sum by (limit_type) (rate(x[5m]))`, counter, false, true},
		{`sum(increase(x[1h]))`, counter, false, true},
		{`rate(x[5m])`, counter, false, false},
		{`sum(x)`, counter, false, false},
		{`rate(sum(x)[5m:])`, counter, false, false},
		{`max(rate(x[5m]))`, counter, false, false},
		{`sum by (instance) (rate(x[5m]))`, counter, false, false},
		{`sum without (le) (rate(x[5m]))`, counter, false, false},
		{`histogram_quantile(0.99, sum by (le) (rate(x[5m])))`, histogram, true, true},
		{`histogram_quantile(0.99, sum by (op) (rate(x[5m])))`, histogram, true, false},
		{`avg(histogram_quantile(0.99, rate(x[5m])))`, histogram, true, false},
		{`max(x)`, gauge, false, true},
		{`sum(x)`, gauge, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			expr, err := p.ParseExpr(tc.expr)
			require.NoError(t, err)
			var problem string
			found := false
			promparser.Inspect(expr, func(n promparser.Node, path []promparser.Node) error {
				if vs, ok := n.(*promparser.VectorSelector); ok && vs.Name == "x" {
					found = true
					problem = checkAggregation("x", tc.kind, tc.bucket, append([]promparser.Node(nil), path...))
				}
				return nil
			})
			require.True(t, found)
			require.Equal(t, tc.ok, problem == "", problem)
		})
	}
}
