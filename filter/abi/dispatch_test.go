package abi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/filter/sdkhost"
)

// testVM hands out one root; the root and its streams record what reached
// them.
type testVM struct {
	t    *testing.T
	host abi.Host
	root *testRoot
}

func (v *testVM) OnVMStart(size int) types.OnVMStartStatus {
	v.root.maybePanic("vmstart")
	c, err := abi.Configuration(abi.CurrentHost(), abi.BufferVMConfiguration, size)
	v.root.vmConfig = string(c)
	return types.OnVMStartStatus(err == nil)
}

func (v *testVM) NewPluginContext(uint32) types.PluginContext {
	require.Same(v.t, v.host, abi.CurrentHost(), "the VM context reaches the binding's host")
	return v.root
}

type testRoot struct {
	types.DefaultPluginContext
	vmConfig, pluginConfig string
	events                 []string
	panicIn                string
	refuse                 bool
	declineStreams         bool
	streams                map[uint32]*testStream
}

func (r *testRoot) maybePanic(where string) {
	if r.panicIn == where {
		panic("boom in " + where)
	}
}

// OnPluginStart reads the configuration as the filter's root does: a
// buffer it cannot read is logged and rejects it.
func (r *testRoot) OnPluginStart(size int) types.OnPluginStartStatus {
	r.maybePanic("configure")
	c, err := abi.Configuration(abi.CurrentHost(), abi.BufferPluginConfiguration, size)
	if err != nil {
		abi.CurrentHost().Log(abi.LogError, err.Error())
		return false
	}
	r.pluginConfig = string(c)
	return types.OnPluginStartStatus(!r.refuse)
}
func (r *testRoot) OnTick() { r.events = append(r.events, "tick") }
func (r *testRoot) OnHTTPCallResponse(token uint32, h, b, t int) {
	r.events = append(r.events, "callout")
}

func (r *testRoot) NewHttpContext(id uint32) types.HttpContext {
	if r.declineStreams {
		return nil
	}
	s := &testStream{root: r}
	r.streams[id] = s
	return s
}
func (r *testRoot) OnPluginDone() bool { r.maybePanic("done"); return false }
func (r *testRoot) OnDelete()          { r.events = append(r.events, "root delete") }

type testStream struct {
	types.DefaultHttpContext
	root   *testRoot
	events []string
}

func (s *testStream) OnHttpRequestHeaders(n int, end bool) types.Action {
	s.root.maybePanic("headers")
	s.events = append(s.events, "request headers")
	return types.ActionPause
}
func (s *testStream) OnHttpRequestBody(int, bool) types.Action { return types.ActionPause }
func (s *testStream) OnHttpStreamDone()                        { s.events = append(s.events, "log") }
func (s *testStream) OnDone()                                  { s.events = append(s.events, "done") }
func (s *testStream) OnDelete()                                { s.events = append(s.events, "delete") }

// emulator is the SDK's emulator under the binding's host, which holds the VM
// and plugin configurations.
type emulator struct{ proxytest.HostEmulator }

// logged reports whether a line at level contains part.
func (h emulator) logged(level abi.LogLevel, part string) bool {
	var lines []string
	switch level {
	case abi.LogWarn:
		lines = h.GetWarnLogs()
	case abi.LogError:
		lines = h.GetErrorLogs()
	case abi.LogCritical:
		lines = h.GetCriticalLogs()
	}
	for _, l := range lines {
		if strings.Contains(l, part) {
			return true
		}
	}
	return false
}

func newHost(t *testing.T, vmConfig, pluginConfig string) (emulator, abi.Host) {
	t.Helper()
	emu, reset := proxytest.NewHostEmulator(proxytest.NewEmulatorOption().WithVMContext(&types.DefaultVMContext{}).
		WithVMConfiguration([]byte(vmConfig)).WithPluginConfiguration([]byte(pluginConfig)))
	h := sdkhost.New(nil)
	abi.UseHost(h)
	t.Cleanup(func() { abi.UseHost(nil); reset() })
	return emulator{emu}, h
}

// setup registers a VM context that hands out root.
func setup(t *testing.T, root *testRoot, vmConfig, pluginConfig string) emulator {
	t.Helper()
	emu, h := newHost(t, vmConfig, pluginConfig)
	root.streams = map[uint32]*testStream{}
	abi.SetVMContext(&testVM{t: t, host: h, root: root})
	return emu
}

func TestPluginStartReadsBothConfigurationsFromHostBuffers(t *testing.T) {
	root := &testRoot{}
	setup(t, root, "vm-cfg", `{"a":1}`)
	abi.OnContextCreate(1, 0)
	require.True(t, abi.OnVMStart(1, 6))
	require.True(t, abi.OnConfigure(1, 7))
	require.Equal(t, "vm-cfg", root.vmConfig)
	require.Equal(t, `{"a":1}`, root.pluginConfig)
}

func TestConfigureRejectsWhenTheRootSaysNoOrTheBufferIsMissing(t *testing.T) {
	t.Run("the root says no", func(t *testing.T) {
		setup(t, &testRoot{refuse: true}, "", "x")
		abi.OnContextCreate(1, 0)
		require.False(t, abi.OnConfigure(1, 1))
	})
	t.Run("the buffer is missing", func(t *testing.T) {
		f := setup(t, &testRoot{}, "", "")
		abi.OnContextCreate(1, 0)
		require.False(t, abi.OnConfigure(1, 1))
		require.True(t, f.logged(abi.LogError, "reading configuration buffer"))
		require.True(t, abi.OnConfigure(1, 0), "no configuration is an empty one")
	})
}

// liveOneStream creates root 1 and its stream 2, and takes the stream
// through request headers, log, done and delete.
func liveOneStream(t *testing.T) {
	t.Helper()
	abi.OnContextCreate(1, 0)
	abi.OnContextCreate(2, 1)
	require.Equal(t, abi.ActionPause, abi.OnRequestHeaders(2, 3, false))
	abi.OnLog(2)
	require.True(t, abi.OnDone(2))
	abi.OnDelete(2)
}

func TestStreamLifecycleRoutesToTheStreamAndForgetsItOnDelete(t *testing.T) {
	root := &testRoot{}
	setup(t, root, "", "")
	liveOneStream(t)
	require.Equal(t, []string{"request headers", "log", "done", "delete"}, root.streams[2].events)
	nroots, nstreams := abi.Contexts()
	require.Equal(t, 1, nroots)
	require.Zero(t, nstreams, "a deleted stream must not stay registered")

	require.False(t, abi.OnDone(1), "a root's answer to done is passed through")
	abi.OnDelete(1)
	nroots, _ = abi.Contexts()
	require.Zero(t, nroots)
}

func TestRootCallbacksReachTheRoot(t *testing.T) {
	root := &testRoot{}
	setup(t, root, "", "")
	abi.OnContextCreate(1, 0)
	abi.OnTick(1)
	abi.OnHTTPCallResponse(1, 9, 0, 0, 0)
	abi.OnDelete(1)
	require.Equal(t, []string{"tick", "callout", "root delete"}, root.events)
}

func TestUnknownContextsContinueAndAreLogged(t *testing.T) {
	root := &testRoot{}
	f := setup(t, root, "", "")
	require.Equal(t, abi.ActionContinue, abi.OnRequestHeaders(42, 1, true))
	require.Equal(t, abi.ActionContinue, abi.OnResponseBody(42, 10, true))
	require.True(t, abi.OnDone(42))
	abi.OnDelete(42)
	abi.OnTick(42)
	abi.OnHTTPCallResponse(42, 1, 0, 0, 0)
	require.False(t, abi.OnVMStart(42, 0), "a root we never created cannot start")
	require.False(t, abi.OnConfigure(42, 0))
	require.True(t, f.logged(abi.LogWarn, "unknown stream context"))

	abi.OnContextCreate(43, 41)
	require.Equal(t, abi.ActionContinue, abi.OnRequestHeaders(43, 1, true), "a stream of an unknown root passes")
}

func TestDeclinedStreamsPassThrough(t *testing.T) {
	root := &testRoot{declineStreams: true}
	f := setup(t, root, "", "")
	abi.OnContextCreate(1, 0)
	abi.OnContextCreate(2, 1)
	require.Equal(t, abi.ActionContinue, abi.OnRequestHeaders(2, 1, false))
	for _, logs := range [][]string{f.GetTraceLogs(), f.GetDebugLogs(), f.GetInfoLogs(), f.GetWarnLogs(), f.GetErrorLogs(), f.GetCriticalLogs()} {
		require.Empty(t, logs, "a declined stream is not an error")
	}
}

func TestPanicsAreContainedWithSafeDefaults(t *testing.T) {
	cases := []struct {
		where string
		call  func() any
		want  any
	}{
		{"vmstart", func() any { return abi.OnVMStart(1, 0) }, false},
		{"configure", func() any { return abi.OnConfigure(1, 0) }, false},
		{"done", func() any { return abi.OnDone(1) }, true},
		{"headers", func() any { abi.OnContextCreate(2, 1); return abi.OnRequestHeaders(2, 1, false) }, abi.ActionContinue},
	}
	for _, c := range cases {
		t.Run(c.where, func(t *testing.T) {
			root := &testRoot{panicIn: c.where}
			f := setup(t, root, "", "")
			abi.OnContextCreate(1, 0)
			require.NotPanics(t, func() { require.Equal(t, c.want, c.call()) })
			require.True(t, f.logged(abi.LogCritical, "boom in "+c.where))
		})
	}
}

func TestMissingVMContextIsLoggedNotFatal(t *testing.T) {
	f, _ := newHost(t, "", "")
	abi.OnContextCreate(1, 0)
	require.False(t, abi.OnConfigure(1, 0))
	require.True(t, f.logged(abi.LogError, "no VM context registered"))
}

// makerRoot is a testRoot that makes its streams as abi.Streams.
type makerRoot struct{ *testRoot }

func (r makerRoot) NewStream(id uint32) abi.Stream {
	s := &testStream{root: r.testRoot, events: []string{"made as a Stream"}}
	r.streams[id] = s
	return s
}

// NewHttpContext is what the binding must not call on a StreamMaker.
func (r makerRoot) NewHttpContext(uint32) types.HttpContext {
	panic("a StreamMaker's streams are made by NewStream")
}

type makerVM struct {
	types.DefaultVMContext
	root makerRoot
}

func (v *makerVM) NewPluginContext(uint32) types.PluginContext { return v.root }

// A root that makes abi.Streams gets every callback of its streams as an
// SDK root's streams do, done and delete included.
func TestAStreamMakersStreamsGetEveryCallback(t *testing.T) {
	newHost(t, "", "")
	root := makerRoot{&testRoot{streams: map[uint32]*testStream{}}}
	abi.SetVMContext(&makerVM{root: root})
	liveOneStream(t)
	require.Equal(t, []string{"made as a Stream", "request headers", "log", "done", "delete"}, root.streams[2].events)
	_, nstreams := abi.Contexts()
	require.Zero(t, nstreams)
}
