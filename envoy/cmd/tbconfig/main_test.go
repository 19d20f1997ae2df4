package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateExitsOneAndPrintsEveryError(t *testing.T) {
	code, out, _ := runCmd(t, `{"rate_limiting":{"storage":"x","max_buckets":0}}`, "validate", "-")
	require.Equal(t, 1, code)
	require.Contains(t, out, "error: ")
	require.Contains(t, out, "rate_limiting.storage")
	require.Contains(t, out, "rate_limiting.max_buckets")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		require.True(t, strings.HasPrefix(line, "error: "), line)
	}
}

func TestValidateExitsZeroWithOnlyWarnings(t *testing.T) {
	code, out, _ := runCmd(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":100}}}}`, "validate", "-")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "warning: "), out)
	require.Contains(t, out, "budget_division.replicas")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, []string{"OK: the config on stdin loads, with 1 warning"}, lines[1:])
}

func TestValidateListsModelEntriesThatShadowAnother(t *testing.T) {
	code, out, _ := runCmd(t, `{"pricing":{"gpt-4o":{"input":1,"output":1},"gpt-4o-mini":{"input":1,"output":1}}}`, "validate", "-")
	require.Equal(t, 0, code)
	require.Contains(t, out, `note: pricing.gpt-4o-mini: shadows pricing.gpt-4o for "gpt-4o-mini"`)
}

func TestValidateReadsFilesAndReportsUnreadableOnes(t *testing.T) {
	tiers := filepath.Join("..", "..", "..", "examples", "configs", "tiers.json")
	code, out, _ := runCmd(t, "", "validate", tiers)
	require.Equal(t, 0, code)
	require.Equal(t, "OK: "+tiers+" loads\n", out, "a clean config says so, and nothing else")
	code, out, _ = runCmd(t, "", "validate", filepath.Join(t.TempDir(), "missing.json"))
	require.Equal(t, 1, code)
	require.Contains(t, out, "error: read config")
}

func TestSchemaPrintsOrWritesTheSchema(t *testing.T) {
	code, out, _ := runCmd(t, "", "schema")
	require.Equal(t, 0, code)
	require.Contains(t, out, `"additionalProperties": false`)
	f := filepath.Join(t.TempDir(), "s.json")
	code, _, _ = runCmd(t, "", "schema", "-o", f)
	require.Equal(t, 0, code)
	written, err := os.ReadFile(f)
	require.NoError(t, err)
	require.Equal(t, out, string(written))
}

func TestBadUsageExitsTwo(t *testing.T) {
	for _, args := range [][]string{nil, {"lint"}, {"validate"}, {"schema", "-x"}} {
		code, _, errOut := runCmd(t, "", args...)
		require.Equal(t, 2, code, args)
		require.Contains(t, errOut, "usage")
	}
}

func TestValidatePointsAtTheLineAndColumnOfASyntaxError(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"missing comma", "{\n  \"rate_limiting\": {}\n  \"identity\": {}\n}", "line 3, column 3"},
		{"trailing data", "  {}\n x", "line 2, column 2"},
		{"truncated", `{"a":`, "unexpected end of JSON input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := runCmd(t, tc.in, "validate", "-")
			require.Equal(t, 1, code)
			require.True(t, strings.HasPrefix(out, "error: parse plugin config: "), out)
			require.Contains(t, out, tc.want)
			require.Equal(t, 1, strings.Count(out, "\n"), out)
		})
	}
}

func TestValidateReportsParseAndValidationErrorsTogetherWithOneExitCode(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"parse and validation errors", `{"rate_limiting":{"storage":"x","limits":{"global":{"tokens_per_minut":1,"tokens_per_day":-1}}}}`,
			[]string{`rate_limiting.limits.global: unknown field "tokens_per_minut"`, "rate_limiting.storage", "rate_limiting.limits.global.tokens_per_day"}},
		{"parse errors only", `{"rate_limiting":{"max_buckets":"x"},"identity":{"nope":1}}`,
			[]string{`identity: unknown field "nope"`, "rate_limiting.max_buckets"}},
		{"validation errors only", `{"rate_limiting":{"max_buckets":0}}`, []string{"rate_limiting.max_buckets"}},
		{"not JSON", `{`, []string{"parse plugin config"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := runCmd(t, tc.in, "validate", "-")
			require.Equal(t, exitInvalid, code)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, len(tc.want), out)
			for i, w := range tc.want {
				require.True(t, strings.HasPrefix(lines[i], "error: "), lines[i])
				require.Contains(t, lines[i], w)
			}
		})
	}
}
