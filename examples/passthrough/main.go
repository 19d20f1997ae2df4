// Command passthrough is a proxy-wasm module that continues every stream
// without reading anything: the baseline against which the tokenbudget
// filter's overhead is measured. It shares the filter's ABI binding, so the
// difference between the two is the filter's own work.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o build/passthrough.wasm ./examples/passthrough
package main

import "github.com/tokenbudget/tokenbudget/filter/abi"

func init() {
	abi.SetRootContextFactory(func(uint32, abi.Host) abi.RootContext { return root{} })
}

func main() {}

// root accepts any configuration and gives every stream the same stateless
// context.
type root struct{}

func (root) OnVMStart([]byte) bool                    { return true }
func (root) OnConfigure([]byte) bool                  { return true }
func (root) OnTick()                                  {}
func (root) OnHTTPCallResponse(uint32, int, int, int) {}
func (root) NewHTTPContext(uint32) abi.HTTPContext    { return stream{} }
func (root) OnDone() bool                             { return true }
func (root) OnDelete()                                {}

// stream continues everything.
type stream struct{}

func (stream) OnRequestHeaders(int, bool) abi.Action  { return abi.ActionContinue }
func (stream) OnRequestBody(int, bool) abi.Action     { return abi.ActionContinue }
func (stream) OnRequestTrailers(int) abi.Action       { return abi.ActionContinue }
func (stream) OnResponseHeaders(int, bool) abi.Action { return abi.ActionContinue }
func (stream) OnResponseBody(int, bool) abi.Action    { return abi.ActionContinue }
func (stream) OnResponseTrailers(int) abi.Action      { return abi.ActionContinue }
func (stream) OnLog()                                 {}
func (stream) OnDone()                                {}
func (stream) OnDelete()                              {}
