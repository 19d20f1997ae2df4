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
// This package is compiled into the .wasm: no fmt, no os, no goroutines.
package config

//go:generate go run ../cmd/tbconfig schema -o plugin-config.schema.json
