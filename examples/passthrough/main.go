// Command passthrough is a proxy-wasm module that continues every stream
// without reading anything: the baseline against which the tokenbudget
// filter's overhead is measured. It shares the filter's ABI binding and
// callback surface (the SDK's context interfaces), so the difference
// between the two is the filter's own work.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o build/passthrough.wasm ./examples/passthrough
package main

import (
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

func init() { abi.SetVMContext(&vm{}) }

func main() {}

// vm accepts any VM and plugin configuration without reading it, and
// gives every stream a context that continues everything.
type vm struct{ types.DefaultVMContext }

func (*vm) NewPluginContext(uint32) types.PluginContext { return &plugin{} }

type plugin struct{ types.DefaultPluginContext }

func (*plugin) NewHttpContext(uint32) types.HttpContext { return &types.DefaultHttpContext{} }
