package abi

// Environment is a Host that can read the VM's environment variables (in
// Envoy, the VM's vm_config.environment_variables; nothing else of the
// proxy's environment reaches a VM).
type Environment interface {
	// Getenv returns the variable's value and whether the VM has it.
	Getenv(name string) (string, bool)
}

// lookupEnv finds name in buf, WASI's environ_get buffer: one
// "NAME=VALUE\x00" after another. The first entry of that name wins, as a
// C getenv's does.
func lookupEnv(buf []byte, name string) (string, bool) {
	if name == "" {
		return "", false // no variable has an empty name, whatever "=…" entry the host wrote
	}
	for len(buf) > 0 {
		end := 0
		for end < len(buf) && buf[end] != 0 {
			end++
		}
		kv := buf[:end]
		if len(kv) > len(name) && kv[len(name)] == '=' && string(kv[:len(name)]) == name {
			return string(kv[len(name)+1:]), true
		}
		if end == len(buf) {
			break
		}
		buf = buf[end+1:]
	}
	return "", false
}
