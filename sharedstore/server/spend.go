package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/wire"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

// earlySpend reads an admission reply the spend preflight may have ended
// early: handled with a verdict when it refused, ErrMiss when a key was
// absent (nothing was written either way).
func earlySpend(v any) (vd spendcache.Verdict, handled bool, err error) {
	a, ok := v.([]any)
	if !ok {
		return vd, false, errs.New("admit script: malformed reply")
	}
	return spendcache.Reply(a)
}

// spendRefused is the outcome of a call a spend limit or an exhausted
// balance refused: nothing was taken from any bucket.
func spendRefused(vd spendcache.Verdict) limit.Outcome {
	return limit.Outcome{Result: limit.ResultSpendRefused, Spend: vd.Used, SpendRefusal: vd.Refused}
}

// spendError marks a failed script or load of an admission with a spend
// part as a spend lookup failure: the filter must answer 503
// spend_store_unavailable, never admit unchecked.
func spendError(checked bool, err error) error {
	if err == nil || !checked || errors.Is(err, limit.ErrSpendUnavailable) {
		return err
	}
	return errors.Join(limit.ErrSpendUnavailable, err)
}

// scriptError is a failed admission script's error: a spend counter the
// preflight found corrupt is a spend lookup failure (spendError); anything
// else (Redis unreachable, timed out) is the store's own failure, answered
// 503 like any admission, so the filter's fallback policy decides.
func scriptError(checked bool, err error) error {
	if checked && strings.Contains(err.Error(), "spend cache key") {
		return spendError(true, err)
	}
	return err
}

// preflightCluster runs the spend preflight alone in the team's slot (all
// of a team's keys share it), loading the team on a miss.
func (s *Buckets) preflightCluster(ctx context.Context, sp *limit.Spend, hold string) (spendcache.Verdict, error) {
	keys := spendcache.Keys(make([]string, 0, spendcache.NumKeys), sp)
	args := s.spend.Args(append(make([]any, 0, 2+spendcache.NumArgs), "", ""), sp, 1, nil, hold)
	for attempt := 0; ; attempt++ {
		start := time.Now()
		v, err := s.spendOnly.run(ctx, s.c, keys, args)
		if s.onScript != nil {
			s.onScript(s.spendOnly.name, start)
		}
		if err != nil {
			return spendcache.Verdict{}, scriptError(true, err)
		}
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			return spendcache.Verdict{}, spendError(true, errs.New("spend preflight: malformed reply"))
		}
		vd, handled, err := spendcache.Reply(a)
		switch {
		case errors.Is(err, spendcache.ErrMiss) && attempt == 0:
			f, err := s.spend.Load(ctx, sp)
			if err != nil {
				return spendcache.Verdict{}, spendError(true, err)
			}
			args = s.spend.Args(args[:2], sp, 1, f, hold)
			continue
		case err != nil:
			return spendcache.Verdict{}, spendError(true, err)
		case handled:
			return vd, nil
		}
		if len(a) != 2 {
			return spendcache.Verdict{}, spendError(true, errs.New("spend preflight: malformed reply"))
		}
		vd, err = spendcache.ParseOut(a[1])
		return vd, spendError(true, err)
	}
}

// verdictOf is the answer's spend part: the usage of every slot the
// filter limits (the only ones it may read), and the refusal, which may
// name a slot only the team's stored policies limit, or the balance.
func verdictOf(vd *spendcache.Verdict, sp *limit.Spend) *wire.SpendVerdict {
	v := &wire.SpendVerdict{Checked: true}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if sp.Policy.Limits[s].Set {
			v.Usage = append(v.Usage, wire.SpendUsage{Slot: s.String(), UsedNanoUSD: int64(max(vd.Used[s], 0))})
		}
	}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if l := vd.Limits[s]; l.Set {
			v.Left = append(v.Left, wire.SpendLeft{Slot: s.String(), LeftNanoUSD: int64(max(l.Amount-vd.Used[s], 0))})
		}
	}
	if vd.HasBalance {
		v.Left = append(v.Left, wire.SpendLeft{Slot: wire.SlotBalance, LeftNanoUSD: int64(max(vd.TeamBalance, 0))})
	}
	if ex := vd.Refused; ex != nil {
		if vd.Balance {
			v.Refusal = &wire.SpendExceeded{Slot: wire.SlotBalance, UsedNanoUSD: int64(max(ex.Used, 0))}
		} else {
			v.Refusal = &wire.SpendExceeded{Slot: ex.Slot.String(), LimitNanoUSD: int64(ex.Limit), UsedNanoUSD: int64(max(ex.Used, 0))}
		}
	}
	return v
}

// errLedgerDown is the settlement's answer while neither the ledger nor
// the outbox can take records.
var errLedgerDown = errors.New("spend ledger unavailable")

// recordSpend stores a settlement's inference record once and, only when
// it is new, runs the postflight. The record is the durable truth: a
// failed postflight is logged and counted but not an error, since a retry
// would find the record stored and add nothing; the worker's refresh
// repairs the counters. A record the ledger refuses as invalid is a
// permanent error (400).
//
// When the ledger cannot take the record (down, or slower than
// LedgerTimeout), it is kept in the team's Redis outbox and the
// settlement is taken all the same: its postflight runs at once, so limits
// keep holding through the outage, and the drain (RunOutbox) moves it into
// the ledger later. After one failure the records go to the outbox without
// trying the ledger, until the drain finds the ledger answering again, so
// an outage does not make every settlement wait for a timeout. Only when
// the outbox cannot take it either (Redis failing too) is the answer
// errLedgerDown (503, retried by the filter).
func (s *Server) recordSpend(ctx context.Context, hold string, r *wire.SpendRecord) error {
	day, month, ok := calendar.Both(r.Start)
	if !ok || int64(day.Key) != r.Day || int64(month.Key) != r.Month {
		return fmt.Errorf("%w: day and month are not the periods of start_unix_nano", ledger.ErrInvalidRecord)
	}
	rec := ledger.Record{ID: hold, Team: spendcache.TeamOf(r.Team), APIKey: r.APIKey, User: r.User, Model: r.Model,
		Usage: r.Usage.Kinds(), CallStart: time.Unix(0, r.Start).UTC(), Estimate: money.Amount(r.CostNanoUSD)}
	cache := s.store.spend
	keep := cache != nil && s.ledgerDown.Load()
	var inserted bool
	var err error
	if !keep {
		ictx, cancel := context.WithTimeout(ctx, s.ledgerTimeout)
		inserted, err = s.ledger.InsertRecord(ictx, rec)
		cancel()
		if errors.Is(err, ledger.ErrInvalidRecord) {
			return err
		}
		if err != nil {
			s.m.dbErrors.WithLabelValues("insert_record").Inc()
			if cache == nil {
				s.log.Error("spend record not stored", "error", err)
				return errLedgerDown
			}
			s.ledgerLost(err)
			keep = true
		}
	} else if err := rec.Check(); err != nil {
		return err
	}
	if keep {
		s.outboxSeen.Store(true)
		if inserted, err = cache.Keep(ctx, rec); err != nil {
			s.m.spendErrors.WithLabelValues("outbox").Inc()
			s.log.Error("spend record not stored: the ledger and the outbox both failed", "error", err)
			return errLedgerDown
		}
	} else if inserted && cache != nil && s.outboxSeen.Load() {
		// A retry of a settlement the outbox took (its answer was lost):
		// the drain will find the record stored, and its estimate is
		// counted already.
		if kept, err := cache.InOutbox(ctx, rec.Team, rec.ID); err == nil && kept {
			return nil
		}
	}
	if cache == nil {
		return nil
	}
	if !inserted {
		// a retry: the first delivery counted it; its reservation may
		// still stand (that delivery's answer was lost before it ended it)
		s.unhold(ctx, r.Team, hold)
		return nil
	}
	start := time.Now()
	_, err = cache.PostflightHold(ctx, spendcache.Call{Team: r.Team, APIKey: r.APIKey, User: r.User,
		Day: day, Month: month, Estimate: rec.Estimate}, hold)
	s.m.script("postflight", start)
	if err != nil {
		s.m.spendErrors.WithLabelValues("postflight").Inc()
		s.log.Error("spend postflight failed; the worker's refresh repairs the counters", "error", err)
	}
	return nil
}
