//go:build !wasip1

package admin

import (
	"context"
	"errors"
	"fmt"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"net/http"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
)

// balanceJSON is a team's balance in answers. CachedUSD is what the spend
// cache holds now (null when not cached): the ledger's balance less the
// estimates of calls not yet charged.
type balanceJSON struct {
	Team       string  `json:"team"`
	BalanceUSD string  `json:"balance_usd"`
	CachedUSD  *string `json:"cached_usd"`
}

type balanceSet struct {
	Team       string `json:"team"`
	BalanceUSD string `json:"balance_usd"`
}

type topUpJSON struct {
	Team string `json:"team"`
	ID   string `json:"id"`
	// Applied is false for a top-up id seen before: it added nothing.
	Applied    bool   `json:"applied"`
	BalanceUSD string `json:"balance_usd"`
}

func teamOf(r *http.Request) (string, error) {
	team := r.PathValue("team")
	return team, checkTeam(team)
}

func (s *Server) putBalance(ctx context.Context, r *http.Request, body []byte) (int, any) {
	team, err := teamOf(r)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	bal, err := decodeBalance(body)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	if err := s.ledger.SetBalance(ctx, team, bal); err != nil {
		return s.ledgerFailed("set balance", err)
	}
	s.log.Info("admin: balance set", "team", team, "balance_usd", bal.String())
	return s.committed(ctx, team, balanceSet{Team: team, BalanceUSD: bal.String()})
}

func (s *Server) topUp(ctx context.Context, r *http.Request, body []byte) (int, any) {
	team, err := teamOf(r)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	amt, id, err := decodeTopUp(body)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	applied, bal, err := s.ledger.TopUp(ctx, team, id, amt)
	switch {
	case errors.Is(err, ledger.ErrNoBalance):
		return fail(http.StatusConflict, fmt.Sprintf("team %q has no balance set, so it is not limited by one; set it first with PUT /v1/admin/teams/{team}/balance", team))
	case errors.Is(err, ledger.ErrTopUpIDReused):
		return fail(http.StatusConflict, fmt.Sprintf("top-up id %q was used for a top-up of another team; nothing was added", id))
	case err != nil:
		return s.ledgerFailed("top up balance", err)
	}
	if applied {
		s.log.Info("admin: balance topped up", "team", team, "top_up_id", id, "amount_usd", amt.String(), "balance_usd", bal.String())
	}
	// A retried top-up invalidates again too: the first attempt's
	// invalidation may be the step that failed.
	return s.committed(ctx, team, topUpJSON{Team: team, ID: id, Applied: applied, BalanceUSD: bal.String()})
}

func (s *Server) getBalance(ctx context.Context, r *http.Request, _ []byte) (int, any) {
	team, err := teamOf(r)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	bal, ok, err := s.ledger.Balance(ctx, team)
	if err != nil {
		return s.ledgerFailed("read balance", err)
	}
	if !ok {
		return fail(http.StatusNotFound, fmt.Sprintf("team %q has no balance set: it is not limited by one", team))
	}
	out := balanceJSON{Team: team, BalanceUSD: bal.String()}
	cached, err := s.redis.Get(ctx, spendcache.BalanceKey(team)).Result()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		s.log.Warn("admin: cached balance unreadable", "team", team, "error", err)
	default:
		out.CachedUSD = nanoText(cached)
	}
	return http.StatusOK, out
}

// nanoText is a cached decimal integer of nano-USD as decimal USD; a value
// the cache should never hold is shown as it is, marked.
func nanoText(raw string) *string {
	v, err := strconv.ParseInt(raw, 10, 64)
	s := money.Amount(v).String()
	if err != nil {
		s = "invalid: " + strconv.Quote(raw)
	}
	return &s
}
