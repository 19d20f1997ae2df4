package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// Options tune a Store; zero values take the defaults.
type Options struct {
	// HoldTTL bounds how long a hold record waits for its settle or
	// release (default 48h): long enough for any generation, short enough
	// that records of crashed filters do not pile up.
	HoldTTL time.Duration
	// ExpiryMargin is added to a bucket's time-to-full before it expires
	// (default 1s), so a key never vanishes while it is still refilling.
	ExpiryMargin time.Duration
	// NewHoldID returns a fresh hold id (default: 128 random bits in hex),
	// for admissions whose caller did not name the hold.
	NewHoldID func() string
	// TombstoneTTL is how long a release that found no hold keeps its id
	// refused for admission (default HoldTTL): it must outlive any admission
	// with that id still on its way to Redis, and each one costs a small key.
	TombstoneTTL time.Duration
}

// ErrAdmissionAborted is Admit's answer when the hold id was released before
// the admission ran (its caller gave up waiting and released the id) or is
// already in use: nothing was committed.
var ErrAdmissionAborted = errors.New("admission aborted: its hold id was already released or in use")

// Store keeps fleet-wide buckets in Redis. It holds no state of its own, so
// any number of service replicas can front one Redis. With a single server
// an admission, a settlement and a release are each one EVALSHA; with a
// Redis Cluster each op runs on the node owning its slot (see cluster.go).
type Store struct {
	c       redis.UniversalClient
	cluster bool
	holdTTL int64 // ms
	margin  int64 // ms
	tombTTL int64 // ms
	newID   func() string
	admit   *script
	end     *script
	give    *script
}

// NewStore wraps a client; a *redis.ClusterClient switches to per-op
// scripts because a cluster cannot run one script across slots.
func NewStore(c redis.UniversalClient, o Options) *Store {
	if o.HoldTTL <= 0 {
		o.HoldTTL = 48 * time.Hour
	}
	if o.ExpiryMargin <= 0 {
		o.ExpiryMargin = time.Second
	}
	if o.TombstoneTTL <= 0 {
		o.TombstoneTTL = o.HoldTTL
	}
	if o.NewHoldID == nil {
		o.NewHoldID = randomHoldID
	}
	_, cluster := c.(*redis.ClusterClient)
	return &Store{
		c: c, cluster: cluster,
		holdTTL: o.HoldTTL.Milliseconds(), margin: o.ExpiryMargin.Milliseconds(), tombTTL: o.TombstoneTTL.Milliseconds(), newID: o.NewHoldID,
		admit: newScript("admit", admitLua), end: newScript("end", endLua), give: newScript("give", giveLua),
	}
}

func randomHoldID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Load puts every script into Redis' script cache; call it at start so the
// first request does not pay for the script bodies.
func (s *Store) Load(ctx context.Context) error {
	for _, sc := range []*script{s.admit, s.end, s.give} {
		if err := sc.load(ctx, s.c); err != nil {
			return err
		}
	}
	return nil
}

// Ping reports whether Redis answers (readiness).
func (s *Store) Ping(ctx context.Context) error { return s.c.Ping(ctx).Err() }

// Admit reserves a whole plan, all or nothing (BUCKET_MATH.md), under a
// hold id the store chooses.
func (s *Store) Admit(ctx context.Context, p sharedstore.Plan) (sharedstore.Outcome, error) {
	return s.AdmitHold(ctx, p, "")
}

// AdmitHold reserves a whole plan under the hold id its caller chose (empty:
// the store chooses), so the caller can release a hold whose answer it never
// got. When the id was released first, or is in use, it commits nothing and
// returns ErrAdmissionAborted. The id must satisfy wire.ValidHoldID; a plan
// with nothing to hold ignores it.
func (s *Store) AdmitHold(ctx context.Context, p sharedstore.Plan, holdID string) (sharedstore.Outcome, error) {
	ops := make([]sharedstore.Op, 0, len(p.Requests)+len(p.Tokens))
	ops = append(append(ops, p.Requests...), p.Tokens...)
	entries := p.HoldEntries()
	id := ""
	if len(entries) > 0 {
		id = holdID
		if id == "" {
			id = s.newID()
		}
	}
	if s.cluster {
		return s.admitCluster(ctx, ops, len(p.Requests), id, entries, p.Overage)
	}
	keys := make([]string, 0, len(ops)+2)
	args := make([]any, 0, 5+len(ops)*10)
	for _, op := range ops {
		keys = append(keys, bucketKey(op.Key))
	}
	record := ""
	if id != "" {
		keys = append(keys, holdKey(id), releasedKey(id))
		record = recordJSON(entries, p.Overage)
	}
	args = append(args, len(p.Requests), len(p.Tokens), s.holdTTL, s.margin, record)
	for _, op := range ops {
		args = appendOpArgs(args, op)
	}
	v, err := s.admit.run(ctx, s.c, keys, args)
	if err != nil {
		return sharedstore.Outcome{}, err
	}
	r, err := parseAdmitReply(v, ops)
	if err != nil {
		return sharedstore.Outcome{}, err
	}
	if r.aborted {
		return sharedstore.Outcome{}, ErrAdmissionAborted
	}
	views := make([]opView, len(ops))
	at := 0
	for i, op := range ops {
		views[i] = opView{now: r.now, levels: r.levels[at : at+len(op.Limits)]}
		at += len(op.Limits)
	}
	o := describe(ops, views, r.refOp, r.refLimit, r.refLevel, r.now)
	if o.Admitted && id != "" {
		o.Hold = sharedstore.Hold{Backend: sharedstore.BackendRemote, ID: id, Entries: entries, Overage: p.Overage}
	}
	return o, nil
}

// Settle ends a hold with the usage reported; false means it had already
// ended (or expired), so a retried call changes nothing.
func (s *Store) Settle(ctx context.Context, id string, opKeys []string, actual int64) (bool, error) {
	return s.endHold(ctx, id, opKeys, "settle", actual)
}

// Release ends a hold giving back everything it reserved. A hold it does
// not find (never admitted, or not yet) leaves a release tombstone, so a
// later admission with that id commits nothing.
func (s *Store) Release(ctx context.Context, id string, opKeys []string) (bool, error) {
	return s.endHold(ctx, id, opKeys, "release", 0)
}

func (s *Store) endHold(ctx context.Context, id string, opKeys []string, mode string, actual int64) (bool, error) {
	if s.cluster {
		return s.endCluster(ctx, id, opKeys, mode, actual)
	}
	v, err := s.end.run(ctx, s.c, []string{holdKey(id), releasedKey(id)}, s.endArgs(mode, actual))
	if err != nil {
		return false, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, errors.New("end script: unexpected reply")
	}
	return n == 1, nil
}

func (s *Store) endArgs(mode string, actual int64) []any {
	return []any{mode, actual, s.margin, s.holdTTL, s.tombTTL}
}

// recordJSON is the hold record end.lua reads. Numbers travel as strings so
// cjson's 14-digit number formatting can never round a refill rate. Each
// entry carries the plan's overage rule ("o": 1 for skip, absent for debt).
func recordJSON(entries []sharedstore.HoldEntry, overage sharedstore.Overage) string {
	type entry struct {
		K string     `json:"k"`
		C int        `json:"c"`
		A string     `json:"a"`
		L [][]string `json:"l"`
		O int        `json:"o,omitempty"`
	}
	skip := 0
	if overage == sharedstore.OverageSkip {
		skip = 1
	}
	out := make([]entry, len(entries))
	for i, e := range entries {
		ls := make([][]string, len(e.Limits))
		for j, l := range e.Limits {
			ls[j] = []string{l.Budget, strconv.FormatInt(l.Capacity, 10), formatRate(l.RefillPerSec)}
		}
		out[i] = entry{K: bucketKey(e.Key), C: int(e.Kind), A: strconv.FormatInt(e.Amount, 10), L: ls, O: skip}
	}
	b, _ := json.Marshal(out) // strings and ints only: cannot fail
	return string(b)
}

func formatRate(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func appendOpArgs(args []any, op sharedstore.Op) []any {
	private := 0
	if op.Private {
		private = 1
	}
	args = append(args, int(op.Kind), op.Amount, private, len(op.Limits))
	for _, l := range op.Limits {
		args = append(args, l.Budget, l.Capacity, formatRate(l.RefillPerSec))
	}
	return args
}

type admitReply struct {
	admitted bool
	aborted  bool  // the hold id was released or in use: nothing written
	now      int64 // Unix ns
	refOp    int   // 0-based, -1 when nothing refused
	refLimit int
	refLevel float64
	levels   []string
}

func parseAdmitReply(v any, ops []sharedstore.Op) (admitReply, error) {
	bad := errs.New("admit script: malformed reply")
	a, ok := v.([]any)
	if !ok || len(a) < 5 {
		return admitReply{}, bad
	}
	adm, ok1 := a[0].(int64)
	nowS, ok2 := a[1].(string)
	ri, ok3 := a[2].(int64)
	rj, ok4 := a[3].(int64)
	rl, ok5 := a[4].(string)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return admitReply{}, bad
	}
	nowUs, err := strconv.ParseInt(nowS, 10, 64)
	if err != nil {
		return admitReply{}, errs.Wrap("admit script: now", err)
	}
	if adm == -1 {
		return admitReply{aborted: true, now: nowUs * 1000, refOp: -1}, nil
	}
	r := admitReply{admitted: adm == 1, now: nowUs * 1000, refOp: int(ri) - 1, refLimit: int(rj) - 1}
	if r.refOp >= 0 {
		if r.refOp >= len(ops) || r.refLimit < 0 || r.refLimit >= len(ops[r.refOp].Limits) {
			return admitReply{}, bad
		}
		if r.refLevel, err = strconv.ParseFloat(rl, 64); err != nil {
			return admitReply{}, errs.Wrap("admit script: refused level", err)
		}
	}
	n := 0
	for _, op := range ops {
		n += len(op.Limits)
	}
	if len(a) != 5+n {
		return admitReply{}, bad
	}
	r.levels = make([]string, n)
	for i := range r.levels {
		if r.levels[i], ok = a[5+i].(string); !ok {
			return admitReply{}, bad
		}
	}
	return r, nil
}

// opView is what one op's script reported: its clock and, per limit, the
// standing level of a private op ("" when not reported).
type opView struct {
	now    int64
	levels []string
}

// describe turns script replies into an Outcome, computing Retry-After and
// levels with the same functions the shared-data backend uses.
func describe(ops []sharedstore.Op, views []opView, refOp, refLimit int, refLevel float64, refNow int64) sharedstore.Outcome {
	var o sharedstore.Outcome
	o.Admitted = refOp < 0
	for i, op := range ops {
		for j, s := range views[i].levels {
			if s == "" || j >= len(op.Limits) {
				continue
			}
			lv, err := strconv.ParseFloat(s, 64)
			if err != nil {
				continue
			}
			l := op.Limits[j]
			o.Levels = append(o.Levels, sharedstore.OpLevel{Kind: op.Kind, Dimension: op.Dimension, Budget: l.Budget,
				Level: bucket.LevelOf(l, bucket.State{Level: lv, Last: views[i].now}, views[i].now)})
		}
	}
	if refOp >= 0 {
		op := ops[refOp]
		l := op.Limits[refLimit]
		st := bucket.State{Level: refLevel, Last: refNow}
		o.Refusal = &sharedstore.Refusal{Kind: op.Kind, Dimension: op.Dimension, Budget: l.Budget,
			RetryAfterSec: bucket.RetryAfterSec(l, st, op.Amount), ExceedsCapacity: op.Amount > l.Capacity, Private: op.Private}
		if op.Private {
			o.Refusal.Level = bucket.LevelOf(l, st, refNow)
		}
	}
	return o
}
