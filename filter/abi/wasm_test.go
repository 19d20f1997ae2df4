package abi_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/filter/abi/abitest"
)

// A minimal proxy-wasm host on wazero whose env functions decode the ABI's
// memory arguments and delegate to an abitest.Fake: the probe module's calls
// cross the real imports, out-parameters and proxy_on_memory_allocate, and
// must behave exactly as the same calls on the fake do natively. It is a
// test rig for the binding, not the Envoy-faithful host (envoy/host).
type rig struct {
	t       *testing.T
	ctx     context.Context
	fake    *abitest.Fake
	mod     api.Module
	grpc    []uint32
	allocs  int
	stderr  bytes.Buffer
	logSeen int
}

func (r *rig) read(m api.Module, ptr, size uint64) []byte {
	b, ok := m.Memory().Read(uint32(ptr), uint32(size))
	require.True(r.t, ok, "guest passed memory out of range")
	return append([]byte(nil), b...)
}

func (r *rig) str(m api.Module, ptr, size uint64) string { return string(r.read(m, ptr, size)) }

// give returns data to the guest through proxy_on_memory_allocate, after a
// throwaway allocation that keeps the guest's GC busy, as a host that
// allocates more than it returns would.
func (r *rig) give(m api.Module, data []byte, ptrPtr, sizePtr uint64) {
	alloc := m.ExportedFunction("proxy_on_memory_allocate")
	_, err := alloc.Call(r.ctx, 64<<10)
	require.NoError(r.t, err)
	res, err := alloc.Call(r.ctx, uint64(len(data)))
	require.NoError(r.t, err)
	r.allocs += 2
	require.True(r.t, m.Memory().Write(uint32(res[0]), data))
	require.True(r.t, m.Memory().WriteUint32Le(uint32(ptrPtr), uint32(res[0])))
	require.True(r.t, m.Memory().WriteUint32Le(uint32(sizePtr), uint32(len(data))))
}

func (r *rig) pairs(m api.Module, ptr, size uint64) [][2]string {
	p, ok := abi.DecodePairs(r.read(m, ptr, size))
	require.True(r.t, ok, "guest sent malformed pairs")
	return p
}

type envFn struct {
	name    string
	params  int
	i64At   int // index of an i64 parameter, or -1
	results int
	fn      func(m api.Module, s []uint64) abi.Status
}

func (r *rig) env() []envFn {
	f := r.fake
	ret := func(m api.Module, b []byte, st abi.Status, ptrPtr, sizePtr uint64) abi.Status {
		if st == abi.StatusOK {
			r.give(m, b, ptrPtr, sizePtr)
		}
		return st
	}
	return []envFn{
		{"proxy_log", 3, -1, 1, func(m api.Module, s []uint64) abi.Status {
			f.Log(abi.LogLevel(s[0]), r.str(m, s[1], s[2]))
			return abi.StatusOK
		}},
		{"proxy_get_status", 3, -1, 1, func(m api.Module, s []uint64) abi.Status {
			code, msg := f.GetStatus()
			m.Memory().WriteUint32Le(uint32(s[0]), code)
			return ret(m, []byte(msg), abi.StatusOK, s[1], s[2])
		}},
		{"proxy_get_property", 4, -1, 1, func(m api.Module, s []uint64) abi.Status {
			v, st := f.GetProperty(strings.Split(r.str(m, s[0], s[1]), "\x00")...)
			return ret(m, v, st, s[2], s[3])
		}},
		{"proxy_send_local_response", 8, -1, 1, func(m api.Module, s []uint64) abi.Status {
			r.grpc = append(r.grpc, uint32(s[7]))
			return f.SendLocalResponse(int(s[0]), r.str(m, s[1], s[2]), r.read(m, s[3], s[4]), r.pairs(m, s[5], s[6]))
		}},
		{"proxy_get_shared_data", 5, -1, 1, func(m api.Module, s []uint64) abi.Status {
			v, cas, st := f.GetSharedData(r.str(m, s[0], s[1]))
			m.Memory().WriteUint32Le(uint32(s[4]), cas)
			return ret(m, v, st, s[2], s[3])
		}},
		{"proxy_set_shared_data", 5, -1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.SetSharedData(r.str(m, s[0], s[1]), r.read(m, s[2], s[3]), uint32(s[4]))
		}},
		{"proxy_get_header_map_value", 5, -1, 1, func(m api.Module, s []uint64) abi.Status {
			v, st := f.GetHeader(abi.MapType(s[0]), r.str(m, s[1], s[2]))
			return ret(m, []byte(v), st, s[3], s[4])
		}},
		{"proxy_add_header_map_value", 5, -1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.AddHeader(abi.MapType(s[0]), r.str(m, s[1], s[2]), r.str(m, s[3], s[4]))
		}},
		{"proxy_replace_header_map_value", 5, -1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.ReplaceHeader(abi.MapType(s[0]), r.str(m, s[1], s[2]), r.str(m, s[3], s[4]))
		}},
		{"proxy_remove_header_map_value", 3, -1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.RemoveHeader(abi.MapType(s[0]), r.str(m, s[1], s[2]))
		}},
		{"proxy_get_header_map_pairs", 3, -1, 1, func(m api.Module, s []uint64) abi.Status {
			p, st := f.GetHeaders(abi.MapType(s[0]))
			return ret(m, abi.AppendPairs(nil, p), st, s[1], s[2])
		}},
		{"proxy_get_buffer_bytes", 5, -1, 1, func(m api.Module, s []uint64) abi.Status {
			b, st := f.GetBuffer(abi.BufferType(s[0]), int(s[1]), int(s[2]))
			return ret(m, b, st, s[3], s[4])
		}},
		{"proxy_set_buffer_bytes", 5, -1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.SetBuffer(abi.BufferType(s[0]), int(s[1]), int(s[2]), r.read(m, s[3], s[4]))
		}},
		{"proxy_http_call", 10, -1, 1, func(m api.Module, s []uint64) abi.Status {
			require.Empty(r.t, r.pairs(m, s[6], s[7]), "the binding sends no trailers")
			tok, st := f.HTTPCall(r.str(m, s[0], s[1]), r.pairs(m, s[2], s[3]), r.read(m, s[4], s[5]), uint32(s[8]))
			m.Memory().WriteUint32Le(uint32(s[9]), tok)
			return st
		}},
		{"proxy_set_tick_period_milliseconds", 1, -1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.SetTickPeriod(uint32(s[0]))
		}},
		{"proxy_get_current_time_nanoseconds", 1, -1, 1, func(m api.Module, s []uint64) abi.Status {
			m.Memory().WriteUint64Le(uint32(s[0]), uint64(f.NowNanos()))
			return abi.StatusOK
		}},
		{"proxy_define_metric", 4, -1, 1, func(m api.Module, s []uint64) abi.Status {
			id, st := f.DefineMetric(abi.MetricType(s[0]), r.str(m, s[1], s[2]))
			m.Memory().WriteUint32Le(uint32(s[3]), id)
			return st
		}},
		{"proxy_increment_metric", 2, 1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.IncrementMetric(uint32(s[0]), int64(s[1]))
		}},
		{"proxy_record_metric", 2, 1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.RecordMetric(uint32(s[0]), s[1])
		}},
		{"proxy_get_metric", 2, -1, 1, func(m api.Module, s []uint64) abi.Status {
			v, st := f.GetMetric(uint32(s[0]))
			m.Memory().WriteUint64Le(uint32(s[1]), v)
			return st
		}},
		{"proxy_set_effective_context", 1, -1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.SetEffectiveContext(uint32(s[0]))
		}},
		{"proxy_continue_stream", 1, -1, 1, func(m api.Module, s []uint64) abi.Status {
			return f.ContinueStream(abi.StreamType(s[0]))
		}},
	}
}

func newRig(t *testing.T, wasm []byte) *rig {
	ctx := context.Background()
	r := &rig{t: t, ctx: ctx, fake: abitest.New(nil)}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { _ = rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	b := rt.NewHostModuleBuilder("env")
	for _, e := range r.env() {
		params := make([]api.ValueType, e.params)
		for i := range params {
			params[i] = api.ValueTypeI32
			if i == e.i64At {
				params[i] = api.ValueTypeI64
			}
		}
		fn := e.fn
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
			s[0] = uint64(fn(m, s))
		}), params, []api.ValueType{api.ValueTypeI32}).Export(e.name)
	}
	_, err := b.Instantiate(ctx)
	require.NoError(t, err)
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().
		WithStartFunctions().WithStderr(&r.stderr).WithStdout(&r.stderr))
	require.NoError(t, err)
	r.mod = mod
	r.call("_initialize")
	return r
}

// call runs an export with the fake's current context set, as a host does.
func (r *rig) call(name string, args ...uint64) uint64 {
	r.t.Helper()
	if len(args) > 0 {
		r.fake.Enter(uint32(args[0]))
	}
	fn := r.mod.ExportedFunction(name)
	require.NotNil(r.t, fn, "missing export %s", name)
	res, err := fn.Call(r.ctx, args...)
	require.NoError(r.t, err, "%s trapped; guest stderr: %s", name, r.stderr.String())
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

// newLogs returns the messages logged since the last call.
func (r *rig) newLogs() []string {
	all := r.fake.Logs()
	var out []string
	for _, e := range all[r.logSeen:] {
		out = append(out, e.Msg)
	}
	r.logSeen = len(all)
	return out
}

func TestProbeModuleCrossesTheRealABIAsTheFakeDoes(t *testing.T) {
	r := newRig(t, wasmbuild.Build(t, "./filter/abi/internal/probe"))
	f := r.fake

	f.SetBufferData(abi.BufferVMConfiguration, []byte("vm-cfg"))
	f.SetBufferData(abi.BufferPluginConfiguration, []byte(`{"x":1}`))
	r.call("proxy_on_context_create", 1, 0)
	require.Equal(t, uint64(1), r.call("proxy_on_vm_start", 1, 6))
	require.Equal(t, uint64(1), r.call("proxy_on_configure", 1, 7))
	require.Equal(t, []string{"vm_config=vm-cfg", `plugin_config={"x":1}`}, r.newLogs())

	f.SetHeaders(abi.MapRequestHeaders, [][2]string{{":path", "/v1/chat"}, {":method", "POST"}, {"x-replace", "old"}, {"x-remove", "1"}})
	f.SetBufferData(abi.BufferRequestBody, []byte("abcdefgh"))
	require.Equal(t, abi.StatusOK, f.Shared().Set("counter", []byte("n"), 0))
	f.SetProperty([]byte("10.1.2.3:4567"), "source", "address")
	r.call("proxy_on_context_create", 2, 1)
	require.Equal(t, uint64(abi.ActionPause), r.call("proxy_on_request_headers", 2, 4, 0))
	require.Equal(t, []string{
		"path /v1/chat ok not found 4 false",
		"add ok ok ok",
		"headers :path=/v1/chat;:method=POST;x-replace=new;x-probe=yes; ok",
		"shared n 1 ok ok cas mismatch n+ 2",
		"property 10.1.2.3:4567 ok not found",
		"now " + itoa(f.NowNanos()),
		"metric ok ok ok 5 ok",
		"callout_sent 1 ok bad argument",
		"body cde ok ok",
		"tick_period ok",
		"stress 0",
	}, r.newLogs())
	require.Greater(t, r.allocs, 1000, "the stress loop must go through the allocator")
	body, _ := f.Buffer(abi.BufferRequestBody)
	require.Equal(t, "abcdefgh!", string(body))
	require.Equal(t, uint32(1000), f.TickPeriod())
	require.Equal(t, []abitest.HTTPCall{{Token: 1, Cluster: "store", TimeoutMs: 250, Body: []byte("ping"),
		Headers: [][2]string{{":method", "POST"}, {":path", "/reserve"}, {":authority", "store"}}}}, f.HTTPCalls())

	require.Equal(t, uint64(abi.ActionPause), r.call("proxy_on_request_body", 2, 8, 1))
	require.Equal(t, []abitest.LocalResponse{{Status: 429, Details: "probe_limited", Body: []byte(`{"error":"slow down"}`),
		Headers: [][2]string{{"retry-after", "3"}}}}, f.LocalResponses())
	require.Equal(t, []uint32{0xFFFFFFFF}, r.grpc, "a plain HTTP local response carries grpc status -1")
	r.newLogs()

	f.SetHeaders(abi.MapHTTPCallResponseHeaders, [][2]string{{":status", "200"}})
	f.SetBufferData(abi.BufferHTTPCallResponseBody, []byte("pong"))
	f.SetStatus(11, "reset")
	r.call("proxy_on_http_call_response", 1, 1, 1, 4, 0)
	require.Equal(t, []string{"callout 1 1 :status=200; ok pong ok 11 reset", "continue ok ok"}, r.newLogs())
	require.Equal(t, []abitest.Continue{{ContextID: 2, Stream: abi.StreamRequest}}, f.Continues())

	r.call("proxy_on_tick", 1)
	require.Equal(t, []string{"tick"}, r.newLogs())

	require.Equal(t, uint64(abi.ActionContinue), r.call("proxy_on_response_trailers", 2, 0))
	require.True(t, f.Logged(abi.LogCritical, "panic in proxy_on_response_trailers: probe panic"))
	r.newLogs()

	r.call("proxy_on_log", 2)
	require.Equal(t, uint64(1), r.call("proxy_on_done", 2))
	r.call("proxy_on_delete", 2)
	require.Equal(t, []string{"on_log"}, r.newLogs())
	require.Equal(t, uint64(abi.ActionContinue), r.call("proxy_on_request_headers", 2, 1, 1), "a deleted stream is unknown")
	require.Equal(t, uint64(1), r.call("proxy_on_done", 1))
	r.call("proxy_on_delete", 1)

	f.SetBufferData(abi.BufferPluginConfiguration, []byte("reject"))
	r.call("proxy_on_context_create", 3, 0)
	require.Equal(t, uint64(0), r.call("proxy_on_configure", 3, 6), "the root's refusal reaches the host")
	require.Empty(t, r.stderr.String())
}

func itoa(n int64) string {
	b := []byte{}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
