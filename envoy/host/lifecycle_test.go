package host

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLifecycleRunsCanaryThenOneRootPerWorkerAndStreamCallbacksInEnvoyOrder(t *testing.T) {
	h := newTestHost(t, nil)
	require.Equal(t, "0.2.1", h.ABIVersion())
	// The canary VM configured the plugin and was discarded without on_done/on_delete.
	require.Equal(t, []string{"create 1 0", "vm_start 1", "configure 1 cfg1"}, callbackLog(h, -1))
	for w := 0; w < 2; w++ {
		require.Equal(t, []string{"create 1 0", "vm_start 1", "configure 1 cfg1"}, callbackLog(h, w))
	}

	require.Zero(t, h.OpenStreams())
	s := h.NewStream(StreamInfo{Worker: 1, SourceAddress: "10.0.0.1:5555"})
	require.Equal(t, 1, h.OpenStreams())
	r := s.RequestHeaders(reqHeaders("none"), false)
	require.Equal(t, Continue, r.Action)
	require.NotNil(t, r.Headers)
	r = s.RequestBody([]byte("abc"), true)
	require.Equal(t, Continue, r.Action)
	require.Equal(t, "abc", string(r.Body))
	require.True(t, r.EndOfStream)
	r = s.ResponseHeaders(Headers{{":status", "200"}}, false)
	v, _ := r.Headers.Get("x-filter")
	require.Equal(t, "seen", v, "the filter's response header change is forwarded")
	r = s.ResponseBody([]byte("out"), true)
	require.Equal(t, "out", string(r.Body))
	s.Done()
	s.Done() // once only
	require.Zero(t, h.OpenStreams(), "a stream counts as open until Done, once")
	require.Equal(t, []string{"create 1 0", "vm_start 1", "configure 1 cfg1",
		"create 2 1", "request_headers 2", "request_body 2 3 1", "response_headers 2 200", "response_body 2 3 1",
		"log 2", "done 2", "delete 2"}, callbackLog(h, 1))
}

func TestReloadReusesVMWithNewRootAndRetiresOldRootAfterItsStreams(t *testing.T) {
	h := newTestHost(t, func(o *Options) { o.Workers = 1 })
	s := h.NewStream(StreamInfo{Worker: 0})
	s.RequestHeaders(reqHeaders("none"), true)
	require.NoError(t, h.Reload(context.Background(), []byte("cfg2")))
	// The canary saw the new config too (second canary VM, fresh ids).
	require.Equal(t, []string{"create 1 0", "vm_start 1", "configure 1 cfg1", "create 1 0", "vm_start 1", "configure 1 cfg2"}, callbackLog(h, -1))
	s.Done()
	s2 := h.NewStream(StreamInfo{Worker: 0})
	s2.RequestHeaders(reqHeaders("none"), true)
	s2.Done()
	require.Equal(t, []string{"create 1 0", "vm_start 1", "configure 1 cfg1",
		"create 2 1", "request_headers 2",
		"create 3 0", "vm_start 3", "configure 3 cfg2",
		"log 2", "done 2", "delete 2", "done 1", "delete 1",
		"create 4 3", "request_headers 4", "log 4", "done 4", "delete 4"}, callbackLog(h, 0))
	require.NoError(t, h.Close(context.Background()))
	require.Equal(t, []string{"done 3", "delete 3"}, callbackLog(h, 0)[18:])
}

func TestConfigRejectedByPluginFailsNewAndReload(t *testing.T) {
	_, err := New(context.Background(), Options{Module: guestModule(t, "guest"), PluginConfig: []byte("reject")})
	require.ErrorContains(t, err, "proxy_on_configure returned false")

	h := newTestHost(t, nil)
	require.ErrorContains(t, h.Reload(context.Background(), []byte("reject")), "canary")
	// Workers were not touched: still one configure each.
	require.Len(t, callbackLog(h, 0), 3)
}

func TestModuleWithoutABIMarkerIsRefused(t *testing.T) {
	// A minimal wasm module with no exports at all.
	empty := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	_, err := New(context.Background(), Options{Module: empty})
	require.ErrorContains(t, err, "proxy_abi_version")
}
