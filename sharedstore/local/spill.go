package local

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// Reusable slots: where a bucket goes once its map is at max_buckets.
//
// Proxy shared data has no delete, so a bucket kept under its identity's own
// key ("tb|t|api_key|v1|<hash>") holds that key for the life of the VMs, and
// a map that reached its ceiling would stay full: made-up API keys answered
// 401 upstream would fill it, and every later identity would fail open.
// But a bucket whose every level is back at capacity, with no hold on it
// still open, carries no information: a missing bucket is exactly that. So
// past the ceiling a new bucket goes to one of the map's max_buckets
// reusable slots ("tb|o|t|api_key|v1|<i>"), where it may take the place of
// a bucket that is whole. Only when every slot it may use holds a bucket
// that is not whole does the bucket fail open (counted) or, with
// rate_limiting.on_full_bucket_map "refuse", the request get a 503.
//
// A slot's value is the bucket's encoding (package bucket), then the number
// of holds on it still open (uint32, little endian), then the key of the
// bucket it holds, its owner. A bucket's slots are the spillWindow slots
// from hash(owner) on. Lookups read them without a lock, in order, up to
// the owner or the first slot never written (slots are never emptied: a
// bucket is only ever dropped by another taking its slot, so the owner
// cannot sit past a slot never written). Placing a bucket takes the
// table's lock (a shared-data value holding its expiry) so two workers
// never place one identity twice; the lock is held for a scan of the
// window and one write, and expires after spillLease should a VM die
// holding it. A slot's open holds rise in the compare-and-swap that takes
// a token or concurrency unit and fall in the one that gives it back, so a
// slot is never reused under a hold: every hold ends on the bucket it was
// taken from, exactly once. A slot's holds end at once, never as a pending
// refund (refund.go): a refund summed with another would end two holds in
// one write.

const (
	spillPrefix = "tb|o|"
	// spillWindow is how many slots a bucket may use: the lookup of an
	// identity past the ceiling reads up to this many values.
	spillWindow = 8
	// spillLease bounds how long a placement holds its table's lock.
	spillLease = int64(1e9)
	trailerLen = 4 // the open holds, before the owner
)

// isSpillKey reports whether key is a reusable slot's. Every key this store
// writes starts "tb|" and a kind, and only a slot's kind is "o|": a few
// bytes read, for a check every settlement makes (in the VM a string
// comparison is a call).
func isSpillKey(key string) bool {
	return len(key) > len(spillPrefix) && key[3] == 'o' && key[4] == '|' && key[2] == '|'
}

// spillTable is the slots' key prefix for a bucket key "tb|<kind>|<dim>|<version>|<identity>":
// "tb|o|<kind>|<dim>|<version>|". One table per map (dimension, kind and
// parameter version), so every bucket in it has the same Limits.
func spillTable(opKey string) string {
	bars := 0
	for i := 0; i < len(opKey); i++ {
		if opKey[i] == '|' {
			if bars++; bars == 4 {
				return spillPrefix + opKey[3:i+1]
			}
		}
	}
	return spillPrefix + opKey[min(3, len(opKey)):] + "|"
}

// spillStart is the first slot of owner's window (FNV-1a).
func spillStart(owner string, slots int) int {
	h := uint64(14695981039346656037)
	for i := 0; i < len(owner); i++ {
		h ^= uint64(owner[i])
		h *= 1099511628211
	}
	return int(h % uint64(slots))
}

// slotValue is one slot as read: its bucket's encoding, open holds and owner.
type slotValue struct {
	states []byte
	opens  uint32
	owner  []byte
}

// splitSlot cuts a slot's value of n states; ok false when it is not one.
func splitSlot(value []byte, n int) (slotValue, bool) {
	end := bucket.EncodedLen(n)
	if len(value) < end+trailerLen {
		return slotValue{}, false
	}
	return slotValue{states: value[:end], opens: binary.LittleEndian.Uint32(value[end:]), owner: value[end+trailerLen:]}, true
}

// appendTrailer writes a slot's open holds and owner after its states.
func appendTrailer(dst []byte, opens uint32, owner []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, opens)
	return append(dst, owner...)
}

// whole reports whether a slot's bucket carries no information at now: no
// hold open on it, and every level refilled to its capacity.
func (s *Store) whole(v slotValue, limits []limit.Limit, now int64) bool {
	if v.opens != 0 {
		return false
	}
	states := s.states[:len(limits)]
	if bucket.Decode(v.states, states) != nil {
		return false
	}
	for i := range states {
		states[i].Refill(limits[i], now)
		if states[i].Level < float64(limits[i].Capacity) {
			return false
		}
	}
	return true
}

// spillSlot is where an op's bucket is, or may go, in its table.
type spillSlot struct {
	key   string
	cas   uint32
	value []byte // a copy: the slot as read (nil: never written)
}

// findSpill scans op's window for its bucket. found is the owner's slot;
// otherwise free is the first slot a new bucket may take (a slot never
// written, or one whose bucket is whole), ok false when there is none.
func (s *Store) findSpill(table string, op *limit.Op, now int64) (found, free spillSlot, isFound, ok bool, err error) {
	slots := s.maxBuckets
	start := spillStart(op.Key, slots)
	var digits [20]byte
	for j := 0; j < min(spillWindow, slots); j++ {
		i := (start + j) % slots
		key := table + string(strconv.AppendInt(digits[:0], int64(i), 10))
		value, cas, gerr := s.sd.Get(key)
		if errors.Is(gerr, ErrNotFound) {
			if !ok {
				free, ok = spillSlot{key: key}, true
			}
			return spillSlot{}, free, false, ok, nil // the owner is not past a slot never written
		}
		if gerr != nil {
			return spillSlot{}, spillSlot{}, false, false, errs.Wrap("read bucket slot", gerr)
		}
		v, valid := splitSlot(value, len(op.Limits))
		if valid && string(v.owner) == op.Key {
			return spillSlot{key: key, cas: cas, value: append([]byte(nil), value...)}, spillSlot{}, true, false, nil
		}
		if !ok && valid && s.whole(v, op.Limits, now) {
			free, ok = spillSlot{key: key, cas: cas, value: append([]byte(nil), value...)}, true
		}
	}
	return spillSlot{}, free, false, ok, nil
}

// spillResult is what admitSpill did: an opResult, or spillRetry when the
// bucket appeared under its own key meanwhile (the caller reads it again).
type spillResult uint8

const (
	spillDone spillResult = iota
	spillRetry
)

// admitSpill admits op on its bucket in its map's reusable slots, placing
// the bucket when it has none; full names the maps at their ceiling. home
// is the key the bucket would have had below the ceiling: should another
// worker create it while this one places the bucket, the placement is
// given up and the caller admits on it (spillRetry).
func (s *Store) admitSpill(op *limit.Op, home string, full family, now int64, out *limit.Outcome) (opResult, int, spillResult, error) {
	n := len(op.Limits)
	if n == 0 || n > bucket.MaxLimits || s.maxBuckets <= 0 {
		return opSkipped, 0, spillDone, nil
	}
	table := spillTable(op.Key)
	states := s.states[:n]
	owner := []byte(op.Key)
	holds := uint32(0)
	if op.Kind != limit.KindRequests {
		holds = 1 // a token or concurrency unit is a hold until it ends
	}
	for attempt := 0; attempt < admitAttempts; attempt++ {
		found, free, isFound, ok, err := s.findSpill(table, op, now)
		if err != nil {
			return opFailed, 0, spillDone, err
		}
		slot := found
		var opens uint32
		if isFound {
			v, _ := splitSlot(slot.value, n)
			opens = v.opens
			if err := bucket.Decode(v.states, states); err != nil {
				return opFailed, 0, spillDone, errs.Wrap("decode "+op.Dimension.String()+" bucket slot", err)
			}
		} else {
			locked, err := s.lockSpill(table, now)
			if err != nil {
				return opFailed, 0, spillDone, err
			}
			ok = false // only a scan under the lock may place
			if locked {
				found, free, isFound, ok, err = s.findSpill(table, op, now)
				if err == nil && !isFound && s.madeAtHome(home) {
					s.unlockSpill(table)
					return 0, 0, spillRetry, nil
				}
			}
			if err != nil || isFound || !ok {
				if locked {
					s.unlockSpill(table)
				}
				if err != nil {
					return opFailed, 0, spillDone, err
				}
				if isFound {
					continue // placed by another worker since the first scan
				}
				// Every slot the bucket may use holds a bucket that is not
				// whole, or the lock stayed another's (a VM that died
				// holding it: it expires within spillLease).
				if s.refuseFull {
					return opFailed, 0, spillDone, errs.Wrap("bucket map of "+op.Dimension.String()+" is full", limit.ErrBucketMapFull)
				}
				out.Skipped = appendFamilies(out.Skipped, full)
				return opSkipped, 0, spillDone, nil
			}
			slot = free
			for i := range states {
				states[i] = bucket.Fresh(op.Limits[i], now)
			}
			if slot.value == nil {
				if slot.cas, err = s.foreignCas(); err != nil {
					s.unlockSpill(table)
					return opFailed, 0, spillDone, err
				}
			}
		}
		if at := bucket.Take(states, op.Limits, units(op), now); at >= 0 {
			if !isFound {
				s.unlockSpill(table)
			}
			s.recordRefusedLevels(op, now, out)
			return opRefused, at, spillDone, nil
		}
		s.buf = appendTrailer(bucket.AppendEncoded(s.buf[:0], states), opens+holds, owner)
		err = s.sd.Set(slot.key, s.buf, slot.cas)
		if !isFound {
			if err == nil && s.madeAtHome(home) {
				// Another worker made the bucket under its own key while
				// this one placed it: the placement gives its take back
				// (the slot's bucket is whole again, free for another) and
				// the caller admits at home.
				kind := changeGive
				if holds == 0 {
					kind = changeReturn
				}
				s.change(slot.key, op.Limits, layout{}, kind, units(op), 0, 0, now, nil)
				s.unlockSpill(table)
				return 0, 0, spillRetry, nil
			}
			s.unlockSpill(table)
		}
		if err == nil {
			s.taken = append(s.taken, taken{op: op, levelsAt: s.recordLevels(op, states, now, out)})
			s.slotTakes = append(s.slotTakes, slotTake{at: len(s.taken) - 1, key: slot.key})
			return opAdmitted, 0, spillDone, nil
		}
		if !errors.Is(err, ErrCasMismatch) {
			return opFailed, 0, spillDone, errs.Wrap("write "+op.Dimension.String()+" bucket slot", err)
		}
	}
	return opFailed, 0, spillDone, errs.Wrap("admit "+op.Dimension.String()+" in a bucket slot", ErrContention)
}

// madeAtHome reports whether a bucket exists under home, the key it has
// below the ceiling (a read that fails says no: the placement stands).
func (s *Store) madeAtHome(home string) bool {
	_, _, err := s.sd.Get(home)
	return err == nil
}

// lockSpill takes table's placement lock, trying endAttempts times while
// another worker holds it (its hold is a scan and a write, a few host
// calls long); false when it never came free.
func (s *Store) lockSpill(table string, now int64) (bool, error) {
	key := table + "lock"
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(now+spillLease))
	for attempt := 0; attempt < endAttempts; attempt++ {
		value, cas, err := s.sd.Get(key)
		switch {
		case errors.Is(err, ErrNotFound):
			if cas, err = s.foreignCas(); err != nil {
				return false, err
			}
		case err != nil:
			return false, errs.Wrap("read bucket slot lock", err)
		case len(value) == 8 && int64(binary.LittleEndian.Uint64(value)) > now:
			continue // held
		}
		err = s.sd.Set(key, b[:], cas)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, ErrCasMismatch) {
			return false, errs.Wrap("take bucket slot lock", err)
		}
	}
	return false, nil
}

// unlockSpill gives table's lock back: an expiry of zero is free.
func (s *Store) unlockSpill(table string) {
	var b [8]byte
	_ = s.sd.Set(table+"lock", b[:], 0)
}
