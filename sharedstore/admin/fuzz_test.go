//go:build !wasip1

package admin

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// members is encoding/json's reading of an accepted body: it must be one
// object whose member names are unique and among the allowed.
func requireOneObjectOf(t *testing.T, body []byte, allowed ...string) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		name := k.(string)
		require.False(t, seen[name], "repeated %q accepted", name)
		require.Contains(t, allowed, name)
		seen[name] = true
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
	}
	_, err = dec.Token()
	require.NoError(t, err)
	_, err = dec.Token()
	require.Error(t, err, "nothing after the object")
}

func FuzzAmountBodies(f *testing.F) {
	for _, s := range []string{`{"limit_usd":"200.00"}`, `{"balance_usd":100}`, `{"amount_usd":"25.00","id":"t1"}`,
		`{"limit_usd":"5","limit_usd":"6"}`, `{"limit_usd":"1e-9"}`, `{"amount_usd":"0.000000001","id":"\u00e9"}`,
		`{"limit_usd":"9223372036.854775807"}`, `{"limit_usd":-0}`, `[]`, `{"id":"x","amount_usd":"1",}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if l, err := decodeLimit(body); err == nil {
			requireOneObjectOf(t, body, "limit_usd")
			again, err := decodeLimit([]byte(`{"limit_usd":"` + l.String() + `"}`))
			require.NoError(t, err)
			require.Equal(t, l, again, "the amount written back reads the same")
		}
		if b, err := decodeBalance(body); err == nil {
			requireOneObjectOf(t, body, "balance_usd")
			again, err := decodeBalance([]byte(`{"balance_usd":` + b.String() + `}`))
			require.NoError(t, err)
			require.Equal(t, b, again)
		}
		if a, id, err := decodeTopUp(body); err == nil {
			requireOneObjectOf(t, body, "amount_usd", "id")
			require.Positive(t, int64(a))
			require.NoError(t, checkName("id", id))
			a2, id2, err := decodeTopUp([]byte(`{"id":` + strconv.Quote(id) + `,"amount_usd":"` + a.String() + `"}`))
			require.NoError(t, err)
			require.Equal(t, a, a2)
			require.Equal(t, id, id2)
		}
	})
}

func FuzzPricesBody(f *testing.F) {
	f.Add([]byte(`{"effective_from":"2026-10-01T00:00:00Z","pricing":` + filterPricing + `}`))
	f.Add([]byte(`{"effective_from":"2026-10-01T00:00:00.5+02:00","pricing":{"m":{"input":"1","output":"1"}}}`))
	f.Add([]byte(`{"effective_from":"2026-10-01T00:00:00Z","pricing":{"m":{"input":"1","output":"1","tier":{}}}}`))
	f.Add([]byte(`{"effective_from":"0000-01-01T00:00:00Z","pricing":{"":{"input":"1","output":"1"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		pb, err := decodePrices(body)
		if err != nil {
			return
		}
		requireOneObjectOf(t, body, "effective_from", "pricing")
		require.NotEmpty(t, len(pb.models)+map[bool]int{true: 1}[pb.def != nil])
		l := listOf(1, pb.effectiveFrom, pb.models, pb.def)
		listed, err := json.Marshal(map[string]any{"effective_from": l.EffectiveFrom, "pricing": l.Pricing})
		require.NoError(t, err)
		again, err := decodePrices(listed)
		require.NoError(t, err, "a listed price list is a body PUT takes: %s", listed)
		require.Equal(t, pb.models, again.models)
		require.Equal(t, pb.def, again.def)
		require.True(t, pb.effectiveFrom.Equal(again.effectiveFrom))
		require.Equal(t, time.UTC, again.effectiveFrom.Location())
	})
}
