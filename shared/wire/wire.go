// Package wire is the JSON protocol between the filter's remote store and the
// sharedstore service. Both sides compile it, so a field added here reaches
// the filter and the server together. Periods and dimensions travel as their
// names (limit.Period and limit.Dimension marshal as text), and member names
// match exactly: both ends are this project.
//
// This package is compiled into the .wasm: no fmt, os, time or encoding/json
// (each links syscall, whose init Envoy traps), no goroutines; a test pins it.
package wire

import "github.com/tokenbudget/tokenbudget/shared/limit"

// Paths the service answers; the filter builds its :path from them.
const (
	PathAdmit   = "/v1/admit"
	PathSettle  = "/v1/settle"
	PathRelease = "/v1/release"
	// PathLevels reads token buckets without charging them: an admission's
	// body of token ops only, answered as an admission with every op's
	// levels (the filter's gauge of the buckets no tenant owns).
	PathLevels = "/v1/levels"
)

// Limit is one period of a bucket with the parameters in force when the plan
// was made; the server records them on the hold so a reload never changes
// how an older hold settles.
type Limit struct {
	Budget       limit.Period `json:"budget"`
	Capacity     int64        `json:"capacity"`
	RefillPerSec float64      `json:"refill_per_sec"`
}

// Op is one bucket checked on all its periods together (limit.Op).
type Op struct {
	Key       string          `json:"key"`
	Kind      limit.Kind      `json:"kind"`
	Dimension limit.Dimension `json:"dimension"`
	Limits    []Limit         `json:"limits"`
	Amount    int64           `json:"amount"`
	Private   bool            `json:"private,omitempty"`
}

// AdmitRequest is the body of POST /v1/admit: a whole limit.Plan, so
// the service admits it all or nothing in one call.
//
// HoldID is the id the filter chose for the hold before sending, so that it
// can release a hold it never heard back about (the answer came after
// timeout_ms): the service commits nothing for an id already released
// (it keeps a tombstone), and the release of an id not yet admitted leaves
// that tombstone. Empty means the service picks the id (older filters).
type AdmitRequest struct {
	HoldID   string `json:"hold_id,omitempty"`
	Requests []Op   `json:"requests,omitempty"`
	Tokens   []Op   `json:"tokens,omitempty"`
	// Overage is the plan's overage rule, recorded on the hold: "skip", or
	// absent for "debt" (the default).
	Overage string `json:"overage,omitempty"`
	// Spend is the plan's spend part, absent when no spend limit applies
	// (see SpendAdmit).
	Spend *SpendAdmit `json:"spend,omitempty"`
}

// Overage values on the wire. The encoder writes only "skip"; "debt" is
// accepted too, so a hand-written request may say the default aloud.
const (
	OverageSkip = "skip"
	OverageDebt = "debt"
)

// Level is what a caller may learn about its own bucket.
type Level struct {
	Capacity  int64 `json:"capacity"`
	Remaining int64 `json:"remaining"`
	ResetUnix int64 `json:"reset_unix"`
}

// OpLevel ties a private bucket's Level to its period.
type OpLevel struct {
	Kind      limit.Kind      `json:"kind"`
	Dimension limit.Dimension `json:"dimension"`
	Budget    limit.Period    `json:"budget"`
	Level     Level           `json:"level"`
}

// Refusal names the refusing bucket. Level is present only when the bucket
// is the caller's own (Private), so a shared bucket's fill never leaves the
// service.
type Refusal struct {
	Kind       limit.Kind      `json:"kind"`
	Dimension  limit.Dimension `json:"dimension"`
	Budget     limit.Period    `json:"budget"`
	RetryAfter int64           `json:"retry_after"`
	// ExceedsCapacity: the request is larger than the bucket.
	ExceedsCapacity bool   `json:"exceeds_capacity,omitempty"`
	Private         bool   `json:"private,omitempty"`
	Level           *Level `json:"level,omitempty"`
}

// AdmitResponse answers POST /v1/admit. Hold is the hold id (the request's
// HoldID, or one the server chose), present when the admitted plan reserved
// token or concurrency units. Aborted means the hold id had already been
// released (the filter gave up on this very call), so nothing was
// committed; only a filter that already gave up can see it, and it ignores it.
type AdmitResponse struct {
	Admitted bool      `json:"admitted"`
	Aborted  bool      `json:"aborted,omitempty"`
	Refusal  *Refusal  `json:"refusal,omitempty"`
	Levels   []OpLevel `json:"levels,omitempty"`
	Hold     string    `json:"hold,omitempty"`
	Skipped  []string  `json:"skipped,omitempty"`
	// Spend is the verdict on the admission's spend part; an admission
	// that carried one must be answered with one (see SpendVerdict).
	Spend *SpendVerdict `json:"spend,omitempty"`
}

// SettleRequest is the body of POST /v1/settle. Keys are the hold entries'
// bucket keys: a Redis Cluster deployment keeps one hold record per bucket
// and needs them to find the records; a single server ignores them.
type SettleRequest struct {
	Hold   string   `json:"hold"`
	Actual int64    `json:"actual"`
	Keys   []string `json:"keys,omitempty"`
	// Spend is the inference record of a hold with a spend part.
	Spend *SpendRecord `json:"spend,omitempty"`
}

// ReleaseRequest is the body of POST /v1/release (see SettleRequest.Keys).
// Releasing an id the service has no hold for leaves a tombstone, so an
// admission with that id still on its way commits nothing.
type ReleaseRequest struct {
	Hold string   `json:"hold"`
	Keys []string `json:"keys,omitempty"`
	// Spend marks the release of a hold that reserved spend, and Team is
	// the team it was counted under ("" none): the reservation sits in the
	// team's keys, where the release gives it back.
	Spend bool   `json:"spend,omitempty"`
	Team  string `json:"team,omitempty"`
}

// EndResponse answers settle and release. Ended is false when the hold was
// already ended (a retried call), expired or never admitted: the call then
// changed no bucket.
type EndResponse struct {
	Ended bool `json:"ended"`
}
