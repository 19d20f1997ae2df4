//go:build !wasip1

package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// Policy is one spend limit of a team: a scope (the team itself, one of its
// API keys or one of its users), the id within it, a calendar period and
// the limit in nano-USD. A team's own limit is monthly only, and its id is
// the team.
type Policy struct {
	Scope  spend.Scope
	ID     string
	Period calendar.Period
	Limit  money.Amount
}

// Slot is the spend slot the policy limits.
func (p Policy) Slot() (spend.Slot, bool) {
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if s.Scope() == p.Scope && s.Period() == p.Period {
			return s, true
		}
	}
	return 0, false
}

// ErrInvalidPolicy wraps every reason PutPolicy refuses a policy.
var ErrInvalidPolicy = errors.New("ledger: invalid spend policy")

func (p Policy) validate(team string) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrInvalidPolicy, why) }
	switch {
	case team == "":
		return bad("empty team")
	case p.ID == "":
		return bad("empty id")
	case p.Limit < 0:
		return bad("negative limit")
	case p.Scope == spend.Team && p.ID != team:
		return bad("a team limit's id is the team")
	}
	if _, ok := p.Slot(); !ok {
		return bad(fmt.Sprintf("no %s limit for scope %s", p.Period, p.Scope))
	}
	return nil
}

// PutPolicy sets (or changes) one limit of a team. Changing an amount keeps
// the spend counted so far: aggregates are per scope and period, not per
// policy.
func (s *Ledger) PutPolicy(ctx context.Context, team string, p Policy) error {
	if err := p.validate(team); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO spend_policies (team, scope, scope_id, period, limit_nano) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (team, scope, scope_id, period) DO UPDATE SET limit_nano = EXCLUDED.limit_nano, updated_at = now()`,
		team, p.Scope.String(), p.ID, p.Period.String(), int64(p.Limit))
	if err != nil {
		return fmt.Errorf("ledger: put spend policy: %w", err)
	}
	return nil
}

// DeletePolicy removes one limit; deleted is false when there was none.
func (s *Ledger) DeletePolicy(ctx context.Context, team string, scope spend.Scope, id string, period calendar.Period) (deleted bool, err error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM spend_policies WHERE team = $1 AND scope = $2 AND scope_id = $3 AND period = $4`,
		team, scope.String(), id, period.String())
	if err != nil {
		return false, fmt.Errorf("ledger: delete spend policy: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// Policies is every limit of a team, ordered by scope, id and period; none
// is an empty list and no error (the team is not limited).
func (s *Ledger) Policies(ctx context.Context, team string) ([]Policy, error) {
	return readPolicies(ctx, s.pool, team)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func readPolicies(ctx context.Context, q querier, team string) ([]Policy, error) {
	rows, err := q.Query(ctx, `SELECT scope, scope_id, period, limit_nano FROM spend_policies
		WHERE team = $1 ORDER BY scope, scope_id, period`, team)
	if err != nil {
		return nil, fmt.Errorf("ledger: read spend policies: %w", err)
	}
	defer rows.Close()
	var out []Policy
	for rows.Next() {
		var scope, id, period string
		var limit int64
		if err := rows.Scan(&scope, &id, &period, &limit); err != nil {
			return nil, fmt.Errorf("ledger: read spend policies: %w", err)
		}
		out = append(out, Policy{Scope: scopeOf(scope), ID: id, Period: periodOf(period), Limit: money.Amount(limit)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: read spend policies: %w", err)
	}
	return out, nil
}
