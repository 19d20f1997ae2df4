package host

import (
	"errors"
	"os"
	"strconv"
	"time"
)

// Profile selects which proxy-wasm-cpp-host generation the host reproduces: the WASI functions a
// module may import, what they answer, and which host calls _initialize may make. Deployed Envoys
// embed different cpp-host commits, and a module that passes one can fail in another.
type Profile int

const (
	// ProfileLegacy is the strictest profile and the default, the one the project's filter must
	// pass: the _initialize allow-list of cpp-host before commit c4d7bb0 (PR #427, 2024-12-19),
	// as every Envoy embedding an older cpp-host applies it, over the 18 WASI functions of
	// c4d7bb0, with poll_oneoff answering ENOSYS. Those older cpp-hosts registered only 15 WASI
	// functions (no fd_fdstat_set_flags, sched_yield or poll_oneoff), so a standard-Go module,
	// whose runtime imports sched_yield and poll_oneoff, fails there at load ("missing import")
	// before any start-up rule applies; this profile holds a module to both generations' rules
	// at once, which no single build did.
	ProfileLegacy Profile = iota
	// ProfileEnvoy2025 is cpp-host c4d7bb0, the generation Envoy embedded from 2025 until PR
	// #45756 (2026-06-22): the same 18 WASI functions, and _initialize may also call
	// fd_fdstat_get and fd_fdstat_set_flags (Go's syscall and os package init).
	ProfileEnvoy2025
	// ProfileCurrent is cpp-host after commit 94091cd (PR #533, 2026-04-06; in Envoy through PR
	// #45756, merged 2026-06-22): 45 WASI functions, poll_oneoff answers 0 with no events, and
	// _initialize may call poll_oneoff, clock_res_get, emscripten_notify_memory_growth and the
	// file and socket stubs the Go runtime links.
	ProfileCurrent
)

// Profiles lists every profile, strictest first.
var Profiles = []Profile{ProfileLegacy, ProfileEnvoy2025, ProfileCurrent}

func (p Profile) String() string {
	switch p {
	case ProfileEnvoy2025:
		return "envoy-2025"
	case ProfileCurrent:
		return "current"
	}
	return "legacy"
}

// ParseProfile returns the profile whose String is name.
func ParseProfile(name string) (Profile, error) {
	for _, p := range Profiles {
		if p.String() == name {
			return p, nil
		}
	}
	return 0, errors.New("envoy/host: unknown profile " + strconv.Quote(name) + " (want legacy, envoy-2025 or current)")
}

// EnvProfile names the environment variable ProfileFromEnv reads, so a CI job can run the same
// suite against each cpp-host generation.
const EnvProfile = "TOKENBUDGET_HOST_PROFILE"

// ProfileFromEnv returns the profile EnvProfile names, or ProfileLegacy when it is unset.
func ProfileFromEnv() (Profile, error) {
	v := os.Getenv(EnvProfile)
	if v == "" {
		return ProfileLegacy, nil
	}
	return ParseProfile(v)
}

// FailurePolicy mirrors Envoy's wasm.proto failure_policy: what happens to traffic once a VM traps.
type FailurePolicy int

const (
	// FailClosed (Envoy's default) answers 503 to the failing request and every later one on that VM.
	FailClosed FailurePolicy = iota
	// FailOpen lets requests pass untouched once the VM has failed.
	FailOpen
	// FailReload answers 503 to the failing request and builds a fresh VM on the next request.
	FailReload
)

// Level is the proxy-wasm log level (trace 0 … critical 5).
type Level int

const (
	LevelTrace Level = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
	LevelCritical
)

func (l Level) String() string {
	switch l {
	case LevelTrace:
		return "trace"
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	case LevelCritical:
		return "critical"
	}
	return "level(" + itoa(int64(l)) + ")"
}

// LogEntry is one captured guest log line, so tests can assert on what the filter said.
type LogEntry struct {
	Level   Level
	Message string
	// Worker is the worker index of the VM that logged; -1 for the canary VM.
	Worker int
}

// StatsTag is one Envoy stats_config.stats_tags rule: the first capture group of Regex is removed
// from the metric name and its nested (second) group becomes the value of label TagName.
type StatsTag struct {
	TagName string
	Regex   string
}

// Headers is an ordered header list with lowercase names, pseudo-headers included
// (":method", ":path", ":authority", ":scheme", ":status"), as Envoy hands them to a filter.
type Headers [][2]string

// Get returns the first value of name.
func (h Headers) Get(name string) (string, bool) {
	for _, kv := range h {
		if kv[0] == name {
			return kv[1], true
		}
	}
	return "", false
}

// Clone returns a deep copy so a caller's slice is never aliased by the host.
func (h Headers) Clone() Headers {
	if h == nil {
		return nil
	}
	out := make(Headers, len(h))
	copy(out, h)
	return out
}

// Options configure a Host. Only Module is required.
type Options struct {
	// Module is the compiled .wasm (standard Go, -buildmode=c-shared, or any proxy-wasm module).
	Module []byte
	// PluginConfig is the plugin `configuration` value (Istio's pluginConfig as JSON).
	PluginConfig []byte
	// VMConfig is the vm_config `configuration` value, delivered to proxy_on_vm_start.
	VMConfig []byte
	// RootID, VMID and PluginName are Envoy's root_id, vm_id and plugin name.
	RootID, VMID, PluginName string
	// Workers is the number of worker VMs (Envoy's worker threads); default 2.
	Workers int
	// Profile selects the cpp-host generation; default ProfileLegacy.
	Profile Profile
	// FailurePolicy decides traffic after a trap; default FailClosed.
	FailurePolicy FailurePolicy
	// Env is the VM's environment, what WASI environ_get answers: Envoy hands a VM only the
	// variables of its vm_config.environment_variables, never its own environment (see
	// VMEnvironment, which builds this map as Envoy does).
	Env map[string]string
	// Clusters maps an Envoy cluster name to a base URL ("http://127.0.0.1:8080") for proxy_http_call.
	Clusters map[string]string
	// BufferLimit is the per-stream body buffer limit; default 1 MiB, Envoy's default
	// per_connection_buffer_limit_bytes.
	BufferLimit int
	// Now is the wall clock seen by the guest (proxy_get_current_time_nanoseconds, WASI realtime);
	// default time.Now. Inject it to make time deterministic in tests.
	Now func() time.Time
	// Log receives every guest log line (in addition to Host.Logs).
	Log func(Level, string)
	// LogLevel is what proxy_get_log_level reports; the zero value is LevelTrace so tests see every
	// line. Envoy runs with info by default: set LevelInfo to mimic it. Lines below the level are
	// dropped, as Envoy drops them.
	LogLevel Level
	// StatsTags are the stats_tags rules used by PrometheusText.
	StatsTags []StatsTag
	// CacheDir, when set, persists compiled machine code across processes.
	CacheDir string
	// AllowStdioInit additionally permits fd_fdstat_get and fd_fdstat_set_flags during
	// _initialize on ProfileLegacy. Go's syscall package init (linked by time, os, fmt) calls
	// them. cpp-host has allowed both since commit c4d7bb0 (2024-12-19), so ProfileEnvoy2025 and
	// ProfileCurrent permit them anyway; on ProfileLegacy such a module traps in _initialize, as
	// it would under the older allow-list, and setting this is a knowing divergence from it.
	AllowStdioInit bool
	// MaxLogs bounds Host.Logs (oldest dropped); default 10000.
	MaxLogs int

	// extraHostFns are added to the profile's imports; tests use them to reach host paths no
	// Envoy host call reaches from a guest (an allocation while _initialize is restricted).
	extraHostFns []hostFn
}

// StreamInfo describes the downstream connection and request attributes of one stream.
type StreamInfo struct {
	// Worker picks the worker VM; -1 (or out of range) means round robin.
	Worker int
	// SourceAddress is the downstream peer, "ip:port".
	SourceAddress string
	// DestinationAddress is the local listener address, "ip:port" (optional).
	DestinationAddress string
	// Properties adds or overrides properties by path, segments joined with "\x00"
	// (for example "metadata\x00filter_metadata" or "filter_state\x00key").
	Properties map[string][]byte
}

// LocalResponse is a reply the filter (or the host, on failure) sends instead of the upstream's.
type LocalResponse struct {
	Status  int
	Headers Headers
	Body    []byte
	Details string
	// GRPCStatus is the grpc_status the filter passed, -1 for none (and on the host's own
	// replies); Envoy applies it only to a gRPC request.
	GRPCStatus int
}

// Action is what the proxy must do after a stream callback.
type Action int

const (
	// Continue: forward Result.Headers (if non-nil) and Result.Body now.
	Continue Action = iota
	// Pause: the filter holds the stream. Keep feeding body chunks if you have them; once you have
	// nothing more to feed (end of stream given), call Stream.Wait.
	Pause
	// LocalReply: send Result.Local to the client instead of proxying; the stream is over.
	LocalReply
	// Close: reset the stream (proxy_close_stream).
	Close
)

func (a Action) String() string {
	switch a {
	case Continue:
		return "Continue"
	case Pause:
		return "Pause"
	case LocalReply:
		return "LocalReply"
	case Close:
		return "Close"
	}
	return "Action(" + itoa(int64(a)) + ")"
}

// Result tells the proxy what the filter released and what to do next.
type Result struct {
	Action Action
	// Headers is the (possibly modified) header map of the current direction when the filter released
	// it with this call; nil when headers were not released by this call.
	Headers Headers
	// Body is the body bytes of the current direction released now (possibly rewritten).
	Body []byte
	// EndOfStream reports that the end of the current direction was released with this result.
	EndOfStream bool
	// Local is set when Action is LocalReply.
	Local *LocalResponse
}

// VMEnvironment is the environment Envoy gives a VM from vm_config.environment_variables:
// key_values as written, then each of host_env_keys with its value in Envoy's own environment
// (lookup), skipped when Envoy's environment has no such variable. A name in both lists is a
// config error, as Envoy rejects it.
func VMEnvironment(keyValues map[string]string, hostEnvKeys []string, lookup func(string) (string, bool)) (map[string]string, error) {
	env := make(map[string]string, len(keyValues)+len(hostEnvKeys))
	for k, v := range keyValues {
		env[k] = v
	}
	seen := map[string]bool{}
	for _, k := range hostEnvKeys {
		if _, dup := keyValues[k]; dup || seen[k] {
			return nil, errors.New("environment variable " + strconv.Quote(k) + " is given twice; every name must be unique")
		}
		seen[k] = true
		if v, ok := lookup(k); ok {
			env[k] = v
		}
	}
	return env, nil
}
