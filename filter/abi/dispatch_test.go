package abi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/filter/abi/abitest"
)

type testRoot struct {
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

func (r *testRoot) OnVMStart(c []byte) bool {
	r.maybePanic("vmstart")
	r.vmConfig = string(c)
	return true
}

func (r *testRoot) OnConfigure(c []byte) bool {
	r.maybePanic("configure")
	r.pluginConfig = string(c)
	return !r.refuse
}
func (r *testRoot) OnTick() { r.events = append(r.events, "tick") }
func (r *testRoot) OnHTTPCallResponse(token uint32, h, b, t int) {
	r.events = append(r.events, "callout")
}

func (r *testRoot) NewHTTPContext(id uint32) abi.HTTPContext {
	if r.declineStreams {
		return nil
	}
	s := &testStream{root: r}
	r.streams[id] = s
	return s
}
func (r *testRoot) OnDone() bool { r.maybePanic("done"); return false }
func (r *testRoot) OnDelete()    { r.events = append(r.events, "root delete") }

type testStream struct {
	root   *testRoot
	events []string
}

func (s *testStream) OnRequestHeaders(n int, end bool) abi.Action {
	s.root.maybePanic("headers")
	s.events = append(s.events, "request headers")
	return abi.ActionPause
}
func (s *testStream) OnRequestBody(int, bool) abi.Action { return abi.ActionPause }
func (s *testStream) OnRequestTrailers(int) abi.Action   { return abi.ActionContinue }
func (s *testStream) OnResponseHeaders(int, bool) abi.Action {
	return abi.ActionContinue
}
func (s *testStream) OnResponseBody(int, bool) abi.Action { return abi.ActionContinue }
func (s *testStream) OnResponseTrailers(int) abi.Action   { return abi.ActionContinue }
func (s *testStream) OnLog()                              { s.events = append(s.events, "log") }
func (s *testStream) OnDone()                             { s.events = append(s.events, "done") }
func (s *testStream) OnDelete()                           { s.events = append(s.events, "delete") }

// setup registers a factory that hands out root and returns the fake host.
func setup(t *testing.T, root *testRoot) *abitest.Fake {
	t.Helper()
	f := abitest.New(nil)
	abi.UseHost(f)
	root.streams = map[uint32]*testStream{}
	abi.SetRootContextFactory(func(id uint32, h abi.Host) abi.RootContext {
		require.Same(t, f, h, "the factory gets the binding's host")
		return root
	})
	t.Cleanup(func() { abi.UseHost(nil) })
	return f
}

func TestPluginStartReadsBothConfigurationsFromHostBuffers(t *testing.T) {
	root := &testRoot{}
	f := setup(t, root)
	f.SetBufferData(abi.BufferVMConfiguration, []byte("vm-cfg"))
	f.SetBufferData(abi.BufferPluginConfiguration, []byte(`{"a":1}`))
	abi.OnContextCreate(1, 0)
	require.True(t, abi.OnVMStart(1, 6))
	require.True(t, abi.OnConfigure(1, 7))
	require.Equal(t, "vm-cfg", root.vmConfig)
	require.Equal(t, `{"a":1}`, root.pluginConfig)
}

func TestConfigureRejectsWhenTheRootSaysNoOrTheBufferIsMissing(t *testing.T) {
	root := &testRoot{refuse: true}
	f := setup(t, root)
	f.SetBufferData(abi.BufferPluginConfiguration, []byte("x"))
	abi.OnContextCreate(1, 0)
	require.False(t, abi.OnConfigure(1, 1))

	root.refuse = false
	f.DropBuffer(abi.BufferPluginConfiguration)
	require.False(t, abi.OnConfigure(1, 1))
	require.True(t, f.Logged(abi.LogError, "reading configuration buffer"))
	require.True(t, abi.OnConfigure(1, 0), "no configuration is an empty one")
}

func TestStreamLifecycleRoutesToTheStreamAndForgetsItOnDelete(t *testing.T) {
	root := &testRoot{}
	setup(t, root)
	abi.OnContextCreate(1, 0)
	abi.OnContextCreate(2, 1)
	require.Equal(t, abi.ActionPause, abi.OnRequestHeaders(2, 3, false))
	abi.OnLog(2)
	require.True(t, abi.OnDone(2))
	abi.OnDelete(2)
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
	setup(t, root)
	abi.OnContextCreate(1, 0)
	abi.OnTick(1)
	abi.OnHTTPCallResponse(1, 9, 0, 0, 0)
	abi.OnDelete(1)
	require.Equal(t, []string{"tick", "callout", "root delete"}, root.events)
}

func TestUnknownContextsContinueAndAreLogged(t *testing.T) {
	root := &testRoot{}
	f := setup(t, root)
	require.Equal(t, abi.ActionContinue, abi.OnRequestHeaders(42, 1, true))
	require.Equal(t, abi.ActionContinue, abi.OnResponseBody(42, 10, true))
	require.True(t, abi.OnDone(42))
	abi.OnDelete(42)
	abi.OnTick(42)
	abi.OnHTTPCallResponse(42, 1, 0, 0, 0)
	require.False(t, abi.OnVMStart(42, 0), "a root we never created cannot start")
	require.False(t, abi.OnConfigure(42, 0))
	require.True(t, f.Logged(abi.LogWarn, "unknown stream context"))

	abi.OnContextCreate(43, 41)
	require.Equal(t, abi.ActionContinue, abi.OnRequestHeaders(43, 1, true), "a stream of an unknown root passes")
}

func TestDeclinedStreamsPassThrough(t *testing.T) {
	root := &testRoot{declineStreams: true}
	f := setup(t, root)
	abi.OnContextCreate(1, 0)
	abi.OnContextCreate(2, 1)
	require.Equal(t, abi.ActionContinue, abi.OnRequestHeaders(2, 1, false))
	require.Empty(t, f.Logs(), "a declined stream is not an error")
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
			f := setup(t, root)
			abi.OnContextCreate(1, 0)
			require.NotPanics(t, func() { require.Equal(t, c.want, c.call()) })
			require.True(t, f.Logged(abi.LogCritical, "boom in "+c.where))
		})
	}
}

func TestMissingFactoryIsLoggedNotFatal(t *testing.T) {
	f := abitest.New(nil)
	abi.UseHost(f)
	t.Cleanup(func() { abi.UseHost(nil) })
	abi.OnContextCreate(1, 0)
	require.False(t, abi.OnConfigure(1, 0))
	require.True(t, f.Logged(abi.LogError, "no root context factory"))
}
