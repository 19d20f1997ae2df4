package wasmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/core"
	"github.com/tokenbudget/tokenbudget/filter/sdkhost"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

// TestTheSharedCasesHoldInTheSDKEmulator runs the table the compiled
// module runs in the wazero host (cases_test.go), natively: the filter's
// VM context under proxytest.NewHostEmulator, its host calls through the
// SDK's proxywasm functions (sdkhost), callouts answered through the
// emulator's HTTP-call emulation by a real sharedstore over real HTTP.
func TestTheSharedCasesHoldInTheSDKEmulator(t *testing.T) {
	Run(t, func(t *testing.T, c Case) Host { return newEmulated(t, c) })
}

// twoWorkers stands in the emulator's one plugin-context slot with two
// worker VMs of the filter, each a core.VM with its own binding
// (sdkhost.Host) and one root: each stream goes to the worker the exchange
// names, and both share the emulator's shared data, as Envoy's workers
// share theirs (docs/sdk-emulator.md). Each worker numbers its contexts
// itself, so both roots have the emulator's plugin-context id, and both
// make their callouts from it.
type twoWorkers struct {
	vms   [2]types.VMContext
	roots [2]types.PluginContext
	next  int
}

func (p *twoWorkers) OnVMStart(size int) types.OnVMStartStatus {
	a, b := p.vms[0].OnVMStart(size), p.vms[1].OnVMStart(size)
	if a != types.OnVMStartStatusOK {
		return a
	}
	return b
}

func (p *twoWorkers) NewPluginContext(id uint32) types.PluginContext {
	p.roots = [2]types.PluginContext{p.vms[0].NewPluginContext(id), p.vms[1].NewPluginContext(id)}
	return p
}

func (p *twoWorkers) OnPluginStart(size int) types.OnPluginStartStatus {
	a, b := p.roots[0].OnPluginStart(size), p.roots[1].OnPluginStart(size)
	return a && b
}

func (p *twoWorkers) OnPluginDone() bool {
	a, b := p.roots[0].OnPluginDone(), p.roots[1].OnPluginDone()
	return a && b
}

func (p *twoWorkers) OnQueueReady(uint32) {}
func (p *twoWorkers) OnTick()             { p.roots[0].OnTick(); p.roots[1].OnTick() }

func (p *twoWorkers) NewTcpContext(uint32) types.TcpContext { return nil }

func (p *twoWorkers) NewHttpContext(id uint32) types.HttpContext {
	return p.roots[p.next].NewHttpContext(id)
}

// emulated is the SDK's emulator as a Host.
type emulated struct {
	t       *testing.T
	emu     proxytest.HostEmulator
	workers *twoWorkers
	clock   *clock
	store   string // the fleet store's URL, "" when calls fail
	// answered counts the callouts answered per calling context: the
	// emulator lists every callout a context ever made.
	answered map[uint32]int
}

// noDecision marks the filter state unwritten: the emulator keeps
// properties per host, not per stream, and cannot delete one.
const noDecision = "-"

func newEmulated(t *testing.T, c Case) *emulated {
	e := &emulated{t: t, clock: &clock{t: time.Unix(1_800_000_000, 0)}, answered: map[uint32]int{}}
	if c.Store == FleetStore {
		rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
		t.Cleanup(func() { _ = rdb.Close() })
		srv := httptest.NewServer(server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{}), Token: StoreToken}))
		t.Cleanup(srv.Close)
		e.store = srv.URL
	}
	e.workers = &twoWorkers{}
	for i := range e.workers.vms {
		h := sdkhost.New(e.clock.Now)
		e.workers.vms[i] = h.Contexts(core.NewVM(h))
	}
	opt := proxytest.NewEmulatorOption().WithVMContext(e.workers).WithPluginConfiguration([]byte(c.Config))
	emu, reset := proxytest.NewHostEmulator(opt)
	t.Cleanup(reset)
	e.emu = emu
	require.Equal(t, types.OnVMStartStatusOK, emu.StartVM())
	require.Equal(t, types.OnPluginStartStatusOK, emu.StartPlugin(), "error logs: %v", emu.GetErrorLogs())
	return e
}

func (e *emulated) Name() string { return "proxytest" }

func (e *emulated) Advance(d time.Duration) { e.clock.Advance(d) }

func (e *emulated) Counter(name string) int64 {
	e.emu.Tick()
	e.serveCallouts(proxytest.PluginContextID)
	v, err := e.emu.GetCounterMetric(name)
	if err != nil {
		return 0
	}
	return int64(v)
}

func (e *emulated) Do(x Exchange) Reply {
	t, emu := e.t, e.emu
	t.Helper()
	path, source, status, ct := x.Path, x.Source, x.Status, x.ContentType
	if path == "" {
		path = "/v1/chat/completions"
	}
	if source == "" {
		source = "10.1.2.3:40000"
	}
	if status == 0 {
		status = 200
	}
	if ct == "" {
		ct = "application/json"
	}
	e.workers.next = x.Plugin
	require.NoError(t, emu.SetProperty([]string{"source", "address"}, []byte(source)))
	require.NoError(t, emu.SetProperty([]string{core.FilterStateName}, []byte(noDecision)))

	id := emu.InitializeHttpContext()
	hs := [][2]string{{":method", "POST"}, {":path", path}, {":authority", "llm"}, {":scheme", "http"},
		{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(x.Body))}}
	if x.Key != "" {
		hs = append(hs, [2]string{"authorization", "Bearer " + x.Key})
	}
	hs = append(hs, x.Headers...)
	var out Reply
	finish := func() Reply {
		emu.CompleteHttpContext(id)
		e.serveCallouts(id)
		if v, err := emu.GetProperty([]string{core.FilterStateName}); err == nil && string(v) != noDecision {
			require.NoError(t, json.Unmarshal(v, &out.Decision), string(v))
		}
		return out
	}
	local := func() bool {
		lr := emu.GetSentLocalResponse(id)
		if lr == nil {
			return false
		}
		out.Status, out.Headers, out.Body, out.Local = int(lr.StatusCode), lr.Headers, lr.Data, true
		return true
	}

	act := emu.CallOnRequestHeaders(id, hs, x.Body == "")
	if local() {
		return finish()
	}
	require.Equal(t, types.ActionContinue, act, "request headers")
	out.UpstreamHeaders = append([][2]string(nil), emu.GetCurrentRequestHeaders(id)...)
	if x.ResetPending {
		require.Equal(t, types.ActionPause, emu.CallOnRequestBody(id, []byte(x.Body), true), "the admission waits for the store")
		return finish()
	}
	if x.Body != "" {
		act = emu.CallOnRequestBody(id, []byte(x.Body), true)
		e.serveCallouts(id)
		if local() {
			return finish()
		}
		// A paused body waits for the store's answer, which resumes it.
		require.Equal(t, types.ActionContinue, emu.GetCurrentHttpStreamAction(id), "the stream was left paused")
		out.UpstreamBody = append([]byte(nil), emu.GetCurrentRequestBody(id)...)
	}

	rh := append([][2]string{{":status", strconv.Itoa(status)}, {"content-type", ct}}, x.RespHeaders...)
	emu.CallOnResponseHeaders(id, rh, len(x.Chunks) == 0)
	out.Status = status
	out.Headers = append([][2]string(nil), emu.GetCurrentResponseHeaders(id)...)
	for i, c := range x.Chunks {
		end := i == len(x.Chunks)-1 && !x.Cut
		emu.CallOnResponseBody(id, []byte(c), end)
		out.Body = append(out.Body, emu.GetCurrentResponseBody(id)...)
	}
	e.serveCallouts(id)
	return finish()
}

// serveCallouts answers every callout made since the last call, until
// none is left (an answer may make another call): through the fleet store
// over HTTP, or as a failed call. The binding makes every call from the
// root context; a stream's own calls (id) are served too, so a call made
// from the wrong context is still answered and the case, not the driver,
// tells.
func (e *emulated) serveCallouts(id uint32) {
	for e.serveFrom(proxytest.PluginContextID)+e.serveFrom(id) > 0 {
	}
}

func (e *emulated) serveFrom(id uint32) int {
	calls := e.emu.GetCalloutAttributesFromContext(id)
	n := len(calls) - e.answered[id]
	for i := e.answered[id]; i < len(calls); i++ {
		e.answered[id] = i + 1
		c := calls[i]
		require.Equal(e.t, "sharedstore", c.Upstream)
		if e.store == "" {
			e.emu.CallOnHttpCallResponse(c.CalloutID, nil, nil, nil)
			continue
		}
		status, headers, body := e.forward(c)
		e.emu.CallOnHttpCallResponse(c.CalloutID, append([][2]string{{":status", strconv.Itoa(status)}}, headers...), nil, body)
	}
	return n
}

// forward sends one callout to the fleet store as the proxy would.
func (e *emulated) forward(c proxytest.HttpCalloutAttribute) (int, [][2]string, []byte) {
	t := e.t
	method, path := Get(c.Headers, ":method"), Get(c.Headers, ":path")
	req, err := http.NewRequest(method, e.store+path, bytes.NewReader(c.Body))
	require.NoError(t, err)
	for _, h := range c.Headers {
		if !strings.HasPrefix(h[0], ":") {
			req.Header.Add(h[0], h[1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var hs [][2]string
	for k, vs := range resp.Header {
		for _, v := range vs {
			hs = append(hs, [2]string{strings.ToLower(k), v})
		}
	}
	return resp.StatusCode, hs, body
}
