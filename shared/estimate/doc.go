// Package estimate turns a request body into what admission reserves: an
// input-token estimate that over-counts by construction and the output
// ceiling the client stated. The reservation adds no margin to the
// estimate, so the estimator itself must carry the safety: it walks every field a backend
// feeds to the model and charges each text fragment at least what the
// cl100k_base and o200k_base tokenizers would, without shipping a tokenizer
// in the .wasm (see Text for the cost model).
//
// The package is compiled into the filter: Go on shared/jsonx (and, in
// wasm builds, two loops in hand-written wasm, see ascii_wasm.go and
// words_wasm.go), no panics on any input, and nothing that links syscall
// (no fmt, os, time, gjson), because Envoy traps a module whose syscall
// init runs; a test pins the dependency graph.
package estimate
