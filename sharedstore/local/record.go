package local

import (
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// A record is one shared-data value that holds a dimension's request-count
// buckets and its token buckets together (limit.Op.Record): the
// request counts' states first, then the tokens'. An admission reads and
// writes it once for both ops, where separate buckets cost a get and a set
// each: at six dimensions with request counts, twelve host calls fewer per
// request, and in Envoy twelve fewer turns of the one mutex every worker's
// shared-data call takes. Everything else (refunds, settlement, the
// give-backs of a refusal) reaches the same value with the layout of its
// op's states in it.

// layout places an op's states in the value at its key: states at to
// at+len(limits) of of. The zero layout is a value of the op's own.
type layout struct{ at, of uint8 }

// total is the number of states in the value holding n limits placed by
// lay; ok is false when they do not fit in it (a layout not made here).
func (lay layout) total(n int) (int, bool) {
	if lay.of == 0 {
		return n, lay.at == 0 && n > 0 && n <= bucket.MaxLimits
	}
	of := int(lay.of)
	return of, n > 0 && int(lay.at)+n <= of && of <= bucket.MaxLimits
}

// entryLayout is where a hold entry's states are.
func entryLayout(e *limit.HoldEntry) layout { return layout{e.At, e.Of} }

// pairing is what the request-count phase of an admission did with a
// token op's record.
type pairing uint8

const (
	unpaired  pairing = iota // no record: the token op has its own bucket
	pairLeft                 // the record was written, its tokens left for the token phase
	pairTaken                // the tokens were taken in the record's write
)

// pairState is a token op's pairing; with a record, nReq states of request
// counts come first in it. Tokens taken with the request counts are
// s.taken[takenAt], and their levels are reported in the token phase, in
// the op's turn (from its states kept at s.deferred[from:]), so an outcome
// lists the levels separate buckets would: none of a token op that a
// refusal came before.
type pairState struct {
	pairing       pairing
	nReq          uint8
	takenAt, from int32
}

// partner is the index in tokens of the token op that shares op's record,
// or -1: op is a request-count op, and the planner gave both the same
// Record, dimension and identity (the record's states must fit one value).
func partner(op *limit.Op, tokens []limit.Op) int {
	if op.Record == "" || op.Kind != limit.KindRequests || len(op.Limits) == 0 {
		return -1
	}
	for i := range tokens {
		t := &tokens[i]
		if t.Dimension == op.Dimension && t.Kind == limit.KindTokens && t.Record == op.Record {
			if len(t.Limits) == 0 || len(op.Limits)+len(t.Limits) > bucket.MaxLimits {
				return -1
			}
			return i
		}
	}
	return -1
}

// admitRecord is admitOp for a request-count op r and its partner token op
// t (index ti of the plan's tokens) in one compare-and-swap of their
// record: the request counts are taken, or refuse as admitOp's would; the
// tokens are taken in the same write when they fit, and otherwise are left
// for the token phase, which then refuses them (or takes them, if another
// worker's refund came in between) in its own turn of the record (admitOp
// on the record's token states). So an
// admission's answer is the one separate buckets give: request counts are
// judged before any token, and a later refusal gives back what was taken.
func (s *Store) admitRecord(r, t *limit.Op, ti int, now int64, out *limit.Outcome) (opResult, int, error) {
	nR, nT := len(r.Limits), len(t.Limits)
	n := nR + nT
	all := s.states[:n]
	reqs, toks := all[:nR], all[nR:]
	lay := layout{uint8(nR), uint8(n)}
	pending := s.pendingRefund(r.Record)
	for attempt := 0; attempt < admitAttempts; attempt++ {
		value, cas, err := s.sd.Get(r.Record)
		fresh := errors.Is(err, ErrNotFound)
		switch {
		case fresh:
			if pending != nil {
				pending.amount = 0
			}
			// A record joins the maps of both its ops: with one of them
			// full it is not made, and each op goes to a bucket of its own
			// (its map's, or a reusable slot: spill.go).
			if full := s.fullFamilies(r) | s.fullFamilies(t); full != 0 {
				return s.unpair(r, ti, now, out)
			}
			for i := range reqs {
				reqs[i] = bucket.Fresh(r.Limits[i], now)
			}
			for i := range toks {
				toks[i] = bucket.Fresh(t.Limits[i], now)
			}
		case err != nil:
			return opFailed, 0, errs.Wrap("read "+r.Dimension.String()+" record", err)
		default:
			if err := bucket.Decode(value, all); err != nil {
				return opFailed, 0, errs.Wrap("decode "+r.Dimension.String()+" record", err)
			}
			fold(pending, toks, now)
		}
		// The request counts first, in front of the states as refusal reads them.
		if at := bucket.Take(reqs, r.Limits, 1, now); at >= 0 {
			s.recordRefusedLevels(r, now, out)
			return opRefused, at, nil
		}
		tokens := bucket.Take(toks, t.Limits, units(t), now) < 0
		if fresh {
			ok, err := s.claimRecord(r, t)
			if err != nil {
				return opFailed, 0, err
			}
			if !ok {
				return s.unpair(r, ti, now, out)
			}
			if cas, err = s.foreignCas(); err != nil {
				s.unclaimRecord(r, t)
				return opFailed, 0, err
			}
		}
		s.buf = bucket.AppendEncoded(s.buf[:0], all)
		err = s.sd.Set(r.Record, s.buf, cas)
		if err == nil {
			if pending != nil {
				pending.amount = 0 // written with this admission
			}
			s.taken = append(s.taken, taken{op: r, levelsAt: s.recordLevels(r, reqs, now, out), lay: layout{0, uint8(n)}})
			p := pairState{pairing: pairLeft, nReq: uint8(nR)}
			if tokens {
				p.pairing = pairTaken
				p.takenAt, p.from = int32(len(s.taken)), int32(len(s.deferred))
				s.taken = append(s.taken, taken{op: t, levelsAt: -1, lay: lay})
				if t.Private {
					s.deferred = append(s.deferred, toks...)
				}
			}
			s.pairs[ti] = p
			return opAdmitted, 0, nil
		}
		if fresh {
			s.unclaimRecord(r, t)
		}
		if !errors.Is(err, ErrCasMismatch) {
			return opFailed, 0, errs.Wrap("write "+r.Dimension.String()+" record", err)
		}
	}
	return opFailed, 0, errs.Wrap("admit "+r.Dimension.String(), ErrContention)
}

// unpair admits request-count op r on a bucket of its own, and leaves its
// partner token op (index ti) to the token phase on its own: their record
// would be new while a map of theirs is full.
func (s *Store) unpair(r *limit.Op, ti int, now int64, out *limit.Outcome) (opResult, int, error) {
	s.pairs[ti] = pairState{}
	return s.admitOp(r, r.Key, layout{}, now, out)
}

// claimRecord claims a new record's slot in the maps of both its ops, or in
// none: false when a map is full.
func (s *Store) claimRecord(r, t *limit.Op) (bool, error) {
	full, err := s.claimSlots(r)
	if err != nil {
		return false, err
	}
	if full == 0 {
		if full, err = s.claimSlots(t); err != nil || full != 0 {
			s.unclaimSlots(r, opFamilies(r))
			if err != nil {
				return false, err
			}
		}
	}
	return full == 0, nil
}

// unclaimRecord gives back the slots claimRecord claimed for a record that
// was not created.
func (s *Store) unclaimRecord(r, t *limit.Op) {
	s.unclaimSlots(r, opFamilies(r))
	s.unclaimSlots(t, opFamilies(t))
}

// takenKey is where the states of s.taken[i] are: the reusable slot it
// was taken in (spill.go), its record's key when it shares one, else its
// own.
func (s *Store) takenKey(i int) string {
	if len(s.slotTakes) != 0 {
		if k, ok := s.slotKey(i); ok {
			return k
		}
	}
	t := &s.taken[i]
	if t.lay.of != 0 {
		return t.op.Record
	}
	return t.op.Key
}

// slotKey is the reusable slot s.taken[i] was taken in, if it was.
func (s *Store) slotKey(i int) (string, bool) {
	for j := range s.slotTakes {
		if s.slotTakes[j].at == i {
			return s.slotTakes[j].key, true
		}
	}
	return "", false
}

// reportTaken records the levels of token op t, taken with its request
// counts (p), in the token phase's turn.
func (s *Store) reportTaken(t *limit.Op, p pairState, now int64, out *limit.Outcome) {
	if !t.Private {
		return
	}
	states := s.deferred[p.from : int(p.from)+len(t.Limits)]
	s.taken[p.takenAt].levelsAt = s.recordLevels(t, states, now, out)
}
