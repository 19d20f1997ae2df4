package local

import (
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// opResult is what admitting one op came to.
type opResult uint8

const (
	opAdmitted opResult = iota + 1
	opRefused
	opSkipped // failed open: its map is at max_buckets, or it has no Limits
	opFailed
)

// Admit reserves plan all or nothing (docs/bucket-math.md) and calls done before
// returning. The hold keeps the plan's Limits slices: a Plan's slices must
// not be reused while its hold lives.
func (s *Store) Admit(plan limit.Plan, done func(limit.Outcome)) {
	s.AdmitWith(plan, nil, done)
}

// Spare is storage a caller lends an admission for its outcome's Levels and
// hold Entries, so an admitted request allocates neither (in the VM each is
// a scanned allocation). The outcome views it, and the admission keeps in
// it whatever it had to allocate instead: the caller lends it again only
// once that outcome's hold has ended and its levels are no longer read.
type Spare struct {
	Levels  []limit.OpLevel
	Entries []limit.HoldEntry
}

// lend is room for n elements from *buf, emptied; when *buf holds less,
// the room is made and left in *buf for the next admission.
func lend[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, 0, n)
	}
	return (*buf)[:0]
}

// AdmitWith is Admit with spare lent for the outcome (nil: none).
func (s *Store) AdmitWith(plan limit.Plan, spare *Spare, done func(limit.Outcome)) {
	s.spare = spare
	out := s.admit(plan)
	s.spare = nil
	if done != nil {
		done(out)
	}
}

func (s *Store) admit(plan limit.Plan) limit.Outcome {
	now := s.now()
	out := limit.Outcome{Hold: limit.Hold{Backend: limit.BackendLocal, Overage: plan.Overage}}
	if plan.Spend.Any() {
		// Spend first: it only reads, so a spend refusal takes nothing.
		refused, err := s.preflight(&plan.Spend, &out)
		if err != nil {
			return limit.Outcome{Err: errs.Wrap(err.Error(), limit.ErrSpendUnavailable)}
		}
		if refused {
			return out
		}
		out.Hold.Spend = plan.Spend
	}
	out = s.admitBuckets(&plan, now, out)
	if !out.Admitted() {
		s.endSpend(&plan.Spend, 0) // a bucket refused or failed: the reservation comes back
	}
	return out
}

// admitBuckets is admit's bucket part, after the spend preflight.
func (s *Store) admitBuckets(plan *limit.Plan, now int64, out limit.Outcome) limit.Outcome {
	s.taken, s.slotTakes = s.taken[:0], s.slotTakes[:0]
	s.privateLimits = privateLimits(*plan)
	// What the request-count phase did with each token op's record
	// (record.go): a plan without records leaves every entry zero.
	s.pairs, s.deferred = s.pairs[:0], s.deferred[:0]
	for range plan.Tokens {
		s.pairs = append(s.pairs, pairState{})
	}
	for i := range plan.Requests {
		op := &plan.Requests[i]
		var res opResult
		var at int
		var err error
		if t := partner(op, plan.Tokens); t >= 0 {
			res, at, err = s.admitRecord(op, &plan.Tokens[t], t, now, &out)
		} else {
			res, at, err = s.admitOp(op, op.Key, layout{}, now, &out)
		}
		switch res {
		case opFailed:
			s.undo(s.taken, now, nil, false)
			return limit.Outcome{Err: err, Skipped: out.Skipped}
		case opRefused:
			out.Result, out.Refusal = limit.ResultRefused, s.refusal(op, at, now)
			s.undo(s.taken, now, &out, false)
			return out
		}
	}
	for i := range plan.Tokens {
		op := &plan.Tokens[i]
		var res opResult
		var at int
		var err error
		switch p := s.pairs[i]; p.pairing {
		case pairTaken:
			s.reportTaken(op, p, now, &out) // taken with its request counts
			continue
		case pairLeft:
			res, at, err = s.admitOp(op, op.Record, layout{p.nReq, p.nReq + uint8(len(op.Limits))}, now, &out)
		default:
			res, at, err = s.admitOp(op, op.Key, layout{}, now, &out)
		}
		switch res {
		case opFailed:
			s.undo(s.taken, now, nil, false)
			return limit.Outcome{Err: err, Skipped: out.Skipped}
		case opRefused:
			// Request-count units admitted the request and stay consumed;
			// tokens and concurrency units come back.
			out.Result, out.Refusal = limit.ResultRefused, s.refusal(op, at, now)
			s.undo(s.taken, now, &out, true)
			return out
		}
	}
	out.Result = limit.ResultAdmitted
	out.Hold.Entries = s.holdEntries(s.taken)
	return out
}

// admitOp runs one op's CAS loop on the value at key, where lay places
// the op's states (the zero layout: its own bucket; a record's token
// states, for a token op its request-count phase left to this one). On a
// refusal it returns the index of the refusing Limit, with s.states holding
// the refilled, uncharged levels from its front.
func (s *Store) admitOp(op *limit.Op, key string, lay layout, now int64, out *limit.Outcome) (opResult, int, error) {
	n := len(op.Limits)
	if n == 0 {
		return opSkipped, 0, nil
	}
	total, ok := lay.total(n)
	if !ok {
		return opFailed, 0, errs.New("admit " + op.Dimension.String() + ": too many limits on one op")
	}
	all := s.states[:total]
	states := all[lay.at : int(lay.at)+n]
	var pending *refund // only token buckets get refunds, so only they look
	if op.Kind == limit.KindTokens {
		pending = s.pendingRefund(key)
	}
	for attempt := 0; attempt < admitAttempts; attempt++ {
		value, cas, err := s.sd.Get(key)
		fresh := errors.Is(err, ErrNotFound)
		switch {
		case fresh && lay.of != 0:
			// The request-count phase has just written the record, and
			// shared data never removes a key.
			return opFailed, 0, errs.Wrap("read "+op.Dimension.String()+" record", err)
		case fresh:
			if pending != nil {
				pending.amount = 0 // no bucket to give back to, as change finds
			}
			if full := s.fullFamilies(op); full != 0 {
				res, at, sr, err := s.admitSpill(op, key, full, now, out)
				if sr == spillRetry {
					continue
				}
				return res, at, err
			}
			for i := range states {
				states[i] = bucket.Fresh(op.Limits[i], now)
			}
		case err != nil:
			return opFailed, 0, errs.Wrap("read "+op.Dimension.String()+" bucket", err)
		default:
			if err := bucket.Decode(value, all); err != nil {
				return opFailed, 0, errs.Wrap("decode "+op.Dimension.String()+" bucket", err)
			}
			// This VM's pending refund rides on this write (refund.go). A
			// refusal writes nothing and the refund stays pending, but is
			// judged, and its levels and Retry-After told, with the refund
			// in: it is the caller's budget already, and a refund written at
			// once would have been there.
			fold(pending, states, now)
		}
		if at := bucket.Take(states, op.Limits, units(op), now); at >= 0 {
			copy(s.states[:n], states) // refusal and the levels read them from the front
			s.recordRefusedLevels(op, now, out)
			return opRefused, at, nil
		}
		var claimed family
		if fresh {
			full, err := s.claimSlots(op)
			if err != nil {
				return opFailed, 0, err
			}
			if full != 0 {
				res, at, sr, err := s.admitSpill(op, key, full, now, out)
				if sr == spillRetry {
					continue
				}
				return res, at, err
			}
			claimed = opFamilies(op)
			if cas, err = s.foreignCas(); err != nil {
				s.unclaimSlots(op, claimed)
				return opFailed, 0, err
			}
		}
		s.buf = bucket.AppendEncoded(s.buf[:0], all)
		err = s.sd.Set(key, s.buf, cas)
		if err == nil {
			if pending != nil {
				pending.amount = 0 // written with this admission
			}
			s.taken = append(s.taken, taken{op: op, levelsAt: s.recordLevels(op, states, now, out), lay: lay})
			return opAdmitted, 0, nil
		}
		if claimed != 0 {
			s.unclaimSlots(op, claimed)
		}
		if !errors.Is(err, ErrCasMismatch) {
			return opFailed, 0, errs.Wrap("write "+op.Dimension.String()+" bucket", err)
		}
	}
	return opFailed, 0, errs.Wrap("admit "+op.Dimension.String(), ErrContention)
}

// refusal describes the refused op's Limit at; s.states still holds the
// levels the refusal saw.
func (s *Store) refusal(op *limit.Op, at int, now int64) *limit.Refusal {
	if at < 0 || at >= len(op.Limits) {
		at = 0
	}
	l, st := op.Limits[at], s.states[at]
	r := &limit.Refusal{
		Kind:            op.Kind,
		Dimension:       op.Dimension,
		Budget:          l.Budget,
		RetryAfterSec:   bucket.RetryAfterSec(l, st, units(op)),
		ExceedsCapacity: bucket.ExceedsCapacity(l, units(op)),
		Private:         op.Private,
	}
	if op.Private {
		r.Level = bucket.LevelOf(l, st, now)
	}
	return r
}

// undo gives back what ops took. With keepRequests it gives back all but
// request-count units, which admitted the request and stay consumed on a
// token refusal. out (when not nil) gets the private levels after the
// give-back.
func (s *Store) undo(ops []taken, now int64, out *limit.Outcome, keepRequests bool) {
	for i := range ops {
		t := &ops[i]
		if keepRequests && t.op.Kind == limit.KindRequests {
			continue
		}
		// Immediate, and with nothing to fold: the op's own admission just
		// wrote its bucket's pending refund. A request-count unit given
		// back ends no hold (it never was one).
		kind := changeGive
		if t.op.Kind == limit.KindRequests {
			kind = changeReturn
		}
		states, ok := s.change(s.takenKey(i), t.op.Limits, t.lay, kind, units(t.op), 0, 0, now, nil)
		if ok && out != nil && t.levelsAt >= 0 {
			for i, l := range t.op.Limits {
				if j := t.levelsAt + i; j < len(out.Levels) && i < len(states) {
					out.Levels[j].Level = bucket.LevelOf(l, states[i], now)
				}
			}
		}
	}
}

// recordLevels appends a private op's levels after its reservation and
// returns where they start, or -1 when the op is not the caller's own.
func (s *Store) recordLevels(op *limit.Op, states []bucket.State, now int64, out *limit.Outcome) int {
	if !op.Private {
		return -1
	}
	if out.Levels == nil {
		// One allocation for every level the plan can report, or none.
		n := max(s.privateLimits, len(op.Limits))
		if sp := s.spare; sp != nil {
			out.Levels = lend(&sp.Levels, n)
		} else {
			out.Levels = make([]limit.OpLevel, 0, n)
		}
	}
	at := len(out.Levels)
	for i, l := range op.Limits {
		if i >= len(states) {
			break
		}
		out.Levels = append(out.Levels, limit.OpLevel{
			Kind: op.Kind, Dimension: op.Dimension, Budget: l.Budget, Level: bucket.LevelOf(l, states[i], now),
		})
	}
	return at
}

// privateLimits counts the Limits of the plan's private ops: the most
// levels an admission can report.
func privateLimits(plan limit.Plan) int {
	n := 0
	for _, ops := range [2][]limit.Op{plan.Requests, plan.Tokens} {
		for i := range ops {
			if ops[i].Private {
				n += len(ops[i].Limits)
			}
		}
	}
	return n
}

// recordRefusedLevels reports a refused private op's levels (nothing taken),
// so its every period reaches the caller, not only the refusing one.
func (s *Store) recordRefusedLevels(op *limit.Op, now int64, out *limit.Outcome) {
	s.recordLevels(op, s.states[:len(op.Limits)], now, out)
}

// holdEntries lists what the hold must give back or settle: the concurrency
// and token ops that were charged (request-count units are never returned).
func (s *Store) holdEntries(ops []taken) []limit.HoldEntry {
	n := 0
	for i := range ops { // by index: a taken copied out is a memory.copy in the VM
		if ops[i].op.Kind != limit.KindRequests {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	var entries []limit.HoldEntry
	if sp := s.spare; sp != nil {
		entries = lend(&sp.Entries, n)
	} else {
		entries = make([]limit.HoldEntry, 0, n)
	}
	for i := range ops {
		t := &ops[i]
		if t.op.Kind == limit.KindRequests {
			continue
		}
		entries = append(entries, limit.HoldEntry{
			Key: s.takenKey(i), Kind: t.op.Kind, Dimension: t.op.Dimension, Limits: t.op.Limits, Amount: units(t.op),
			At: t.lay.at, Of: t.lay.of,
		})
	}
	return entries
}

// units is what an op takes from each of its Limits: one for a request-count
// or concurrency op (docs/bucket-math.md), the token amount otherwise.
func units(op *limit.Op) int64 {
	if op.Kind == limit.KindTokens {
		return op.Amount
	}
	return 1
}
