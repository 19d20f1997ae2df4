//go:build !wasip1

package ledger

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

func TestAPolicyIsSetChangedListedAndRemoved(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	keyDay := Policy{Scope: spend.APIKey, ID: "k1", Period: calendar.Day, Limit: 5_000_000_000}
	teamMonth := Policy{Scope: spend.Team, ID: "acme", Period: calendar.Month, Limit: 200_000_000_000}
	require.NoError(t, s.PutPolicy(ctx, "acme", keyDay))
	require.NoError(t, s.PutPolicy(ctx, "acme", teamMonth))
	keyDay.Limit = 7_000_000_000
	require.NoError(t, s.PutPolicy(ctx, "acme", keyDay))

	got, err := s.Policies(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []Policy{keyDay, teamMonth}, got, "ordered by scope: api_key before team")
	none, err := s.Policies(ctx, "other")
	require.NoError(t, err)
	require.Empty(t, none)

	deleted, err := s.DeletePolicy(ctx, "acme", spend.APIKey, "k1", calendar.Day)
	require.NoError(t, err)
	require.True(t, deleted)
	deleted, err = s.DeletePolicy(ctx, "acme", spend.APIKey, "k1", calendar.Day)
	require.NoError(t, err)
	require.False(t, deleted, "a second delete finds nothing")
	got, err = s.Policies(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []Policy{teamMonth}, got)
}

func TestAPolicyWithoutASlotIsRefused(t *testing.T) {
	s, _ := newStore(t)
	for name, p := range map[string]Policy{
		"team day":        {Scope: spend.Team, ID: "acme", Period: calendar.Day, Limit: 1},
		"team of another": {Scope: spend.Team, ID: "other", Period: calendar.Month, Limit: 1},
		"empty id":        {Scope: spend.User, Period: calendar.Day, Limit: 1},
		"negative":        {Scope: spend.User, ID: "u", Period: calendar.Day, Limit: -1},
		"no scope":        {ID: "u", Period: calendar.Day, Limit: 1},
	} {
		require.ErrorIs(t, s.PutPolicy(context.Background(), "acme", p), ErrInvalidPolicy, name)
	}
}
