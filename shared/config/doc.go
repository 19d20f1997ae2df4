// Package config is the plugin configuration: the JSON the operator writes as
// Envoy's `configuration` value (types, strict parsing, defaults, validation,
// warnings) and the compiled Runtime the filter and the budget planner read on
// every request.
//
// Parsing is strict because a typo in a limit name would otherwise silently
// leave a tenant unlimited. Validation reports every problem at once, each
// with its JSON path, so an operator fixes a config in one pass.
//
// Numbers: every integer field accepts a JSON integer (32000), an integral
// JSON number (32000.0, 3.2e4) or a decimal string ("32000", "32000.0");
// a fractional value where an integer is needed is an error, and so is a
// negative value. requests_per_second and rate_limit are rates and accept
// fractions, as a number or a decimal string.
//
// Zero: in the operator's config 0 means "unlimited" (or "off"). A compiled
// Allowance keeps "unlimited" apart from "a budget in force with zero
// capacity", which division or a pushed share can produce.
//
// Decisions the configuration format makes:
//   - A present deployment share replaces the (divided) capacity of every
//     token dimension whose configured budget for that period is nonzero;
//     a configured 0 stays unlimited even under a share.
//   - A tier's tokens_per_day is a dimension-level budget and is divided like
//     per_api_key's; only minute overrides (tier and key) keep the written
//     value.
//   - max_tokens_per_request below default_output_tokens is an error unless
//     on_max_tokens is "clamp" (with "refuse" every request that states no
//     ceiling would be refused); max_context_length below
//     max_tokens_per_request is an error; models[m].concurrent_requests and
//     limits.per_model[m].concurrent_requests may not disagree.
//   - redis.timeout_ms 0 is an error (Envoy reads a zero callout timeout as
//     none). A whitelist entry may be a bare address (one host).
//   - A config key starting with "sha256:" is always read as a hash.
//   - redis.token and redis.token_env together are an error (one secret, one
//     place); token_env must be a portable variable name, and a VM without
//     that variable refuses the config (Runtime.ResolveEnv).
//   - Empty input is "{}". JSON null is "absent" (a null list element or map
//     value still makes the entry, as encoding/json did).
//   - A member name written twice in one object (field or map key, compared
//     after unescaping) is an error: "last wins" would let a pasted block
//     silently replace a limit written above it.
//
// This package is compiled into the .wasm: no fmt, no os, no goroutines, and
// nothing that links syscall (Envoy traps its wasip1 init), so no
// encoding/json either: decode.go reads the document with shared/jsonx and
// reflection, and reference_test.go keeps the encoding/json parser it
// replaced as the oracle of its differential tests.
package config

//go:generate go run ../../envoy/cmd/tbconfig schema -o plugin-config.schema.json
