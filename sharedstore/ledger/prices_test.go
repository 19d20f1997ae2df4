//go:build !wasip1

package ledger

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
)

func TestPricesListsEveryListAsItWasPutOldestFirst(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	tiered := flat(t, "1.25", "10")
	tiered.AboveInputTokens = 200_000
	tiered.Tier = pricing.Rates{Input: usd(t, "2.5"), CachedInput: usd(t, "0.625"), CacheWrite: usd(t, "2.5"),
		CacheWrite1h: usd(t, "5"), Output: usd(t, "15")}
	tiered.PerRequest = 1_000
	def := flat(t, "3", "12")

	later, err := s.PutPrices(ctx, at(t, "2026-10-01T00:00:00Z"), map[string]pricing.Entry{"m": flat(t, "2", "8")}, &def)
	require.NoError(t, err)
	first, err := s.PutPrices(ctx, at(t, "2026-09-01T00:00:00Z"), map[string]pricing.Entry{"m": flat(t, "1", "4"), "long": tiered}, nil)
	require.NoError(t, err)

	got, err := s.Prices(ctx)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, first, got[0].ID, "ordered by effective_from, not by insertion")
	require.True(t, at(t, "2026-09-01T00:00:00Z").Equal(got[0].EffectiveFrom))
	require.Equal(t, map[string]pricing.Entry{"m": flat(t, "1", "4"), "long": tiered}, got[0].Models)
	require.Nil(t, got[0].Default)
	require.Equal(t, later, got[1].ID)
	require.Equal(t, map[string]pricing.Entry{"m": flat(t, "2", "8")}, got[1].Models)
	require.Equal(t, &def, got[1].Default)
}

func TestASecondListAtTheSameInstantIsRefusedAndChangesNothing(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	when := at(t, "2026-09-01T00:00:00Z")
	_, err := s.PutPrices(ctx, when, map[string]pricing.Entry{"m": flat(t, "1", "4")}, nil)
	require.NoError(t, err)
	id, err := s.PutPrices(ctx, when, map[string]pricing.Entry{"m": flat(t, "9", "9")}, nil)
	require.ErrorIs(t, err, ErrPricesExist)
	require.Zero(t, id)

	got, err := s.Prices(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, map[string]pricing.Entry{"m": flat(t, "1", "4")}, got[0].Models, "the first list stands")
}

func TestNoPricesIsAnEmptyList(t *testing.T) {
	s, _ := newStore(t)
	got, err := s.Prices(context.Background())
	require.NoError(t, err)
	require.Empty(t, got)
}
