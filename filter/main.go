// Command filter is the tokenbudget proxy-wasm module. Built with the
// standard Go toolchain as a wasip1 reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o build/filter.wasm ./filter
//
// main never runs in a reactor; the plugin registers its VM context (the
// proxy-wasm Go SDK's types.VMContext) in init, which the host reaches
// through _initialize.
package main

import (
	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/filter/core"
)

func init() {
	abi.SetVMContext(core.NewVM(abi.CurrentHost()))
}

func main() {}
