package abi

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// listedWithRoom is a map's encoding as the host writes it through a
// scratch read with room for add around it.
func listedWithRoom(listed [][2]string, add []Pair) (buf []byte, size int) {
	r := roomFor(add)
	enc := AppendPairs(nil, listed)
	buf = make([]byte, r.before+len(enc)+r.after)
	for i := range buf {
		buf[i] = 0xee // whatever the scratch buffer held before
	}
	copy(buf[r.before:], enc)
	return buf, len(enc)
}

func asPairList(add []Pair) [][2]string {
	out := make([][2]string, len(add))
	for i, p := range add {
		out[i] = [2]string{p.Name, p.Value}
	}
	return out
}

var successPairs = []Pair{
	{"x-ratelimit-tokens-limit", "10000"}, {"x-ratelimit-tokens-remaining", "9990"},
	{"x-ratelimit-tokens-reset", "1700000060"}, {"x-ratelimit-tokens-day-limit", "1000000"},
	{"x-ratelimit-tokens-day-remaining", "999990"}, {"x-ratelimit-tokens-day-reset", ""},
}

func TestAMergeInPlaceIsTheListingThenTheAddedPairs(t *testing.T) {
	cases := map[string][][2]string{
		"one":      {{":status", "200"}},
		"usual":    {{":status", "200"}, {"content-type", "application/json"}, {"date", "Wed, 02 Dec 2026 04:00:00 GMT"}},
		"repeats":  {{":status", "200"}, {"set-cookie", "a=1"}, {"set-cookie", "b=2"}},
		"empties":  {{":status", "200"}, {"x-empty", ""}, {"", "no-name"}},
		"same len": {{":status", "200"}, {"x-ratelimit-tokens-limix", "1"}}, // compared, not ours
	}
	for name, listed := range cases {
		t.Run(name, func(t *testing.T) {
			buf, size := listedWithRoom(listed, successPairs)
			kept, enc, ok := mergeInPlace(nil, buf, size, successPairs, roomFor(successPairs))
			require.True(t, ok)
			require.Equal(t, AppendPairs(nil, append(append([][2]string{}, listed...), asPairList(successPairs)...)), enc,
				"the encoding a fresh AppendPairs of the listing and the added pairs makes")
			require.Equal(t, listed, kept, "every listed header stays, as listed")
		})
	}
}

func TestAnEmptyMapGetsOnlyTheAddedPairs(t *testing.T) {
	kept, enc, ok := mergeInPlace(nil, nil, 0, successPairs, roomFor(successPairs))
	require.True(t, ok)
	require.Empty(t, kept)
	require.Equal(t, AppendPairs(nil, asPairList(successPairs)), enc)
}

// Each added header replaces every value of its name: in place, the
// backend's values could not be dropped, so such a listing is encoded
// afresh without them.
func TestAListingThatNamesAnAddedHeaderIsEncodedAfreshWithoutIt(t *testing.T) {
	listed := [][2]string{{":status", "200"}, {"x-ratelimit-tokens-limit", "999"}, {"set-cookie", "a=1"}, {"x-ratelimit-tokens-limit", "998"}}
	buf, size := listedWithRoom(listed, successPairs)
	before := append([]byte{}, buf...)
	_, _, ok := mergeInPlace(nil, buf, size, successPairs, roomFor(successPairs))
	require.False(t, ok)
	require.Equal(t, before, buf, "a merge that does not happen leaves the listing as the host wrote it")

	kept, enc, ok := mergeFresh([][2]string{{"earlier", "x"}}, listed, successPairs)
	require.True(t, ok)
	require.Equal(t, [][2]string{{"earlier", "x"}, {":status", "200"}, {"set-cookie", "a=1"}}, kept)
	require.Equal(t, AppendPairs(nil, append([][2]string{{":status", "200"}, {"set-cookie", "a=1"}}, asPairList(successPairs)...)), enc)
}

// cpp-host decodes an encoding past 1024 pairs or 1 MiB as no pairs at all,
// and Envoy then empties the map, :status included: such a merge is never
// written.
func TestAMergePastTheHostsLimitsIsNotWritten(t *testing.T) {
	many := make([][2]string, maxPairsCount-len(successPairs)+1)
	for i := range many {
		many[i] = [2]string{"x-h" + strconv.Itoa(i), "v"}
	}
	buf, size := listedWithRoom(many, successPairs)
	_, _, ok := mergeInPlace(nil, buf, size, successPairs, roomFor(successPairs))
	require.False(t, ok, "too many pairs in place")
	_, _, ok = mergeFresh(nil, many, successPairs)
	require.False(t, ok, "too many pairs afresh")

	_, _, ok = mergeFresh(nil, many[:len(many)-1], successPairs)
	require.True(t, ok, "exactly at the limit is written")

	tooMany := make([]Pair, maxPairsCount+1)
	_, _, ok = mergeInPlace(nil, nil, 0, tooMany, roomFor(tooMany))
	require.False(t, ok, "too many pairs added to an empty map")

	big := [][2]string{{":status", "200"}, {"x-big", string(make([]byte, maxPairsBytes))}}
	buf, size = listedWithRoom(big, successPairs)
	_, _, ok = mergeInPlace(nil, buf, size, successPairs, roomFor(successPairs))
	require.False(t, ok, "too many bytes in place")
	_, _, ok = mergeFresh(nil, big, successPairs)
	require.False(t, ok, "too many bytes afresh")
}

func TestAMalformedListingIsNotMergedInPlace(t *testing.T) {
	good := AppendPairs(nil, [][2]string{{":status", "200"}})
	r := roomFor(successPairs)
	for name, listing := range map[string][]byte{
		"short":              good[:3],
		"truncated":          good[:len(good)-1],
		"missing terminator": append(append([]byte{}, good[:len(good)-1]...), 'x'),
		"trailing bytes":     append(append([]byte{}, good...), 0),
		"count too large":    {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			buf := make([]byte, r.before+len(listing)+r.after)
			copy(buf[r.before:], listing)
			_, _, ok := mergeInPlace(nil, buf, len(listing), successPairs, r)
			require.False(t, ok)
		})
	}
}

// Whatever the listing and whatever is added, a merge that is written is
// well formed and is exactly the listing's pairs that stay, then the added
// ones: a malformed encoding would make Envoy empty the map.
func FuzzMergedHeadersAreTheListingThenTheAdded(f *testing.F) {
	f.Add(AppendPairs(nil, [][2]string{{":status", "200"}, {"content-type", "application/json"}}), "x-ratelimit-tokens-limit", "10", "x-ratelimit-tokens-remaining", "9")
	f.Add(AppendPairs(nil, [][2]string{{":status", "200"}, {"a", "1"}}), "a", "2", "", "")
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "b", "", "b", "x")
	f.Fuzz(func(t *testing.T, listing []byte, n1, v1, n2, v2 string) {
		add := []Pair{{n1, v1}, {n2, v2}}
		r := roomFor(add)
		buf := make([]byte, r.before+len(listing)+r.after)
		copy(buf[r.before:], listing)
		listed, valid := specPairs(listing)
		// The host's listing of an empty map is no bytes at all.
		exact := valid && (len(listing) == 0 || len(AppendPairs(nil, listed)) == len(listing))
		kept, enc, ok := mergeInPlace(nil, buf, len(listing), add, r)
		if ok {
			require.True(t, exact, "only a well-formed listing, with nothing after it, is merged in place")
			for _, p := range listed {
				require.False(t, p[0] == n1 || p[0] == n2, "a listing naming an added header is not merged in place")
			}
		} else {
			if !exact {
				return
			}
			kept, enc, ok = mergeFresh(nil, listed, add)
			if !ok {
				return
			}
		}
		var want [][2]string
		for _, p := range listed {
			if p[0] != n1 && p[0] != n2 {
				want = append(want, p)
			}
		}
		require.Equal(t, len(want), len(kept))
		for i := range want {
			require.Equal(t, want[i], kept[i])
		}
		got, valid := specPairs(enc)
		require.True(t, valid, "the written encoding is well formed")
		require.Len(t, AppendPairs(nil, got), len(enc), "with nothing after it")
		require.Equal(t, append(want, asPairList(add)...), got)
	})
}
