package host

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Envoy builds a VM's environment from vm_config.environment_variables:
// key_values as written, host_env_keys from its own environment (a key it
// does not have is left out), a name in both lists rejected.
func TestTheVMEnvironmentIsOnlyWhatEnvironmentVariablesConfigure(t *testing.T) {
	proc := map[string]string{"FROM_HOST": "h", "SECRET_NOT_ASKED": "s", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := proc[k]; return v, ok }
	cases := []struct {
		name  string
		kv    map[string]string
		keys  []string
		want  map[string]string
		error string
	}{
		{"nothing configured", nil, nil, map[string]string{}, ""},
		{"key values", map[string]string{"A": "1"}, nil, map[string]string{"A": "1"}, ""},
		{"host keys", nil, []string{"FROM_HOST", "EMPTY"}, map[string]string{"FROM_HOST": "h", "EMPTY": ""}, ""},
		{"a host key the host lacks is left out", nil, []string{"MISSING"}, map[string]string{}, ""},
		{"both lists", map[string]string{"A": "1"}, []string{"FROM_HOST"}, map[string]string{"A": "1", "FROM_HOST": "h"}, ""},
		{"a name in both lists", map[string]string{"FROM_HOST": "x"}, []string{"FROM_HOST"}, nil, `"FROM_HOST" is given twice`},
		{"a host key twice", nil, []string{"FROM_HOST", "FROM_HOST"}, nil, "given twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, err := VMEnvironment(c.kv, c.keys, lookup)
			if c.error != "" {
				require.ErrorContains(t, err, c.error)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, env)
			require.NotContains(t, env, "SECRET_NOT_ASKED", "nothing of the process's environment leaks in")
		})
	}
}
