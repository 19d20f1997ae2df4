// Package jsonx is the small JSON reader and writer used by code compiled into
// the proxy-wasm filter.
//
// Why it exists: Envoy's proxy-wasm host lets a module call only a handful of
// WASI functions while `_initialize` runs and traps the VM on anything else.
// Go's syscall package has an init that calls fd_fdstat_get, so any module that
// links syscall cannot start in real Envoy — and syscall is pulled in by time,
// os, fmt, encoding/json and, through them, by gjson and sjson. This package
// therefore imports only bytes, errors, math, math/bits, strconv, unicode/utf8,
// unicode/utf16 and unsafe (filter/imports_test.go pins that nothing in the
// module links syscall).
//
// Design: a Value is a view (Kind + exact bytes) into the caller's document, so
// reading never copies. Parse validates the whole document once; every later
// access (Get, Index, ForEach, ...) trusts those bytes and only skips over them
// with tight loops, so each lookup is one forward scan without allocation.
// Values built by hand over unvalidated bytes never make the package panic, but
// what they return is then unspecified. Nothing recurses: nesting is tracked
// with counters and a bit stack, and documents nested deeper than MaxDepth are
// rejected instead of risking the stack. In wasm builds string validation
// and the decoding of escapes are hand-written wasm (scanstring_wasm.go,
// unescape_wasm.go), twins of the Go code native builds run
// (scanStringGo, unescapeRunGo) that twins_test.go holds to it.
package jsonx
