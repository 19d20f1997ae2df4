package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

// Options tune Buckets; zero values take the defaults.
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
	// Spend, when set, checks the spend part of admissions against its
	// cache in the same script as the buckets; nil leaves it unchecked
	// (the answer then carries no verdict and the filter refuses spend).
	Spend *spendcache.Cache
}

// ErrAdmissionAborted is Admit's answer when the hold id was released before
// the admission ran (its caller gave up waiting and released the id) or is
// already in use: nothing was committed.
var ErrAdmissionAborted = errors.New("admission aborted: its hold id was already released or in use")

// Buckets keeps fleet-wide buckets in Redis (it is not a sharedstore.Store:
// it is what the service fronts). It holds no state of its own, so
// any number of service replicas can front one Redis. With a single server
// an admission, a settlement and a release are each one EVALSHA (an
// admission or an end of a hold one FCALL where Redis takes the function
// library); with a
// Redis Cluster each op runs on the node owning its slot (see cluster.go).
type Buckets struct {
	c       redis.UniversalClient
	cluster bool
	holdTTL int64 // ms
	margin  int64 // ms
	tombTTL int64 // ms
	newID   func() string
	admit   *script
	end     *script
	give    *script
	spend   *spendcache.Cache
	// batch pipelines concurrent scripts on a single server (batch.go);
	// nil on a cluster, whose scripts go to different nodes.
	batch *batcher
	// lib holds the single server's admissions and hold ends as functions
	// (library.go);
	// nil on a cluster.
	lib *library
	// admitSpend and spendOnly are the admission with the spend preflight
	// first (single server) and the preflight alone (cluster).
	admitSpend *script
	spendOnly  *script
	// onScript observes each admission script's latency (the server's
	// metrics); nil observes nothing.
	onScript func(name string, start time.Time)
}

// NewBuckets wraps a client; a *redis.ClusterClient switches to per-op
// scripts because a cluster cannot run one script across slots.
func NewBuckets(c redis.UniversalClient, o Options) *Buckets {
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
	s := &Buckets{
		c: c, cluster: cluster,
		holdTTL: o.HoldTTL.Milliseconds(), margin: o.ExpiryMargin.Milliseconds(), tombTTL: o.TombstoneTTL.Milliseconds(), newID: o.NewHoldID,
		admit: newScript("admit", plainAdmitLua), end: newScript("end", endLua), give: newScript("give", giveLua),
		spend: o.Spend, admitSpend: newScript("admit_spend", admitSpendLua), spendOnly: newScript("spend_preflight", spendOnlyLua),
	}
	if !cluster {
		// A cluster runs its scripts per op on different nodes, each
		// by EVALSHA; a single server batches them, and its admissions
		// and hold ends run as functions where it takes them.
		s.batch = newBatcher(c)
		s.lib = newLibrary(s.admit, s.admitSpend, s.end)
	}
	return s
}

func randomHoldID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Load puts every script into Redis' script cache; call it at start so the
// first request does not pay for the script bodies.
func (s *Buckets) Load(ctx context.Context) error {
	for _, sc := range []*script{s.admit, s.end, s.give, s.admitSpend, s.spendOnly} {
		if err := sc.load(ctx, s.c); err != nil {
			return err
		}
	}
	if s.lib != nil {
		s.lib.load(ctx, s.c) // refused: the scripts just loaded serve
	}
	return nil
}

// FunctionsRefused is Redis' answer when it refused the function library
// (admissions then run as scripts, at some 12 % more of Redis' work each),
// nil otherwise; the service logs it after Load.
func (s *Buckets) FunctionsRefused() error {
	if s.lib == nil || s.lib.state.Load() != libRefused {
		return nil
	}
	return s.lib.refusal
}

// run runs one script on a single server, through the batch.
func (s *Buckets) run(ctx context.Context, sc *script, keys []string, args []any) (any, error) {
	if s.batch != nil {
		return s.batch.run(ctx, sc, keys, args)
	}
	return sc.run(ctx, s.c, keys, args)
}

// Ping reports whether Redis answers (readiness).
func (s *Buckets) Ping(ctx context.Context) error { return s.c.Ping(ctx).Err() }

// Admit reserves a whole plan, all or nothing (docs/bucket-math.md), under a
// hold id the store chooses.
func (s *Buckets) Admit(ctx context.Context, p limit.Plan) (limit.Outcome, error) {
	return s.AdmitHold(ctx, p, "")
}

// AdmitHold reserves a whole plan under the hold id its caller chose (empty:
// the store chooses), so the caller can release a hold whose answer it never
// got. When the id was released first, or is in use, it commits nothing and
// returns ErrAdmissionAborted. The id must satisfy wire.ValidHoldID; a plan
// with nothing to hold ignores it.
func (s *Buckets) AdmitHold(ctx context.Context, p limit.Plan, holdID string) (limit.Outcome, error) {
	o, _, err := s.AdmitSpend(ctx, p, holdID)
	return o, err
}

// AdmitSpend is AdmitHold with the spend preflight of the plan's spend part
// (when the store has a spend cache): the verdict is nil when the plan has
// no spend part or the store checks none. A spend refusal takes nothing
// from any bucket. A spend lookup that fails is an error wrapping
// limit.ErrSpendUnavailable.
func (s *Buckets) AdmitSpend(ctx context.Context, p limit.Plan, holdID string) (limit.Outcome, *spendcache.Verdict, error) {
	ops := make([]limit.Op, 0, len(p.Requests)+len(p.Tokens))
	ops = append(append(ops, p.Requests...), p.Tokens...)
	entries := p.HoldEntries()
	checkSpend := s.spend != nil && p.Spend.Any()
	// A spend part that only asks for the ledger's limits (fleet, none of
	// its own) has its answer without one: no ledger stores no limit and no
	// balance, so "checked, nothing applies" is the truth. A part with a
	// limit of its own still gets no verdict here (ErrSpendUnavailable at
	// the filter): nothing may pass a limit unchecked.
	var noLedger *spendcache.Verdict
	if s.spend == nil && p.Spend.Fleet && !p.Spend.Policy.Any() {
		noLedger = &spendcache.Verdict{}
	}
	id := ""
	if len(entries) > 0 || checkSpend || noLedger != nil {
		// A spend part needs the id too: it names the inference record
		// the settlement brings.
		id = holdID
		if id == "" {
			id = s.newID()
		}
	}
	if s.cluster {
		var vd *spendcache.Verdict
		if checkSpend {
			v, err := s.preflightCluster(ctx, &p.Spend, id)
			if err != nil {
				return limit.Outcome{}, nil, err
			}
			if v.Refused != nil {
				return spendRefused(v), &v, nil
			}
			vd = &v
		}
		o, err := s.admitCluster(ctx, ops, len(p.Requests), id, entries, p.Overage)
		if vd != nil && (err != nil || !o.Admitted()) && p.Spend.Reserve > 0 {
			// The preflight ran alone and held the cost in the team's
			// slot: a bucket refused, so it is given back.
			if _, uerr := s.spend.Unhold(ctx, p.Spend.Policy.Team, id); uerr != nil && err == nil {
				err = uerr
			}
		}
		if noLedger != nil {
			vd = noLedger
		}
		if vd != nil && err == nil {
			o.Spend = vd.Used
			if o.Admitted() && o.Hold.ID == "" {
				o.Hold = limit.Hold{Backend: limit.BackendRemote, ID: id, Overage: p.Overage}
			}
		}
		return o, vd, err
	}
	keys := bucketKeys(make([]string, 0, len(ops)+2+spendcache.NumKeys), ops)
	var record []byte
	if len(entries) > 0 {
		keys = append(keys, holdKey(id), releasedKey(id))
		record = appendRecord(make([]byte, 0, recordSize(entries)), entries, p.Overage)
	}
	plan := appendPlan(make([]byte, 0, planSize(ops)), len(p.Requests), len(p.Tokens), s.holdTTL, s.margin, ops)
	sc, args := s.admit, []any{plan, record}
	if checkSpend {
		base := len(keys) + 1
		keys = spendcache.Keys(keys, &p.Spend)
		sc, args = s.admitSpend, s.spend.Args(append(make([]any, 0, 2+spendcache.NumArgs), plan, record), &p.Spend, base, nil, id)
	}
	start := time.Now()
	v, err := s.run(ctx, sc, keys, args)
	if s.onScript != nil {
		s.onScript(sc.name, start)
	}
	if err != nil {
		return limit.Outcome{}, nil, scriptError(checkSpend, err)
	}
	if checkSpend {
		vd, handled, err := earlySpend(v)
		if errors.Is(err, spendcache.ErrMiss) {
			var f *spendcache.Figures
			if f, err = s.spend.Load(ctx, &p.Spend); err != nil {
				return limit.Outcome{}, nil, spendError(true, err)
			}
			args = s.spend.Args(args[:2], &p.Spend, len(keys)-spendcache.NumKeys+1, f, id)
			if v, err = s.run(ctx, sc, keys, args); err != nil {
				return limit.Outcome{}, nil, scriptError(true, err)
			}
			vd, handled, err = earlySpend(v)
		}
		switch {
		case err != nil:
			return limit.Outcome{}, nil, spendError(true, err)
		case handled:
			return spendRefused(vd), &vd, nil
		}
	}
	r, err := parseAdmitReply(v, ops, len(p.Requests))
	if err != nil {
		return limit.Outcome{}, nil, err
	}
	if r.aborted {
		return limit.Outcome{}, nil, ErrAdmissionAborted
	}
	views := make([]opView, len(ops))
	at := 0
	for i, op := range ops {
		views[i].now = r.now
		if r.stands(i, op) && op.Private {
			views[i].levels = r.levels[at : at+len(op.Limits)]
			at += len(op.Limits)
		}
	}
	o := describe(ops, views, r.refOp, r.refLimit, r.refLevel, r.now)
	if o.Admitted() && id != "" {
		o.Hold = limit.Hold{Backend: limit.BackendRemote, ID: id, Entries: entries, Overage: p.Overage}
	}
	if !checkSpend {
		return o, noLedger, nil
	}
	vd, err := spendcache.ParseOut(r.spend)
	if err != nil {
		return limit.Outcome{}, nil, spendError(true, err)
	}
	o.Spend = vd.Used
	return o, &vd, nil
}

// Settle ends a hold with the usage reported; false means it had already
// ended (or expired), so a retried call changes nothing.
func (s *Buckets) Settle(ctx context.Context, id string, opKeys []string, actual int64) (bool, error) {
	return s.endHold(ctx, id, opKeys, "settle", actual)
}

// Release ends a hold giving back everything it reserved. A hold it does
// not find (never admitted, or not yet) leaves a release tombstone, so a
// later admission with that id commits nothing.
func (s *Buckets) Release(ctx context.Context, id string, opKeys []string) (bool, error) {
	return s.endHold(ctx, id, opKeys, "release", 0)
}

func (s *Buckets) endHold(ctx context.Context, id string, opKeys []string, mode string, actual int64) (bool, error) {
	if s.cluster {
		return s.endCluster(ctx, id, opKeys, mode, actual)
	}
	v, err := s.run(ctx, s.end, []string{holdKey(id), releasedKey(id)}, s.endArgs(mode, actual))
	if err != nil {
		return false, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, errors.New("end script: unexpected reply")
	}
	return n == 1, nil
}

func (s *Buckets) endArgs(mode string, actual int64) []any {
	return []any{mode, appendDoubles(nil, float64(actual), float64(s.margin), float64(s.holdTTL), float64(s.tombTTL))}
}

type admitReply struct {
	admitted bool
	aborted  bool  // the hold id was released or in use: nothing written
	now      int64 // Unix ns
	refOp    int   // 0-based, -1 when nothing refused
	refLimit int
	refLevel float64
	nreq     int
	spend    any // the spend preflight's verdict, when it ran
	// levels are the standing private ops' levels, one per limit, in plan
	// order (see stands).
	levels []float64
}

// stands reports whether op i's units stand after the script ran, which is
// when admit.lua reports its levels: every op of an admitted plan; after a
// token refusal, the request-count ops (concurrency units are given back);
// after a request refusal, none.
func (r admitReply) stands(i int, op limit.Op) bool {
	switch {
	case r.refOp < 0:
		return true
	case r.refOp >= r.nreq:
		return i < r.nreq && op.Kind == limit.KindRequests
	}
	return false
}

// errBadAdmitReply is made once: parseAdmitReply runs on every admission.
var errBadAdmitReply = errs.New("admit script: malformed reply")

func parseAdmitReply(v any, ops []limit.Op, nreq int) (admitReply, error) {
	bad := errBadAdmitReply
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return admitReply{}, bad
	}
	adm, ok1 := a[0].(int64)
	nowUs, ok2 := a[1].(int64)
	if !ok1 || !ok2 {
		return admitReply{}, bad
	}
	if adm == -1 {
		return admitReply{aborted: true, now: nowUs * 1000, refOp: -1}, nil
	}
	if len(a) != 6 && len(a) != 7 {
		return admitReply{}, bad
	}
	ri, ok3 := a[2].(int64)
	rj, ok4 := a[3].(int64)
	rl, ok5 := a[4].(string)
	lv, ok6 := a[5].(string)
	if !(ok3 && ok4 && ok5 && ok6) {
		return admitReply{}, bad
	}
	r := admitReply{admitted: adm == 1, now: nowUs * 1000, refOp: int(ri) - 1, refLimit: int(rj) - 1, nreq: nreq}
	if len(a) == 7 {
		r.spend = a[6]
	}
	if r.refOp >= 0 {
		if r.refOp >= len(ops) || r.refLimit < 0 || r.refLimit >= len(ops[r.refOp].Limits) || len(rl) != 8 {
			return admitReply{}, bad
		}
		r.refLevel = readDouble(rl)
	}
	n := 0
	for i, op := range ops {
		if op.Private && r.stands(i, op) {
			n += len(op.Limits)
		}
	}
	if len(lv) != 8*n {
		return admitReply{}, bad
	}
	r.levels = make([]float64, n)
	for i := range r.levels {
		r.levels[i] = readDouble(lv[8*i:])
	}
	return r, nil
}

// opView is what one op's script reported: its clock and, per limit, the
// standing level of a private op (nil when not reported).
type opView struct {
	now    int64
	levels []float64
}

// describe turns script replies into an Outcome, computing Retry-After and
// levels with the same functions the shared-data backend uses.
func describe(ops []limit.Op, views []opView, refOp, refLimit int, refLevel float64, refNow int64) limit.Outcome {
	var o limit.Outcome
	o.Result = limit.ResultAdmitted
	n := 0
	for i, op := range ops {
		n += min(len(views[i].levels), len(op.Limits))
	}
	if n > 0 {
		o.Levels = make([]limit.OpLevel, 0, n)
	}
	for i, op := range ops {
		for j, lv := range views[i].levels {
			if j >= len(op.Limits) {
				break
			}
			l := op.Limits[j]
			o.Levels = append(o.Levels, limit.OpLevel{Kind: op.Kind, Dimension: op.Dimension, Budget: l.Budget,
				Level: bucket.LevelOf(l, bucket.State{Level: lv, Last: views[i].now}, views[i].now)})
		}
	}
	if refOp >= 0 {
		op := ops[refOp]
		l := op.Limits[refLimit]
		st := bucket.State{Level: refLevel, Last: refNow}
		o.Result = limit.ResultRefused
		o.Refusal = &limit.Refusal{Kind: op.Kind, Dimension: op.Dimension, Budget: l.Budget,
			RetryAfterSec: bucket.RetryAfterSec(l, st, op.Amount), ExceedsCapacity: op.Amount > l.Capacity, Private: op.Private}
		if op.Private {
			o.Refusal.Level = bucket.LevelOf(l, st, refNow)
		}
	}
	return o
}
