package gateway

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// Defaults of the command's flags; the same values envoy/envoy.yaml uses.
const (
	DefaultWasm   = "build/filter.wasm"
	DefaultListen = "127.0.0.1:10000"
	DefaultAdmin  = "127.0.0.1:9901"
	// DefaultMaxRequestHeadersBytes is Envoy's max_request_headers_kb default (60 KiB): a request
	// whose headers (names and values, pseudo-headers included) exceed it is answered 431.
	DefaultMaxRequestHeadersBytes = 60 << 10
	// DefaultStreamIdleTimeout is Envoy's stream_idle_timeout default: a request on which no byte
	// moves for this long (client body, upstream answer, or a write to the client) ends, with 408
	// if no response has started, so a slow client cannot hold a stream open forever.
	DefaultStreamIdleTimeout = 5 * time.Minute
	// DefaultMaxRequestBytes is Envoy's per_connection_buffer_limit_bytes default (1 MiB): a
	// request body the filter buffers past it is answered 413. It is also the filter's
	// token_budget.max_body_bytes default; raise the two together.
	DefaultMaxRequestBytes = 1 << 20
)

// Config says what the gateway runs and where. Zero values take the defaults above; tests set
// Listen and Admin to "127.0.0.1:0".
type Config struct {
	// Module is the .wasm; when nil it is read from WasmPath (default DefaultWasm).
	Module   []byte
	WasmPath string
	// ConfigPath is the plugin configuration file, re-read by ReloadFromFile (/reload, SIGHUP).
	// When empty, PluginConfig is used as is.
	ConfigPath   string
	PluginConfig []byte
	// Listen and Admin are the proxy and admin addresses; Admin "off" disables the admin server.
	Listen, Admin string
	// Upstream is the LLM backend's base URL.
	Upstream string
	// UpstreamHandler, when set, is the backend instead (Upstream must then be empty): the
	// gateway serves it on a loopback port of its own, so the gateway runs with nothing else
	// installed (the command's --upstream mock serves the mock LLM this way).
	UpstreamHandler http.Handler
	// MaxRequestHeadersBytes bounds a request's headers; 0 means DefaultMaxRequestHeadersBytes.
	MaxRequestHeadersBytes int
	// StreamIdleTimeout ends a stream with no activity for this long; 0 means
	// DefaultStreamIdleTimeout, a negative value disables it (Envoy's 0).
	StreamIdleTimeout time.Duration
	// Workers is the number of worker VMs (Envoy's --concurrency); default 2.
	Workers int
	// Clusters are the Envoy clusters the filter may call (proxy_http_call), name → base URL.
	// The upstream is added as cluster "llm" unless that name is taken.
	Clusters map[string]string
	// StatsTags turn labelled metric names into Prometheus labels; nil means DefaultStatsTags.
	StatsTags []host.StatsTag
	// Host options passed through; see host.Options.
	// BufferLimit is the body buffer limit (the command's --max-request-bytes, Envoy's
	// per_connection_buffer_limit_bytes; 0 means DefaultMaxRequestBytes). VMEnv is the VM's
	// environment (the command's --vm-env, Envoy's vm_config.environment_variables, built by
	// host.VMEnvironment): nothing else of the gateway's environment reaches the filter.
	Profile        host.Profile
	FailurePolicy  host.FailurePolicy
	BufferLimit    int
	VMEnv          map[string]string
	VMConfig       []byte
	RootID, VMID   string
	PluginName     string
	LogLevel       host.Level
	Now            func() time.Time
	CacheDir       string
	AllowStdioInit bool
	// Logger receives the gateway's and the plugin's log lines; nil means slog.Default().
	Logger *slog.Logger
	// AccessLog receives one JSON line per request (method, path, status,
	// duration and the filter's decision); nil writes none.
	AccessLog io.Writer
}

// DefaultStatsTags are the stats_tags rules for the filter's metric names (labels folded in as
// "_<label>=<value>" segments by shared/metrics); envoy/envoy.yaml carries the same list.
func DefaultStatsTags() []host.StatsTag {
	rules := metrics.TagRules()
	out := make([]host.StatsTag, len(rules))
	for i, r := range rules {
		out[i] = host.StatsTag{TagName: r.Name, Regex: r.Regex}
	}
	return out
}

func (c *Config) applyDefaults() error {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Admin == "" {
		c.Admin = DefaultAdmin
	}
	if c.MaxRequestHeadersBytes <= 0 {
		c.MaxRequestHeadersBytes = DefaultMaxRequestHeadersBytes
	}
	if c.StreamIdleTimeout == 0 {
		c.StreamIdleTimeout = DefaultStreamIdleTimeout
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.BufferLimit <= 0 {
		c.BufferLimit = DefaultMaxRequestBytes
	}
	if c.StatsTags == nil {
		c.StatsTags = DefaultStatsTags()
	}
	if c.RootID == "" {
		c.RootID = "tokenbudget"
	}
	if c.VMID == "" {
		c.VMID = "tokenbudget"
	}
	if c.PluginName == "" {
		c.PluginName = "tokenbudget"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Upstream == "" && c.UpstreamHandler == nil {
		return errors.New("gateway: no upstream (a URL, or an upstream handler)")
	}
	if c.Module == nil {
		if c.WasmPath == "" {
			c.WasmPath = DefaultWasm
		}
		b, err := os.ReadFile(c.WasmPath)
		if err != nil {
			return fmt.Errorf("gateway: read module: %w", err)
		}
		c.Module = b
	}
	if c.ConfigPath != "" {
		b, err := os.ReadFile(c.ConfigPath)
		if err != nil {
			return fmt.Errorf("gateway: read plugin config: %w", err)
		}
		c.PluginConfig = b
	}
	return nil
}
