package config

import "github.com/tokenbudget/tokenbudget/shared/errs"

// envName reports whether s is a portable environment variable name: what
// Kubernetes, a shell and Envoy's environment_variables all accept.
func envName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ResolveEnv reads what the config takes from the VM's environment: the
// sharedstore token named by rate_limiting.redis.token_env. getenv is the
// VM's environment (nil when the host offers none). Envoy gives a VM only
// its vm_config.environment_variables, so a missing variable is a
// deployment mistake: the config is refused with the way to give it,
// rather than calling sharedstore without a token and failing every call.
func (rt *Runtime) ResolveEnv(getenv func(string) (string, bool)) error {
	name := rt.Redis.TokenEnv
	if name == "" {
		return nil
	}
	const path = "rate_limiting.redis.token_env: "
	if getenv == nil {
		return errs.New(path + "this host gives the VM no environment variables")
	}
	v, ok := getenv(name)
	switch {
	case !ok:
		return errs.New(path + "the VM has no environment variable " + name + "; give it with Envoy's " +
			"vm_config.environment_variables (host_env_keys), Istio's WasmPlugin vmConfig.env (valueFrom: HOST), " +
			"or the local gateway's --vm-env " + name)
	case v == "":
		return errs.New(path + "the VM's environment variable " + name + " is empty")
	}
	rt.Redis.Token = v
	return nil
}
