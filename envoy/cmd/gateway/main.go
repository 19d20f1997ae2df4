// Command gateway runs the tokenbudget .wasm the way Envoy would, as a local reverse proxy in
// front of an LLM backend (or the built-in mock):
//
//	gateway --wasm build/filter.wasm --config examples/local/plugin.json --upstream mock
//
// Admin (default 127.0.0.1:9901): /stats/prometheus, /ready, POST /reload. SIGHUP to this process
// reloads too (its pid is in the "listening" log line). Envoy's defaults apply to every request:
// 60 KiB of headers (431 beyond) and a 5 minute stream idle timeout (--stream-idle-timeout).
// A request body the filter buffers past --max-request-bytes (Envoy's
// per_connection_buffer_limit_bytes, 1 MiB) gets a JSON 413 naming the limit and the flag; raise
// it with the plugin's token_budget.max_body_bytes. --vm-env NAME=VALUE (or NAME, the gateway's
// own variable) is the VM's environment, as Envoy's vm_config.environment_variables; the filter
// sees no other variable (rate_limiting.redis.token_env reads the sharedstore token from it).
// A plugin config the filter rejects at start makes the command exit 1 with the reason.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

// clusterFlags collects repeated --cluster NAME=URL values.
type clusterFlags map[string]string

func (c clusterFlags) String() string { return fmt.Sprint(map[string]string(c)) }

func (c clusterFlags) Set(v string) error {
	name, url, ok := strings.Cut(v, "=")
	if !ok || name == "" || url == "" {
		return errors.New("want NAME=URL")
	}
	c[name] = url
	return nil
}

// vmEnvFlags collects repeated --vm-env values as Envoy's vm_config.environment_variables:
// NAME=VALUE is a key_values entry, a bare NAME a host_env_keys entry (the variable of the
// gateway's own environment, so a secret need not appear on the command line).
type vmEnvFlags struct {
	keyValues map[string]string
	hostKeys  []string
}

func (e *vmEnvFlags) String() string { return "" }

func (e *vmEnvFlags) Set(v string) error {
	name, value, assign := strings.Cut(v, "=")
	if name == "" || strings.ContainsAny(name, " \t\x00") {
		return errors.New("want NAME=VALUE, or NAME to pass the gateway's own variable")
	}
	if _, dup := e.keyValues[name]; dup || slices.Contains(e.hostKeys, name) {
		return fmt.Errorf("%s is given twice", name)
	}
	if !assign {
		e.hostKeys = append(e.hostKeys, name)
		return nil
	}
	if e.keyValues == nil {
		e.keyValues = map[string]string{}
	}
	e.keyValues[name] = value
	return nil
}

// upstreamMock is the --upstream value that serves the mock LLM in process,
// so the gateway runs with nothing else installed.
const upstreamMock = "mock"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	cfg := gateway.Config{Clusters: clusterFlags{}}
	fs.StringVar(&cfg.WasmPath, "wasm", gateway.DefaultWasm, "the proxy-wasm module")
	fs.StringVar(&cfg.ConfigPath, "config", "", "plugin configuration (JSON) file; re-read by POST /reload and SIGHUP")
	fs.StringVar(&cfg.Listen, "listen", gateway.DefaultListen, "proxy listen address")
	fs.StringVar(&cfg.Admin, "admin", gateway.DefaultAdmin, `admin listen address ("off" to disable)`)
	fs.StringVar(&cfg.Upstream, "upstream", upstreamMock, `LLM backend base URL, or "mock" for the built-in mock LLM`)
	fs.IntVar(&cfg.Workers, "workers", 2, "worker VMs (Envoy's --concurrency)")
	fs.Var(clusterFlags(cfg.Clusters), "cluster", "an Envoy cluster for callouts, NAME=URL (repeatable)")
	profile := fs.String("profile", "legacy", "cpp-host profile: legacy (the strictest start-up rules), envoy-2025 (cpp-host c4d7bb0) or current (cpp-host after PR #533)")
	policy := fs.String("failure-policy", "closed", "after a VM trap: closed (503), open (pass) or reload")
	level := fs.String("log-level", "info", "plugin log level: trace, debug, info, warn, error, critical")
	fs.StringVar(&cfg.CacheDir, "cache-dir", "", "directory to cache compiled wasm across runs")
	clockStart := fs.String("clock-start", "", "RFC 3339 instant the host's clocks start at and run on from (e.g. 2026-09-30T23:59:00Z), to show calendar boundaries; default the real time")
	accessLog := fs.String("access-log", "stderr", "one JSON line per request: off, stderr or a FILE (appended to)")
	idle := fs.Duration("stream-idle-timeout", gateway.DefaultStreamIdleTimeout,
		"end a request on which nothing moved for this long (408 before the response starts); 0 disables, as in Envoy")
	fs.IntVar(&cfg.MaxRequestHeadersBytes, "max-request-headers-bytes", gateway.DefaultMaxRequestHeadersBytes,
		"largest request header block (names and values); larger ones get 431")
	fs.IntVar(&cfg.BufferLimit, "max-request-bytes", gateway.DefaultMaxRequestBytes,
		"request body buffer limit (Envoy's per_connection_buffer_limit_bytes); a larger body the filter reads gets 413. Raise it with the plugin's token_budget.max_body_bytes")
	var vmEnv vmEnvFlags
	fs.Var(&vmEnv, "vm-env", "an environment variable of the VM, as Envoy's vm_config.environment_variables: NAME=VALUE, or NAME to pass the gateway's own (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.BufferLimit <= 0 {
		return fmt.Errorf("--max-request-bytes %d: must be greater than 0", cfg.BufferLimit)
	}
	env, err := host.VMEnvironment(vmEnv.keyValues, vmEnv.hostKeys, os.LookupEnv)
	if err != nil {
		return fmt.Errorf("--vm-env: %w", err)
	}
	cfg.VMEnv = env
	if *idle < 0 {
		return fmt.Errorf("--stream-idle-timeout %v: must not be negative", *idle)
	}
	if cfg.Upstream == upstreamMock {
		cfg.Upstream, cfg.UpstreamHandler = "", mockllm.New(mockllm.Options{})
	}
	cfg.StreamIdleTimeout = *idle
	if *idle == 0 {
		cfg.StreamIdleTimeout = -1 // the Config's "none"
	}
	if cfg.Now, err = parseClockStart(*clockStart, time.Now); err != nil {
		return err
	}
	var closeLog func()
	if cfg.AccessLog, closeLog, err = openAccessLog(*accessLog); err != nil {
		return err
	}
	defer closeLog()
	if cfg.Profile, err = parseProfile(*profile); err != nil {
		return err
	}
	if cfg.FailurePolicy, err = parsePolicy(*policy); err != nil {
		return err
	}
	if cfg.LogLevel, err = parseLevel(*level); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return gateway.Run(ctx, cfg)
}

// parseClockStart is the wall clock the guest sees: nil (the host's default,
// the real time) for "", else one that reads start at the moment it is made
// and runs on at the real rate from there (monotonic, so a change of the
// system clock does not move it).
func parseClockStart(s string, now func() time.Time) (func() time.Time, error) {
	if s == "" {
		return nil, nil
	}
	start, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, fmt.Errorf("--clock-start %q: want an RFC 3339 time such as 2026-09-30T23:59:00Z", s)
	}
	origin := now()
	return func() time.Time { return start.Add(now().Sub(origin)) }, nil
}

// openAccessLog opens the --access-log destination.
func openAccessLog(dest string) (io.Writer, func(), error) {
	switch dest {
	case "off":
		return nil, func() {}, nil
	case "stderr", "":
		return os.Stderr, func() {}, nil
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("--access-log: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}

func parseProfile(s string) (host.Profile, error) {
	p, err := host.ParseProfile(s)
	if err != nil {
		return 0, fmt.Errorf("--profile %q: want legacy, envoy-2025 or current", s)
	}
	return p, nil
}

func parsePolicy(s string) (host.FailurePolicy, error) {
	switch s {
	case "closed":
		return host.FailClosed, nil
	case "open":
		return host.FailOpen, nil
	case "reload":
		return host.FailReload, nil
	}
	return 0, fmt.Errorf("--failure-policy %q: want closed, open or reload", s)
}

func parseLevel(s string) (host.Level, error) {
	for l := host.LevelTrace; l <= host.LevelCritical; l++ {
		if l.String() == s {
			return l, nil
		}
	}
	return 0, fmt.Errorf("--log-level %q: want trace, debug, info, warn, error or critical", s)
}

// init routes slog to stderr with the level the operator expects from a proxy.
func init() {
	slog.SetDefault(slog.New(newPluginLines(os.Stderr, slog.LevelInfo)))
}
