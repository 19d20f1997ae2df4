package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokenbudget/tokenbudget/envoy/host"
)

// Gateway is one running local gateway: the wasm host, the proxy listener, the admin listener and,
// with an UpstreamHandler, the in-process upstream.
type Gateway struct {
	cfg       Config
	log       *slog.Logger
	access    *accessLog // nil: no access log
	host      *host.Host
	upstream  *url.URL
	transport *http.Transport

	inproc   *http.Server // serves Config.UpstreamHandler; nil with a URL upstream
	inprocLn net.Listener
	proxy    *http.Server
	proxyLn  net.Listener
	admin    *http.Server
	adminLn  net.Listener
	reloadMu sync.Mutex
	// captured collects the plugin's error lines while a reload's canary runs (nil otherwise),
	// so a rejected reload can say why.
	captureMu sync.Mutex
	captured  *[]string
	started   atomic.Bool
	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

// New loads the module and plugin config into a wasm host (whose canary VM rejects a bad config
// here, as Envoy rejects it at load) and prepares the upstream. Nothing listens until Start.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger}
	if cfg.AccessLog != nil {
		g.access = &accessLog{w: cfg.AccessLog}
	}
	if cfg.UpstreamHandler != nil {
		if cfg.Upstream != "" {
			return nil, fmt.Errorf("gateway: upstream %q and an upstream handler: set one", cfg.Upstream)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("gateway: in-process upstream listener: %w", err)
		}
		g.inprocLn = ln
		g.inproc = &http.Server{Handler: cfg.UpstreamHandler, ReadHeaderTimeout: 10 * time.Second}
		cfg.Upstream = "http://" + ln.Addr().String()
	}
	u, err := url.Parse(cfg.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		g.closeInprocListener()
		return nil, fmt.Errorf("gateway: upstream %q: want an http(s) URL (or an upstream handler)", cfg.Upstream)
	}
	g.upstream = u
	clusters := make(map[string]string, len(cfg.Clusters)+1)
	for k, v := range cfg.Clusters {
		clusters[k] = v
	}
	if _, ok := clusters["llm"]; !ok {
		clusters["llm"] = u.Scheme + "://" + u.Host
	}
	h, err := host.New(context.Background(), host.Options{
		Module:         cfg.Module,
		PluginConfig:   cfg.PluginConfig,
		VMConfig:       cfg.VMConfig,
		RootID:         cfg.RootID,
		VMID:           cfg.VMID,
		PluginName:     cfg.PluginName,
		Workers:        cfg.Workers,
		Profile:        cfg.Profile,
		FailurePolicy:  cfg.FailurePolicy,
		Clusters:       clusters,
		BufferLimit:    cfg.BufferLimit,
		Env:            cfg.VMEnv,
		Now:            cfg.Now,
		Log:            g.pluginLog,
		LogLevel:       cfg.LogLevel,
		StatsTags:      cfg.StatsTags,
		CacheDir:       cfg.CacheDir,
		AllowStdioInit: cfg.AllowStdioInit,
	})
	if err != nil {
		g.closeInprocListener()
		return nil, fmt.Errorf("gateway: load plugin: %w", err)
	}
	g.host = h
	g.transport = &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // a proxy passes encodings through; it does not negotiate its own
	}
	return g, nil
}

func (g *Gateway) closeInprocListener() {
	if g.inprocLn != nil {
		_ = g.inprocLn.Close()
	}
}

func (g *Gateway) pluginLog(l host.Level, msg string) {
	if l >= host.LevelError {
		g.captureMu.Lock()
		if g.captured != nil {
			*g.captured = append(*g.captured, msg)
		}
		g.captureMu.Unlock()
	}
	lvl := slog.LevelInfo
	switch {
	case l <= host.LevelDebug:
		lvl = slog.LevelDebug
	case l == host.LevelWarn:
		lvl = slog.LevelWarn
	case l >= host.LevelError:
		lvl = slog.LevelError
	}
	g.log.Log(context.Background(), lvl, msg, "source", "wasm")
}

// Start binds the proxy and admin listeners and serves them (and the in-process upstream) in the background;
// on_tick starts firing on the real clock.
func (g *Gateway) Start() error {
	if !g.started.CompareAndSwap(false, true) {
		return errors.New("gateway: already started")
	}
	ln, err := net.Listen("tcp", g.cfg.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", g.cfg.Listen, err)
	}
	g.proxyLn = ln
	// Go's own header reader stops a little past MaxHeaderBytes with 431; ServeHTTP applies the
	// exact limit.
	g.proxy = &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second, MaxHeaderBytes: g.cfg.MaxRequestHeadersBytes,
		Protocols: proxyProtocols()}
	if g.cfg.Admin != "off" {
		aln, err := net.Listen("tcp", g.cfg.Admin)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("gateway: admin listen %s: %w", g.cfg.Admin, err)
		}
		g.adminLn = aln
		g.admin = &http.Server{Handler: g.adminHandler(), ReadHeaderTimeout: 10 * time.Second}
		g.serve(g.admin, aln)
	}
	if g.inproc != nil {
		g.serve(g.inproc, g.inprocLn)
	}
	g.serve(g.proxy, ln)
	g.host.StartTicker()
	return nil
}

// proxyProtocols are what the proxy listener speaks: HTTP/1.1, and HTTP/2
// over cleartext with prior knowledge (h2c), as an Envoy listener whose
// http_connection_manager has codec_type AUTO does (it tells the two apart
// by the HTTP/2 connection preface). Without it `curl --http2-prior-knowledge`
// and gRPC-style clients got an empty reply.
func proxyProtocols() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return &p
}

func (g *Gateway) serve(s *http.Server, ln net.Listener) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("gateway: serve", "addr", ln.Addr().String(), "err", err)
		}
	}()
}

// Addr is the proxy's listening address ("127.0.0.1:port"), once started.
func (g *Gateway) Addr() string { return addrOf(g.proxyLn) }

// AdminAddr is the admin server's listening address, once started ("" when disabled).
func (g *Gateway) AdminAddr() string { return addrOf(g.adminLn) }

// UpstreamURL is where requests go (the in-process upstream's loopback URL with an UpstreamHandler).
func (g *Gateway) UpstreamURL() string { return g.upstream.String() }

// Host is the wasm host, for tests that inspect metrics, logs or traps directly.
func (g *Gateway) Host() *host.Host { return g.host }

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// Reload applies a new plugin configuration the way Envoy applies an xDS update: a canary VM
// checks it first, and on success every worker gets a new root context with it. A rejected config
// leaves the running one in place and returns the reason: the host's verdict and what the
// canary VM logged at error level while it refused the config (Envoy writes the same lines to its
// log; an operator reloading by hand should not have to go and find them).
func (g *Gateway) Reload(pluginConfig []byte) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	var lines []string
	g.captureMu.Lock()
	g.captured = &lines
	g.captureMu.Unlock()
	err := g.host.Reload(context.Background(), pluginConfig)
	g.captureMu.Lock()
	g.captured = nil
	g.captureMu.Unlock()
	if err != nil {
		if why := g.canaryLines(lines); len(why) > 0 {
			return fmt.Errorf("gateway: reload rejected: %w\n%s", err, strings.Join(why, "\n"))
		}
		return fmt.Errorf("gateway: reload rejected: %w", err)
	}
	g.log.Info("gateway: plugin config reloaded", "bytes", len(pluginConfig))
	return nil
}

// canaryLines keeps the captured lines the canary VM logged: a worker logging an error while the
// reload runs goes through the same callback, and its line is not the reason.
func (g *Gateway) canaryLines(lines []string) []string {
	if len(lines) == 0 {
		return nil
	}
	canary := map[string]bool{}
	for _, e := range g.host.Logs() {
		if e.Worker == -1 && e.Level >= host.LevelError {
			canary[e.Message] = true
		}
	}
	var out []string
	for _, l := range lines {
		if canary[l] {
			out = append(out, l)
		}
	}
	return out
}

// ReloadFromFile re-reads Config.ConfigPath and reloads it (POST /reload, SIGHUP).
func (g *Gateway) ReloadFromFile() error {
	if g.cfg.ConfigPath == "" {
		return errors.New("gateway: no config file to re-read (started without --config)")
	}
	b, err := os.ReadFile(g.cfg.ConfigPath)
	if err != nil {
		return fmt.Errorf("gateway: re-read plugin config: %w", err)
	}
	return g.Reload(b)
}

// Close stops accepting, waits briefly for in-flight requests, then closes the host (root
// contexts get on_done) and the in-process upstream.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.closing.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var errs []error
		for _, s := range []*http.Server{g.proxy, g.admin, g.inproc} {
			if s == nil {
				continue
			}
			if err := s.Shutdown(ctx); err != nil {
				_ = s.Close()
			}
		}
		if g.inproc != nil && !g.started.Load() {
			g.closeInprocListener()
		}
		g.wg.Wait()
		g.transport.CloseIdleConnections()
		g.host.StopTicker()
		if err := g.host.Close(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("gateway: close host: %w", err))
		}
		g.closeErr = errors.Join(errs...)
	})
	return g.closeErr
}
