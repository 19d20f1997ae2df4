// Package sharedstore is where budget state lives. The filter talks to one
// Store interface; the shared-data backend (package local) keeps per-Envoy
// state in proxy shared data, the remote backend (package remote) reaches the
// fleet-wide sharedstore service over proxy_http_call. Admission and
// reconciliation never know which one they use.
//
// The vocabulary the stores speak (plans, holds, outcomes) lives in
// shared/limit, below every pure package, and every caller writes it by
// that one name (limit.Plan, limit.Outcome, ...).
//
// This file is compiled into the .wasm: no fmt, no os, no goroutines.
package sharedstore

import "github.com/tokenbudget/tokenbudget/shared/limit"

// Store reserves, settles and releases. Admit may answer synchronously (the
// shared-data backend calls done before returning) or later (the remote
// backend calls done from the HTTP-call response callback). Settle and
// Release never block and never fail loudly: a remote one is retried for a
// bounded time and then dropped.
//
// Spend rides in the same calls as the token budgets, so the fleet store
// carries both in its one admission callout and its one settlement call:
// Admit runs the spend preflight of plan.Spend before any bucket is
// touched (a spend refusal takes nothing, not even request-count units),
// and Settle adds the hold's SpendCost to its spend counters.
type Store interface {
	Admit(plan limit.Plan, done func(limit.Outcome))
	// Settle replaces the token reservation with actual usage: less refunds
	// the difference (capped at capacity), more charges the overage by the
	// hold's Overage rule: OverageDebt charges it whole (the level may go
	// below zero), OverageSkip consumes nothing from a bucket that cannot
	// cover it. Concurrency entries are released. The hold's SpendCost is
	// added to its spend counters.
	Settle(h limit.Hold, actual int64)
	// Release gives back every token and concurrency unit of the hold.
	Release(h limit.Hold)
}
