package server

import (
	"context"
	"errors"
	"math"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
)

// Levels reads the levels of token buckets, refilled to Redis's clock, and
// changes nothing: the filter's tick reads the shared buckets no tenant owns
// (global, per model) for its rate_limit_tokens_remaining gauge, so every
// replica reports the level they all admit on. A bucket no admission made
// yet is full. One TIME and one GET per bucket, pipelined: the caller sends
// a handful of buckets every few seconds, never per request.
func (s *Buckets) Levels(ctx context.Context, ops []limit.Op) ([]limit.OpLevel, error) {
	pipe := s.c.Pipeline()
	now := pipe.Time(ctx)
	gets := make([]*redis.StringCmd, len(ops))
	for i := range ops {
		gets[i] = pipe.Get(ctx, bucketKey(ops[i].Key))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	t, err := now.Result()
	if err != nil {
		return nil, err
	}
	nowUs := t.UnixMicro()
	var out []limit.OpLevel
	for i := range ops {
		op := &ops[i]
		stored := map[limit.Period]StoredLimit{}
		if v, err := gets[i].Result(); err == nil {
			if stored, err = DecodeBucket(v); err != nil {
				return nil, err
			}
		} else if !errors.Is(err, redis.Nil) {
			return nil, err
		}
		for _, l := range op.Limits {
			level := float64(l.Capacity)
			if st, ok := stored[l.Budget]; ok {
				level = math.Min(level, st.Level+l.RefillPerSec*float64(max(nowUs-st.LastUs, 0))/1e6)
			}
			out = append(out, limit.OpLevel{Kind: op.Kind, Dimension: op.Dimension, Budget: l.Budget,
				Level: limit.Level{Capacity: l.Capacity, Remaining: int64(math.Floor(level))}})
		}
	}
	return out, nil
}

// levels answers POST /v1/levels: the token ops of an admission's body, read
// and not charged.
func (s *Server) levels(ctx context.Context, w http.ResponseWriter, body []byte) string {
	req, err := wire.DecodeAdmitRequest(body)
	if err != nil {
		return badRequest(w, err.Error())
	}
	if err := req.Validate(); err != nil {
		return badRequest(w, "invalid plan: "+err.Error())
	}
	plan := req.Plan()
	if len(plan.Requests) > 0 || plan.Spend.Any() {
		return badRequest(w, "levels reads token buckets only")
	}
	for i := range plan.Tokens {
		if plan.Tokens[i].Kind != limit.KindTokens {
			return badRequest(w, "levels reads token buckets only")
		}
	}
	lv, err := s.store.Levels(ctx, plan.Tokens)
	if err != nil {
		return s.redisFailed(w, "levels", err)
	}
	writeAdmit(w, wire.FromOutcome(limit.Outcome{Result: limit.ResultAdmitted, Levels: lv}))
	return "read"
}
