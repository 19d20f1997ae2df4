package server

import (
	"context"
	"errors"
	"time"

	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

// ledgerLost marks the ledger down after a failed insert: the next records
// go straight to the outbox, and the drain probes the ledger. The first
// failure of an outage is logged; the others are counted only.
func (s *Server) ledgerLost(err error) {
	if !s.ledgerDown.Swap(true) {
		s.log.Error("spend ledger unavailable: settlement records are kept in the Redis outbox until it answers again", "error", err)
	}
}

// drainBatch is how many outbox records one ledger round trip inserts.
const drainBatch = 500

// RunOutbox runs DrainOutbox every interval (1s when ≤ 0) until ctx ends.
// Every replica may run it: one drain per team at a time, fleet-wide, and
// the ledger's insert is idempotent by hold id, so a record is stored once
// whichever replica moves it.
func (s *Server) RunOutbox(ctx context.Context, interval time.Duration) {
	if s.store == nil || s.store.spend == nil || s.ledger == nil {
		return
	}
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, _, err := s.DrainOutbox(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("spend outbox drain stopped; the next one goes on", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DrainOutbox moves every team's outbox into the ledger, oldest first,
// when the ledger answers (it is pinged first after a failure), and sets
// the outbox gauge to what is left. moved is the records stored or found
// already stored; left what still waits.
func (s *Server) DrainOutbox(ctx context.Context) (moved int, left int64, err error) {
	cache := s.store.spend
	if cache == nil || s.ledger == nil {
		return 0, 0, nil
	}
	teams, err := cache.OutboxTeams(ctx)
	if err != nil {
		return 0, 0, err
	}
	s.outboxSeen.Store(len(teams) > 0 || s.ledgerDown.Load())
	up := true
	if s.ledgerDown.Load() {
		pctx, cancel := context.WithTimeout(ctx, s.ledgerTimeout)
		if up = s.ledger.Ping(pctx) == nil; up {
			s.ledgerDown.Store(false)
			s.log.Info("spend ledger answers again: draining the outbox", "teams", len(teams))
		}
		cancel()
	}
	var first error
	for _, team := range teams {
		if ctx.Err() != nil {
			return moved, left, ctx.Err()
		}
		if up && !s.ledgerDown.Load() {
			n, l, err := cache.Drain(ctx, team, drainBatch, s.insertDrained, func(id string, err error) {
				s.m.spendErrors.WithLabelValues("outbox").Inc()
				s.log.Error("spend outbox: an unreadable record was dropped", "team", team, "hold", id, "error", err)
			})
			moved += n
			s.m.outboxDrained.Add(float64(n))
			if err == nil {
				left += l
				continue
			}
			if !errors.Is(err, spendcache.ErrOutboxBusy) {
				first = errors.Join(first, err)
			}
		}
		n, err := cache.OutboxLen(ctx, team)
		if err != nil {
			first = errors.Join(first, err)
			continue
		}
		left += n
	}
	s.m.outbox.Set(float64(left))
	return moved, left, first
}

// insertDrained stores a drained batch. A failure marks the ledger down, so
// settlements go on to the outbox and the drain waits for the ledger's
// answer again.
func (s *Server) insertDrained(ctx context.Context, recs []ledger.Record) error {
	ictx, cancel := context.WithTimeout(ctx, 10*s.ledgerTimeout)
	defer cancel()
	_, err := s.ledger.InsertRecords(ictx, recs)
	if errors.Is(err, ledger.ErrInvalidRecord) {
		// Not a record a settlement kept (those are checked first): store
		// the valid ones and drop the rest, loudly.
		for _, r := range recs {
			if _, err := s.ledger.InsertRecord(ictx, r); errors.Is(err, ledger.ErrInvalidRecord) {
				s.m.spendErrors.WithLabelValues("outbox").Inc()
				s.log.Error("spend outbox: an invalid record was dropped", "team", r.Team, "hold", r.ID, "error", err)
			} else if err != nil {
				return s.drainFailed(err)
			}
		}
		return nil
	}
	if err != nil {
		return s.drainFailed(err)
	}
	return nil
}

func (s *Server) drainFailed(err error) error {
	s.m.dbErrors.WithLabelValues("outbox_drain").Inc()
	s.ledgerLost(err)
	return errors.Join(errLedgerDown, err)
}
