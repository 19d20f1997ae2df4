// Package tokens is the vocabulary of a request's token usage split by the
// kind a price list prices. It sits at the bottom of shared/ beside money
// and calendar: the limit vocabulary records it on a hold, pricing prices
// it, and the usage readers (which parse backend responses) produce it, so
// nothing that only speaks of budgets depends on a parser.
//
// This package is compiled into the .wasm: no fmt, no os, no goroutines.
package tokens

// Kinds is a usage split into the disjoint kinds a price list prices:
// their sum is the usage's total (for every usage the readers return; their
// counts are capped far below where the total would saturate).
type Kinds struct {
	// Input is the prompt tokens neither read from nor written to the cache.
	Input int64
	// CachedInput is the prompt tokens read from the cache.
	CachedInput int64
	// CacheWrite is the prompt tokens written to the cache with the default
	// (five-minute) lifetime, CacheWrite1h those written for one hour.
	CacheWrite, CacheWrite1h int64
	// Output is every generated token, reasoning included.
	Output int64
}
