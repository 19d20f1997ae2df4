// Package abi is the module's only contact with the proxy-wasm host (ABI
// v0.2.1, as Envoy implements it), for the standard Go toolchain's wasip1
// reactor build. It is the one package that declares //go:wasmimport and
// //go:wasmexport: the filter core sees the Host interface and implements
// the proxy-wasm Go SDK's context interfaces (types.VMContext,
// PluginContext, HttpContext), to which the callbacks are dispatched, so it
// runs unchanged against the wasm host, under the SDK's proxytest emulator
// (package filter/sdkhost), or anything else.
//
// Imports are limited to Envoy's legacy profile (see filter/imports_test.go).
// The package never blocks, starts goroutines or imports fmt or os: on older
// Envoys a blocked Go runtime reaches poll_oneoff, which fails the VM.
//
// Memory the host returns (header values, bodies, shared data) is allocated by
// Go in proxy_on_memory_allocate and handed to the caller, who owns it: a
// returned []byte may be kept and modified, a returned string shares that
// allocation and needs no copy.
package abi
