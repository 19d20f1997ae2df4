//go:build !wasip1

package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
)

// limitJSON is one spend limit in answers.
type limitJSON struct {
	Scope    string `json:"scope"`
	ID       string `json:"id"`
	Period   string `json:"period"`
	LimitUSD string `json:"limit_usd"`
}

type limitDeleted struct {
	Deleted bool   `json:"deleted"`
	Scope   string `json:"scope"`
	ID      string `json:"id"`
	Period  string `json:"period"`
}

type limitsJSON struct {
	Team   string      `json:"team"`
	Limits []limitJSON `json:"limits"`
}

func limitOf(p ledger.Policy) limitJSON {
	return limitJSON{Scope: p.Scope.String(), ID: p.ID, Period: p.Period.String(), LimitUSD: p.Limit.String()}
}

func parseScope(s string) (spend.Scope, bool) {
	for _, sc := range []spend.Scope{spend.Team, spend.APIKey, spend.User} {
		if sc.String() == s {
			return sc, true
		}
	}
	return 0, false
}

func parsePeriod(s string) (calendar.Period, bool) {
	for _, p := range []calendar.Period{calendar.Day, calendar.Month} {
		if p.String() == s {
			return p, true
		}
	}
	return 0, false
}

// limitPath reads {team}/spend-limits/{scope}/{id}/{period}: scope team,
// api_key or user; period day or month; a team's own limit is monthly and
// its id is the team.
func limitPath(r *http.Request) (team string, p ledger.Policy, err error) {
	team = r.PathValue("team")
	if err := checkTeam(team); err != nil {
		return "", p, err
	}
	var ok bool
	if p.Scope, ok = parseScope(r.PathValue("scope")); !ok {
		return "", p, fmt.Errorf("scope %q: must be team, api_key or user", r.PathValue("scope"))
	}
	if p.Period, ok = parsePeriod(r.PathValue("period")); !ok {
		return "", p, fmt.Errorf("period %q: must be day or month", r.PathValue("period"))
	}
	p.ID = r.PathValue("id")
	if err := checkName("id", p.ID); err != nil {
		return "", p, err
	}
	if p.Scope == spend.Team {
		if p.ID != team {
			return "", p, fmt.Errorf("id %q: a team limit's id is the team (%q)", p.ID, team)
		}
		if p.Period != calendar.Month {
			return "", p, errors.New("period day: a team has a monthly limit only")
		}
	}
	return team, p, nil
}

func (s *Server) putLimit(ctx context.Context, r *http.Request, body []byte) (int, any) {
	team, p, err := limitPath(r)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	if p.Limit, err = decodeLimit(body); err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	if err := s.ledger.PutPolicy(ctx, team, p); err != nil {
		if errors.Is(err, ledger.ErrInvalidPolicy) {
			return fail(http.StatusBadRequest, err.Error())
		}
		return s.ledgerFailed("set spend limit", err)
	}
	s.log.Info("admin: spend limit set", "team", team, "scope", p.Scope.String(), "id", p.ID,
		"period", p.Period.String(), "limit_usd", p.Limit.String())
	return s.committed(ctx, team, limitOf(p))
}

func (s *Server) deleteLimit(ctx context.Context, r *http.Request, _ []byte) (int, any) {
	team, p, err := limitPath(r)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	deleted, err := s.ledger.DeletePolicy(ctx, team, p.Scope, p.ID, p.Period)
	if err != nil {
		return s.ledgerFailed("remove spend limit", err)
	}
	if !deleted {
		// Nothing changed, but a cache that still holds the limit (an
		// earlier delete whose invalidation failed) is invalidated too.
		if st, resp := s.committed(ctx, team, nil); st != http.StatusOK {
			return st, resp
		}
		return fail(http.StatusNotFound, fmt.Sprintf("team %q has no %s %s limit for %q", team, p.Scope, p.Period, p.ID))
	}
	s.log.Info("admin: spend limit removed", "team", team, "scope", p.Scope.String(), "id", p.ID, "period", p.Period.String())
	return s.committed(ctx, team, limitDeleted{Deleted: true, Scope: p.Scope.String(), ID: p.ID, Period: p.Period.String()})
}

func (s *Server) listLimits(ctx context.Context, r *http.Request, _ []byte) (int, any) {
	team := r.PathValue("team")
	if err := checkTeam(team); err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	ps, err := s.ledger.Policies(ctx, team)
	if err != nil {
		return s.ledgerFailed("list spend limits", err)
	}
	out := limitsJSON{Team: team, Limits: make([]limitJSON, 0, len(ps))}
	for _, p := range ps {
		out.Limits = append(out.Limits, limitOf(p))
	}
	return http.StatusOK, out
}
