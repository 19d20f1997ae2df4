package local

import (
	"errors"
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// family is a bucket map whose size max_buckets caps. Each dimension and
// parameter version has its own maps (the key prefix up to the version), so
// a reload that changes a budget starts it with empty maps.
type family uint8

const (
	familyTokenMinute family = 1 << iota // "token_budget"
	familyTokenDay                       // "token_budget_day"
	familyRequests                       // "requests": request-count and concurrency
)

var families = [...]struct {
	f    family
	name string
}{
	{familyTokenMinute, "token_budget"},
	{familyTokenDay, "token_budget_day"},
	{familyRequests, "requests"},
}

// opFamilies is the maps a new bucket of op would join. A token op with
// both periods lives in the minute and the day map.
func opFamilies(op *limit.Op) family {
	if op.Kind != limit.KindTokens {
		return familyRequests
	}
	var f family
	for _, l := range op.Limits {
		switch l.Budget {
		case limit.PeriodMinute:
			f |= familyTokenMinute
		case limit.PeriodDay:
			f |= familyTokenDay
		}
	}
	return f
}

// appendFamilies adds the names of f to skipped, once each.
func appendFamilies(skipped []string, f family) []string {
	for _, fam := range families {
		if f&fam.f == 0 {
			continue
		}
		dup := false
		for _, s := range skipped {
			dup = dup || s == fam.name
		}
		if !dup {
			skipped = append(skipped, fam.name)
		}
	}
	return skipped
}

// counterKey names the size counter of one map: the family and the op key
// up to its version ("tb|t|api_key|v1").
func counterKey(name, opKey string) string {
	bars := 0
	end := len(opKey)
	for i := 0; i < len(opKey); i++ {
		if opKey[i] == '|' {
			bars++
			if bars == 4 {
				end = i
				break
			}
		}
	}
	return "tb|n|" + name + "|" + opKey[:end]
}

// fullFamilies is the maps of op already at max_buckets: a quick read so a
// bucket that cannot be created fails open before it is even computed.
func (s *Store) fullFamilies(op *limit.Op) family {
	if s.maxBuckets <= 0 {
		return 0
	}
	var full family
	for _, fam := range families {
		if opFamilies(op)&fam.f == 0 {
			continue
		}
		count, _, err := s.readCounter(counterKey(fam.name, op.Key))
		if err == nil {
			s.reportFill(fam.name, count)
		}
		if err == nil && count >= int64(s.maxBuckets) {
			full |= fam.f
		}
	}
	return full
}

// claimSlots counts a new bucket of op in each of its maps, or claims none
// and returns the maps that are full. The counters are CAS'd, so workers
// racing for the last slot cannot overshoot the ceiling.
func (s *Store) claimSlots(op *limit.Op) (full family, err error) {
	if s.maxBuckets <= 0 {
		return 0, nil
	}
	var claimed family
	for _, fam := range families {
		if opFamilies(op)&fam.f == 0 {
			continue
		}
		ok, count, err := s.bumpCounter(counterKey(fam.name, op.Key), 1)
		if ok {
			s.reportFill(fam.name, count)
		}
		if err != nil || !ok {
			s.unclaimSlots(op, claimed)
			if err != nil {
				return 0, err
			}
			return fam.f, nil
		}
		claimed |= fam.f
	}
	return 0, nil
}

// unclaimSlots gives back slots claimed for a bucket that was not created
// (another worker created it first, or the write failed).
func (s *Store) unclaimSlots(op *limit.Op, claimed family) {
	for _, fam := range families {
		if claimed&fam.f != 0 {
			_, _, _ = s.bumpCounter(counterKey(fam.name, op.Key), -1)
		}
	}
}

// readCounter reads a map's size; a missing counter is an empty map.
func (s *Store) readCounter(key string) (count int64, cas uint32, err error) {
	value, cas, err := s.sd.Get(key)
	if errors.Is(err, ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, errs.Wrap("read bucket count", err)
	}
	count, err = strconv.ParseInt(string(value), 10, 64)
	if err != nil {
		return 0, 0, errs.Wrap("decode bucket count", err)
	}
	return count, cas, nil
}

// reportFill tells onFill a map's entries.
func (s *Store) reportFill(family string, entries int64) {
	if s.onFill != nil {
		s.onFill(family, entries, int64(s.maxBuckets))
	}
}

// bumpCounter adds delta to a map's size in a CAS loop and returns the size
// it wrote; an increment at the ceiling is refused (false) and a decrement
// never goes below zero.
func (s *Store) bumpCounter(key string, delta int64) (bool, int64, error) {
	for attempt := 0; attempt < endAttempts; attempt++ {
		count, cas, err := s.readCounter(key)
		if err != nil {
			return false, 0, err
		}
		if delta > 0 && count >= int64(s.maxBuckets) {
			return false, count, nil
		}
		next := max(count+delta, 0)
		if cas == 0 {
			if cas, err = s.foreignCas(); err != nil {
				return false, 0, err
			}
		}
		var digits [20]byte
		err = s.sd.Set(key, strconv.AppendInt(digits[:0], next, 10), cas)
		if err == nil {
			return true, next, nil
		}
		if !errors.Is(err, ErrCasMismatch) {
			return false, 0, errs.Wrap("write bucket count", err)
		}
	}
	return false, 0, errs.Wrap("count buckets", ErrContention)
}

// foreignCas returns a cas that belongs to the sentinel key. Shared data
// does not check the cas of a missing key, and each cas value is handed out
// once (until its 32-bit counter wraps), so Set(newKey, v, foreignCas)
// creates newKey only if no other worker created it first: the creation race
// that cas 0 would lose silently becomes a CasMismatch and a retry.
func (s *Store) foreignCas() (uint32, error) {
	if s.sentinelCas != 0 {
		return s.sentinelCas, nil
	}
	_, cas, err := s.sd.Get(sentinelKey)
	if errors.Is(err, ErrNotFound) {
		if err = s.sd.Set(sentinelKey, []byte{1}, 0); err != nil {
			return 0, errs.Wrap("create cas sentinel", err)
		}
		_, cas, err = s.sd.Get(sentinelKey)
	}
	if err != nil {
		return 0, errs.Wrap("read cas sentinel", err)
	}
	if cas == 0 {
		return 0, errs.New("read cas sentinel: host answered cas 0")
	}
	s.sentinelCas = cas
	return cas, nil
}
