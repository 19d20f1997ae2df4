package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateWarnsAConfigThatWouldPassGatewayKeysOnWhenEnvoyInjectsTheProviderCredential(t *testing.T) {
	const limits = `"rate_limiting":{"limits":{"global":{"tokens_per_minute":100}},"budget_division":{"replicas":1}}`
	cases := []struct {
		name, config string
		want         []string
	}{
		{"keys travel on, anyone passes", `{` + limits + `}`,
			[]string{"identity.strip_api_key_headers: false", "set identity.missing_api_key and identity.unknown_api_keys"}},
		{"keys stripped, anyone passes", `{` + limits + `,"identity":{"strip_api_key_headers":true}}`,
			[]string{"identity.unknown_api_keys"}},
		{"keys stripped, only listed keys pass", `{` + limits + `,"identity":{"strip_api_key_headers":true,` +
			`"missing_api_key":"refuse","unknown_api_keys":"refuse"}}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, _ := runCmd(t, c.config, "validate", "--injects-credential", "-")
			require.Equal(t, 0, code, out)
			for _, w := range c.want {
				require.Contains(t, out, w)
			}
			if c.want == nil {
				require.NotContains(t, out, "strip_api_key_headers")
				require.NotContains(t, out, "provider's credential")
			}
			_, plain, _ := runCmd(t, c.config, "validate", "-")
			require.NotContains(t, plain, "provider's credential", "without the hint nothing is said")
		})
	}
	code, _, _ := runCmd(t, "{}", "validate", "--other", "-")
	require.Equal(t, 2, code)
}
