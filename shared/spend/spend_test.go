package spend

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
)

func limit(usd int64) Limit { return Limit{Amount: money.Amount(usd) * money.OneUSD, Set: true} }

func TestCheckPassesOnlyWhenEveryConfiguredLimitHasRoom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limits [NumSlots]Limit
		used   Usage
		ok     bool
		slot   Slot
	}{
		{"no policy is unlimited", [NumSlots]Limit{}, Usage{TeamMonth: money.Max, KeyDay: money.Max}, true, 0},
		{"a limit of 0 blocks", [NumSlots]Limit{KeyDay: {Set: true}}, Usage{}, false, KeyDay},
		{"usage below the limit passes", [NumSlots]Limit{KeyDay: limit(5)}, Usage{KeyDay: 4 * money.OneUSD}, true, 0},
		{"usage equal to the limit refuses", [NumSlots]Limit{KeyDay: limit(5)}, Usage{KeyDay: 5 * money.OneUSD}, false, KeyDay},
		{"a key under its day limit is refused by its spent team month",
			[NumSlots]Limit{KeyDay: limit(10), TeamMonth: limit(200)}, Usage{KeyDay: 5 * money.OneUSD, TeamMonth: 200 * money.OneUSD}, false, TeamMonth},
		{"usage of a slot without a limit is not checked", [NumSlots]Limit{UserDay: limit(1)}, Usage{UserMonth: money.Max}, true, 0},
		{"months are reported before days", [NumSlots]Limit{KeyDay: limit(1), UserMonth: limit(1)}, Usage{KeyDay: money.OneUSD, UserMonth: money.OneUSD}, false, UserMonth},
		{"the caller's key first within a period", [NumSlots]Limit{TeamMonth: {Set: true}, KeyMonth: {Set: true}, UserMonth: {Set: true}}, Usage{}, false, KeyMonth},
		{"user day last", [NumSlots]Limit{UserDay: {Set: true}}, Usage{}, false, UserDay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Limits: tt.limits}
			ex, ok := Check(&p, &tt.used)
			require.Equal(t, tt.ok, ok)
			if !ok {
				require.Equal(t, tt.slot, ex.Slot)
				require.Equal(t, tt.limits[tt.slot].Amount, ex.Limit)
				require.Equal(t, tt.used[tt.slot], ex.Used)
			}
		})
	}
}

func TestSlotsNameTheirScopeAndPeriod(t *testing.T) {
	tests := []struct {
		slot   Slot
		scope  Scope
		period calendar.Period
		label  string
		name   string
	}{
		{TeamMonth, Team, calendar.Month, "Team monthly", "team_month"},
		{KeyDay, APIKey, calendar.Day, "API Key daily", "api_key_day"},
		{KeyMonth, APIKey, calendar.Month, "API Key monthly", "api_key_month"},
		{UserDay, User, calendar.Day, "User daily", "user_day"},
		{UserMonth, User, calendar.Month, "User monthly", "user_month"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.scope, tt.slot.Scope())
			require.Equal(t, tt.period, tt.slot.Period())
			require.Equal(t, tt.label, tt.slot.Label())
			require.Equal(t, tt.name, tt.slot.String())
		})
	}
	for s := Slot(0); s < NumSlots; s++ {
		require.False(t, s.Scope() == Team && s.Period() == calendar.Day, "teams have no daily limit")
	}
	require.Equal(t, "none", NumSlots.String())
	require.Equal(t, Scope(0), NumSlots.Scope())
	require.Equal(t, "", NumSlots.Label())
	require.Equal(t, []string{"team", "api_key", "user", "none"}, []string{Team.String(), APIKey.String(), User.String(), Scope(0).String()})
}

func TestPolicyKnowsWhetherAnyLimitAppliesAndWhoEachCounterBelongsTo(t *testing.T) {
	t.Parallel()
	p := Policy{Team: "acme", APIKey: "key-1", User: "ann"}
	require.False(t, p.Any(), "identities alone are no limit")
	p.Limits[UserDay] = Limit{Set: true}
	require.True(t, p.Any())
	require.Equal(t, "acme", p.ID(TeamMonth))
	require.Equal(t, "key-1", p.ID(KeyDay))
	require.Equal(t, "key-1", p.ID(KeyMonth))
	require.Equal(t, "ann", p.ID(UserMonth))
	require.Equal(t, "", p.ID(NumSlots))
}
