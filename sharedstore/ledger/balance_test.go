//go:build !wasip1

package ledger

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
)

func TestATopUpAddsOncePerIDAndNeedsABalance(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	_, _, err := s.TopUp(ctx, "acme", "t0", money.OneUSD)
	require.ErrorIs(t, err, ErrNoBalance)
	_, ok, err := s.Balance(ctx, "acme")
	require.NoError(t, err)
	require.False(t, ok, "a refused top-up does not give the team a balance")

	require.NoError(t, s.SetBalance(ctx, "acme", 100*money.OneUSD))
	tests := []struct {
		name    string
		id      string
		amount  money.Amount
		applied bool
		want    money.Amount
	}{
		{"a new top-up adds", "t1", 25 * money.OneUSD, true, 125 * money.OneUSD},
		{"its retry adds nothing", "t1", 25 * money.OneUSD, false, 125 * money.OneUSD},
		{"a retry with another amount adds nothing", "t1", 99 * money.OneUSD, false, 125 * money.OneUSD},
		{"another id adds", "t2", 1, true, 125*money.OneUSD + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, bal, err := s.TopUp(ctx, "acme", tt.id, tt.amount)
			require.NoError(t, err)
			require.Equal(t, tt.applied, applied)
			require.Equal(t, tt.want, bal)
		})
	}

	// Concurrent retries of one top-up: one applies.
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, _, err := s.TopUp(ctx, "acme", "t3", money.OneUSD)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && ok {
				applied++
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, applied)
	bal, ok, err := s.Balance(ctx, "acme")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 126*money.OneUSD+1, bal)

	require.NoError(t, s.SetBalance(ctx, "other", money.OneUSD))
	_, _, err = s.TopUp(ctx, "other", "t1", 25*money.OneUSD)
	require.ErrorIs(t, err, ErrTopUpIDReused, "another team's id is not a retry")
	bal, _, err = s.Balance(ctx, "other")
	require.NoError(t, err)
	require.Equal(t, money.OneUSD, bal)

	for _, bad := range []struct {
		id     string
		amount money.Amount
	}{{"", 1}, {"x", 0}, {"x", -1}} {
		_, _, err := s.TopUp(ctx, "acme", bad.id, bad.amount)
		require.Error(t, err)
	}
}
