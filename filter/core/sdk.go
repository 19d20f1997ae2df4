package core

import (
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/sharedstore/remote"
)

// The filter's contexts as the proxy-wasm Go SDK's interfaces describe
// them: VM is a types.VMContext, Root a types.PluginContext and Stream a
// types.HttpContext, so the ABI binding (in the module) and the SDK's
// proxytest emulator (natively) drive the same code.

// VM is the filter's VM context: it makes a Root for every plugin context
// and owns what those roots share. A reload retires a root while its
// streams may still settle through its fleet store, and Envoy drops a
// callout answer whose root context is gone; so retries and callout
// callbacks belong to the VM, and whichever root is alive drives them.
//
// All of a VM's state is here, none in the package: two VMs in one
// process (two emulated workers natively) are independent. The module
// holds one VM, registered with the ABI binding (filter/main.go).
type VM struct {
	host abi.Host
	// last is the newest root; callout answers a host delivers to a
	// function (abi.CalloutDelivery) go through it, as any live root reads
	// them from the VM's table.
	last *Root
	// calls maps a callout token (unique per VM) to the code awaiting it.
	calls map[uint32]func(status int, body []byte, err error)
	// remotes are the fleet stores of this VM's configs, kept while their
	// root may still hand them holds or they have calls left to deliver.
	remotes []vmRemote
	// queue bounds the calls waiting in remotes, together.
	queue remote.Queue
}

// NewVM makes the VM context of one VM with its host. A host that delivers
// callout answers to a function (abi.CalloutDelivery) delivers them to
// this VM.
func NewVM(h abi.Host) *VM {
	v := newVM(h)
	if d, ok := h.(abi.CalloutDelivery); ok {
		d.DeliverCallouts(v.onHTTPCallResponse)
	}
	return v
}

func newVM(h abi.Host) *VM {
	return &VM{host: h, calls: map[uint32]func(int, []byte, error){}}
}

// OnVMStart accepts any VM configuration: the filter reads only its plugin
// configuration.
func (v *VM) OnVMStart(vmConfigurationSize int) types.OnVMStartStatus {
	return types.OnVMStartStatusOK
}

func (v *VM) NewPluginContext(contextID uint32) types.PluginContext {
	v.last = v.newRoot(contextID)
	return v.last
}

func (v *VM) onHTTPCallResponse(token uint32, numHeaders, bodySize, numTrailers int) {
	if v.last != nil {
		v.last.OnHTTPCallResponse(token, numHeaders, bodySize, numTrailers)
	}
}

// OnPluginStart reads the plugin configuration and applies it; an
// unreadable buffer rejects it like an invalid one.
func (r *Root) OnPluginStart(pluginConfigurationSize int) types.OnPluginStartStatus {
	cfg, err := abi.Configuration(r.host, abi.BufferPluginConfiguration, pluginConfigurationSize)
	if err != nil {
		r.host.Log(abi.LogError, "tokenbudget: plugin config rejected: "+err.Error())
		return types.OnPluginStartStatusFailed
	}
	return types.OnPluginStartStatus(r.OnConfigure(cfg))
}

// OnQueueReady is never called: the filter registers no shared queue.
func (r *Root) OnQueueReady(uint32) {}

// NewTcpContext declines TCP streams: the filter is an HTTP filter.
func (r *Root) NewTcpContext(uint32) types.TcpContext { return nil }

var (
	_ types.VMContext       = (*VM)(nil)
	_ types.PluginContext   = (*Root)(nil)
	_ abi.HTTPCallResponder = (*Root)(nil)
	_ abi.Deleter           = (*Root)(nil)
	_ types.HttpContext     = (*Stream)(nil)
	_ abi.StreamDoner       = (*Stream)(nil)
	_ abi.Deleter           = (*Stream)(nil)
)
