package server

import (
	"context"
	"errors"
	"sync"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// A Redis Cluster cannot run one script over buckets in different slots, so
// cluster admission runs the admit script once per op, all ops at once (one
// parallel round trip), each on the node owning the op's slot. Every token
// or concurrency op writes its own hold record beside its bucket
// (opHoldKey), which settle and release fan out to. When an op refuses, the
// ops that succeeded are compensated: what the plan rule would never have
// taken is given back (docs/bucket-math.md, "Admitting a plan"), so the end state is
// the single-server one. Unlike a single server, a refused plan holds its
// other units for one round trip, so a concurrent request may see them
// taken; all or nothing still holds once the call returns.
//
// Release tombstones are per op too (opReleasedKey, beside the op's hold
// record): a release that finds no record for an op leaves one, and that
// op's admission then commits nothing. Each token or concurrency op is
// therefore either released or never taken, whichever order the release
// and its admission meet in. When any op of a plan meets a tombstone, every
// op that was taken is compensated (request-count units included) and the
// admission is aborted, as on a single server. Request-count ops carry no
// record and no tombstone: when the whole admission ran before the release,
// their units stay consumed, again as on a single server.

type opResult struct {
	reply admitReply
	err   error
}

func (s *Buckets) admitCluster(ctx context.Context, ops []limit.Op, nreq int, id string, entries []limit.HoldEntry, overage limit.Overage) (limit.Outcome, error) {
	results := make([]opResult, len(ops))
	var wg sync.WaitGroup
	for i := range ops {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = s.admitOp(ctx, ops[i], i < nreq, id, overage)
		}(i)
	}
	wg.Wait()

	refOp := -1
	aborted := false
	var errsSeen []error
	for i, r := range results {
		switch {
		case r.err != nil:
			errsSeen = append(errsSeen, r.err)
		case r.reply.aborted:
			aborted = true
		case !r.reply.admitted && refOp < 0:
			refOp = i
		}
	}
	// keep reports whether op i's units stand once the plan is decided.
	keep := func(i int) bool {
		return refOp < 0 || (refOp >= nreq && i < nreq && ops[i].Kind == limit.KindRequests)
	}
	if len(errsSeen) > 0 || aborted {
		keep = func(int) bool { return false }
	}
	for i, r := range results {
		if r.err == nil && r.reply.admitted && !keep(i) {
			if err := s.compensate(ctx, ops[i], id); err != nil {
				errsSeen = append(errsSeen, err)
			}
		}
	}
	if len(errsSeen) > 0 {
		return limit.Outcome{}, errors.Join(errsSeen...)
	}
	if aborted {
		return limit.Outcome{}, ErrAdmissionAborted
	}

	views := make([]opView, len(ops))
	for i, r := range results {
		views[i] = opView{now: r.reply.now}
		if keep(i) {
			views[i].levels = r.reply.levels
		}
	}
	var o limit.Outcome
	if refOp >= 0 {
		r := results[refOp].reply
		o = describe(ops, views, refOp, r.refLimit, r.refLevel, r.now)
	} else {
		o = describe(ops, views, -1, 0, 0, 0)
		if id != "" {
			o.Hold = limit.Hold{Backend: limit.BackendRemote, ID: id, Entries: entries, Overage: overage}
		}
	}
	return o, nil
}

// admitOp runs the admit script on a one-op plan in the op's slot.
func (s *Buckets) admitOp(ctx context.Context, op limit.Op, isRequest bool, id string, overage limit.Overage) opResult {
	nreq, ntok := 0, 1
	if isRequest {
		nreq, ntok = 1, 0
	}
	keys := []string{bucketKey(op.Key)}
	var record []byte
	if op.Kind != limit.KindRequests && id != "" {
		keys = append(keys, opHoldKey(op.Key, id), opReleasedKey(op.Key, id))
		record = appendRecord(nil, []limit.HoldEntry{{Key: op.Key, Kind: op.Kind, Dimension: op.Dimension, Limits: op.Limits, Amount: op.Amount}}, overage)
	}
	plan := appendPlan(nil, nreq, ntok, s.holdTTL, s.margin, []limit.Op{op})
	v, err := s.admit.run(ctx, s.c, keys, []any{plan, record})
	if err != nil {
		return opResult{err: err}
	}
	r, err := parseAdmitReply(v, []limit.Op{op}, nreq)
	if err != nil {
		return opResult{err: err}
	}
	// the script refused with its own op index; it is always this op
	if r.refOp >= 0 {
		r.refOp = 0
	}
	return opResult{reply: r}
}

// compensate gives back what one op took: a request-count op directly, a
// token or concurrency op by releasing its hold record (which also deletes
// it, so no later release can give the units back twice).
func (s *Buckets) compensate(ctx context.Context, op limit.Op, id string) error {
	if op.Kind == limit.KindRequests {
		args := []any{appendDoubles(nil, float64(s.margin), float64(s.holdTTL)),
			appendRecord(nil, []limit.HoldEntry{{Key: op.Key, Kind: op.Kind, Limits: op.Limits, Amount: op.Amount}}, limit.OverageDebt)}
		_, err := s.give.run(ctx, s.c, []string{bucketKey(op.Key)}, args)
		return err
	}
	_, err := s.end.run(ctx, s.c, []string{opHoldKey(op.Key, id), opReleasedKey(op.Key, id), bucketKey(op.Key)}, s.endArgs("release", 0))
	return err
}

// endCluster settles or releases every per-op record of a hold at once.
// Each record ends exactly once, so a retry after a partial failure ends
// only the records still standing.
func (s *Buckets) endCluster(ctx context.Context, id string, opKeys []string, mode string, actual int64) (bool, error) {
	seen := make(map[string]struct{}, len(opKeys))
	type res struct {
		ended bool
		err   error
	}
	results := make([]res, len(opKeys))
	var wg sync.WaitGroup
	for i, k := range opKeys {
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		wg.Add(1)
		go func(i int, k string) {
			defer wg.Done()
			v, err := s.end.run(ctx, s.c, []string{opHoldKey(k, id), opReleasedKey(k, id), bucketKey(k)}, s.endArgs(mode, actual))
			n, _ := v.(int64)
			results[i] = res{ended: n == 1, err: err}
		}(i, k)
	}
	wg.Wait()
	ended := false
	var all []error
	for _, r := range results {
		ended = ended || r.ended
		if r.err != nil {
			all = append(all, r.err)
		}
	}
	return ended, errors.Join(all...)
}
