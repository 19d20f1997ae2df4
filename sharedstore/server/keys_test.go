package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// bucketKeys builds the same keys as bucketKey, one per op in order, braces
// or not, after whatever keys came before.
func TestBucketKeysAreEachOpsBucketKey(t *testing.T) {
	tests := []struct {
		name string
		keys []string
	}{
		{"none", nil},
		{"plain", []string{"tb|t|user|v1|a", "tb|t|team|v1|b"}},
		{"braces", []string{"a{b", "c}d", "{}"}},
		{"mixed", []string{"tb|t|user|v1|a", "x{y}z", "", "tb|r|api_key|v1|c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := make([]limit.Op, len(tt.keys))
			want := []string{"before"}
			for i, k := range tt.keys {
				ops[i].Key = k
				want = append(want, bucketKey(k))
			}
			require.Equal(t, want, bucketKeys([]string{"before"}, ops))
		})
	}
}
