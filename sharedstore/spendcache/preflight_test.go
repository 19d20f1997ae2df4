package spendcache

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

func out(ref, hb int64, bal any, lims, used [5]any) []any {
	a := []any{ref, hb, bal}
	a = append(a, lims[:]...)
	return append(a, used[:]...)
}

func TestThePreflightReplyIsReadExactly(t *testing.T) {
	tests := []struct {
		name  string
		reply any
		want  Verdict
		bad   bool
	}{
		{"room", out(0, 0, nil, [5]any{nil, "100", nil, nil, nil}, [5]any{nil, "9007199254740993", nil, nil, nil}),
			Verdict{Limits: [5]spend.Limit{spend.KeyDay: {Amount: 100, Set: true}}, Used: spend.Usage{spend.KeyDay: 9007199254740993}}, false},
		{"refused by the key's month", out(3, 0, nil, [5]any{nil, nil, "5", nil, nil}, [5]any{nil, nil, "6", nil, nil}),
			Verdict{Limits: [5]spend.Limit{spend.KeyMonth: {Amount: 5, Set: true}}, Used: spend.Usage{spend.KeyMonth: 6},
				Refused: &spend.Exceeded{Slot: spend.KeyMonth, Limit: 5, Used: 6}}, false},
		{"balance", out(6, 1, "-3", [5]any{}, [5]any{}),
			Verdict{HasBalance: true, TeamBalance: -3, Balance: true, Refused: &spend.Exceeded{Used: 3}}, false},
		{"a refusal on an unlimited slot", out(2, 0, nil, [5]any{}, [5]any{}), Verdict{}, true},
		{"a limit without usage", out(0, 0, nil, [5]any{"1"}, [5]any{}), Verdict{}, true},
		{"not a number", out(0, 0, nil, [5]any{"1x"}, [5]any{"0"}), Verdict{}, true},
		{"short", []any{int64(0)}, Verdict{}, true},
		{"not a table", "x", Verdict{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseOut(tt.reply)
			if tt.bad {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func FuzzParseOutNeverPanics(f *testing.F) {
	f.Add(int64(0), int64(1), "5", "1", "2")
	f.Add(int64(6), int64(1), "-1", "", "x")
	f.Fuzz(func(t *testing.T, ref, hb int64, bal, lim, used string) {
		vd, err := ParseOut(out(ref, hb, bal, [5]any{lim, nil, lim, nil, nil}, [5]any{used, nil, used, nil, nil}))
		if err == nil && vd.Refused != nil && !vd.Balance {
			require.True(t, vd.Limits[vd.Refused.Slot].Set, "a refusal names a limit that applied")
		}
	})
}
