package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"

	"github.com/tokenbudget/tokenbudget/shared/config"
)

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(b, &doc), path)
	return doc
}

// dig walks maps and lists by key or index.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "at %v: not a map", p)
			v = m[k]
		case int:
			l, ok := v.([]any)
			require.True(t, ok, "at %v: not a list", p)
			require.Greater(t, len(l), k)
			v = l[k]
		}
	}
	return v
}

func TestEnvoyYAMLCarriesTheGatewayStatsTags(t *testing.T) {
	doc := readYAML(t, filepath.Join("..", "envoy.yaml"))
	var got []tagPair
	for _, r := range dig(t, doc, "stats_config", "stats_tags").([]any) {
		m := r.(map[string]any)
		got = append(got, tagPair{m["tag_name"].(string), m["regex"].(string)})
	}
	var want []tagPair
	for _, r := range DefaultStatsTags() {
		want = append(want, tagPair{r.TagName, r.Regex})
	}
	require.Equal(t, want, got)
}

type tagPair struct{ Name, Regex string }

func TestEnvoyYAMLRunsTheFilterWithTheLocalPluginConfig(t *testing.T) {
	doc := readYAML(t, filepath.Join("..", "envoy.yaml"))
	hcm := dig(t, doc, "static_resources", "listeners", 0, "address", "socket_address", "port_value")
	require.Equal(t, 10000, hcm)
	filters := dig(t, doc, "static_resources", "listeners", 0, "filter_chains", 0, "filters", 0, "typed_config", "http_filters").([]any)
	wasm := dig(t, filters[0], "typed_config", "config")
	require.Equal(t, "envoy.filters.http.wasm", dig(t, filters[0], "name"))
	require.Equal(t, "envoy.filters.http.router", dig(t, filters[len(filters)-1], "name"), "the router is last")
	require.Equal(t, false, dig(t, wasm, "fail_open"))
	require.Equal(t, "envoy.wasm.runtime.v8", dig(t, wasm, "vm_config", "runtime"))
	require.Equal(t, DefaultWasm, dig(t, wasm, "vm_config", "code", "local", "filename"))

	embedded := dig(t, wasm, "configuration", "value").(string)
	local, err := os.ReadFile(filepath.Join("..", "..", "examples", "local", "plugin.json"))
	require.NoError(t, err)
	require.JSONEq(t, string(local), embedded, "envoy.yaml embeds examples/local/plugin.json")
	_, _, err = config.Load([]byte(embedded))
	require.NoError(t, err)

	var clusters []string
	for _, c := range dig(t, doc, "static_resources", "clusters").([]any) {
		clusters = append(clusters, c.(map[string]any)["name"].(string))
	}
	require.ElementsMatch(t, []string{"llm", "sharedstore"}, clusters)
}

func TestIstioWasmPluginConfigIsAValidPluginConfig(t *testing.T) {
	doc := readYAML(t, filepath.Join("..", "istio", "wasmplugin.yaml"))
	require.Equal(t, "WasmPlugin", doc["kind"])
	require.Equal(t, "FAIL_CLOSE", dig(t, doc, "spec", "failStrategy"))
	b, err := json.Marshal(dig(t, doc, "spec", "pluginConfig"))
	require.NoError(t, err)
	_, _, err = config.Load(b)
	require.NoError(t, err, string(b))
}
