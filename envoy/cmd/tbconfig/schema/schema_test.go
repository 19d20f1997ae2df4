package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/config"
)

func TestCommittedSchemaMatchesTheGoTypes(t *testing.T) {
	want, err := Generate()
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "shared", "config", "plugin-config.schema.json"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "run `go generate ./shared/config` and commit the schema")
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, err := Generate()
	require.NoError(t, err)
	b, err := Generate()
	require.NoError(t, err)
	require.Equal(t, a, b)
}

func TestExampleConfigsValidateAgainstTheSchemaAndLoad(t *testing.T) {
	doc, err := Generate()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "examples", "configs", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			problems, err := validateInstance(doc, raw)
			require.NoError(t, err)
			require.Empty(t, problems)
			_, _, err = config.Load(raw)
			require.NoError(t, err)
		})
	}
}

// The schema and the parser must agree on what they reject for shape:
// every case here fails both.
func TestSchemaRejectsWhatTheParserRejects(t *testing.T) {
	doc, err := Generate()
	require.NoError(t, err)
	for _, raw := range []string{
		`{"rate_limiting":{"limits":{"global":{"tokens_per_minut":1}}}}`,
		`{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1.5}}}}`,
		`{"rate_limiting":{"limits":{"global":{"tokens_per_minute":"1.5"}}}}`,
		`{"rate_limiting":{"limits":{"global":{"tokens_per_minute":-1}}}}`,
		`{"rate_limiting":{"limits":{"global":{"requests_per_second":"fast"}}}}`,
		`{"rate_limiting":{"storage":"etcd"}}`,
		`{"rate_limiting":{"budget_division":{}}}`,
		`{"api_keys":[{"id":"no-key"}]}`,
		`{"models":{"m":{"on_max_tokens":"truncate"}}}`,
		`{"identity":{"api_key_headers":"authorization"}}`,
		`{"token_budget":{"inject_stream_usage":"yes"}}`,
		`{"api_keys":[{"key":"k","spend_limit_day_usd":-1}]}`,
		`{"api_keys":[{"key":"k","spend_limit_day_usd":"$5"}]}`,
		`{"pricing":{"m":{"input":1,"output":1,"tier":{"input":1,"output":1,"per_request":1}}}}`,
		`{"spend_limits":{"teams":{"t":{"day_usd":1}}}}`,
	} {
		t.Run(raw, func(t *testing.T) {
			problems, err := validateInstance(doc, []byte(raw))
			require.NoError(t, err)
			require.NotEmpty(t, problems, "schema accepted it")
			_, _, err = config.Load([]byte(raw))
			require.Error(t, err, "parser accepted it")
		})
	}
	for _, raw := range []string{
		`{"rate_limiting":{"limits":{"global":{"tokens_per_minute":"32000.0","requests_per_second":"2.5","tokens_per_day":3.2e4}}}}`,
		`{"api_keys":[{"key":"k","team":"t","spend_limit_day_usd":"2.5e-06","spend_limit_month_usd":200.00}],"spend_limits":{"teams":{"t":{"month_usd":"200.00"}}},"pricing":{"default":{"input":"3","output":15,"above_input_tokens":200000,"tier":{"input":6,"output":"22.5"}}}}`,
	} {
		problems, err := validateInstance(doc, []byte(raw))
		require.NoError(t, err)
		require.Empty(t, problems)
		_, _, err = config.Load([]byte(raw))
		require.NoError(t, err)
	}
}
