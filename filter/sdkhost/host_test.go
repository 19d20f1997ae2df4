package sdkhost_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/filter/sdkhost"
)

// onBody is a VM whose streams run one function on the request body.
type onBody struct {
	types.DefaultVMContext
	h   *sdkhost.Host
	run func(h *sdkhost.Host, size int)
}

func (v *onBody) NewPluginContext(uint32) types.PluginContext { return &onBodyPlugin{v: v} }

type onBodyPlugin struct {
	types.DefaultPluginContext
	v *onBody
}

func (p *onBodyPlugin) NewHttpContext(uint32) types.HttpContext { return &onBodyStream{v: p.v} }

type onBodyStream struct {
	types.DefaultHttpContext
	v *onBody
}

func (s *onBodyStream) OnHttpRequestBody(size int, end bool) types.Action {
	s.v.run(s.v.h, size)
	return types.ActionContinue
}

// bodyAfter plays a request body through run and returns what goes
// upstream.
func bodyAfter(t *testing.T, body string, run func(h *sdkhost.Host, size int)) string {
	t.Helper()
	vm := &onBody{h: sdkhost.New(nil), run: run}
	emu, reset := proxytest.NewHostEmulator(proxytest.NewEmulatorOption().WithVMContext(vm))
	defer reset()
	id := emu.InitializeHttpContext()
	emu.CallOnRequestHeaders(id, [][2]string{{":path", "/"}}, false)
	emu.CallOnRequestBody(id, []byte(body), true)
	return string(emu.GetCurrentRequestBody(id))
}

func TestSetBufferHasEnvoysSemanticsOnTheSDK(t *testing.T) {
	cases := []struct {
		name        string
		start, size int
		data        string
		want        string
		st          abi.Status
	}{
		{"start 0 replaces the first size bytes", 0, 5, "HELLO", "HELLO world", abi.StatusOK},
		{"start 0 and the whole size replaces the body", 0, 11, "bye", "bye", abi.StatusOK},
		{"a size past the end replaces the body", 0, 99, "bye", "bye", abi.StatusOK},
		{"start 0 size 0 prepends", 0, 0, ">> ", ">> hello world", abi.StatusOK},
		{"a start at the end appends", 11, 0, "!", "hello world!", abi.StatusOK},
		{"a start inside the body is a bad argument", 3, 2, "x", "hello world", abi.StatusBadArgument},
		{"a negative start is a bad argument", -1, 0, "x", "hello world", abi.StatusBadArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st abi.Status
			got := bodyAfter(t, "hello world", func(h *sdkhost.Host, size int) {
				st = h.SetBuffer(abi.BufferRequestBody, c.start, c.size, []byte(c.data))
			})
			require.Equal(t, c.st, st)
			require.Equal(t, c.want, got)
		})
	}
}

func TestReadsAnswerAsEnvoyDoesWhereTheEmulatorSaysNotFound(t *testing.T) {
	bodyAfter(t, "hello", func(h *sdkhost.Host, size int) {
		b, st := h.GetBuffer(abi.BufferRequestBody, 0, 0)
		require.Equal(t, abi.StatusOK, st, "a zero-byte read is Ok")
		require.Empty(t, b)
		b, st = h.GetBuffer(abi.BufferRequestBody, 1, size)
		require.Equal(t, abi.StatusOK, st)
		require.Equal(t, "ello", string(b))
		b[0] = 'X' // the caller owns what it got
		again, _ := h.GetBuffer(abi.BufferRequestBody, 0, size)
		require.Equal(t, "hello", string(again))
		pairs, st := h.GetHeaders(abi.MapRequestTrailers)
		require.Equal(t, abi.StatusOK, st, "an empty map is Ok")
		require.Empty(t, pairs)
		_, st = h.GetHeader(abi.MapRequestHeaders, "absent")
		require.Equal(t, abi.StatusNotFound, st)
		v, cas, st := h.GetSharedData("k")
		require.Equal(t, abi.StatusNotFound, st)
		require.Nil(t, v)
		require.Zero(t, cas)
		require.Equal(t, abi.StatusOK, h.SetSharedData("k", []byte("v1"), 0))
		v, cas, _ = h.GetSharedData("k")
		require.Equal(t, "v1", string(v))
		require.Equal(t, abi.StatusCasMismatch, h.SetSharedData("k", []byte("v2"), cas+7))
		require.Equal(t, abi.StatusOK, h.SetSharedData("k", []byte("v2"), cas))
	})
}
