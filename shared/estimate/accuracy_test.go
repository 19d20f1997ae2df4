package estimate

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/stretchr/testify/require"
)

var loadEncodings = sync.OnceValues(func() (map[string]*tiktoken.Tiktoken, error) {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	out := map[string]*tiktoken.Tiktoken{}
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		enc, err := tiktoken.GetEncoding(name)
		if err != nil {
			return nil, err
		}
		out[name] = enc
	}
	return out, nil
})

func trueTokens(enc *tiktoken.Tiktoken, r corpusRequest) int64 {
	n := r.overhead
	for _, s := range r.texts {
		n += int64(len(enc.EncodeOrdinary(s)))
	}
	return n
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1)+0.5)]
}

// The estimate is the whole input reservation (the seed's margin is zero),
// so it must never fall below what a real tokenizer counts, yet stay close
// enough on ordinary traffic not to refuse honest requests.
func TestEstimateNeverUndercountsRealTokenizersAndStaysCloseOnProseAndCode(t *testing.T) {
	encs, err := loadEncodings()
	require.NoError(t, err)
	corpus := buildCorpus(40)
	for _, encName := range []string{"cl100k_base", "o200k_base"} {
		enc := encs[encName]
		ratios := map[string][]float64{}
		for i, r := range corpus {
			est, err := Parse(r.body, 4096)
			require.NoError(t, err)
			truth := trueTokens(enc, r)
			require.GreaterOrEqual(t, est.Input, truth, "%s: %s request %d under-counted: %s", encName, r.class, i, r.body)
			ratios[r.class] = append(ratios[r.class], float64(est.Input)/float64(truth))
		}
		for _, class := range corpusClasses {
			rs := ratios[class]
			slices.Sort(rs)
			t.Logf("%-12s %-11s n=%d min=%.2f median=%.2f p95=%.2f max=%.2f", encName, class, len(rs), rs[0], quantile(rs, 0.5), quantile(rs, 0.95), rs[len(rs)-1])
		}
		for _, class := range []string{"prose", "code"} {
			rs := ratios[class]
			require.Less(t, quantile(rs, 0.5), 1.5, encName+" median over-count on "+class+" ("+strconv.Itoa(len(rs))+" requests)")
		}
		// CJK and Hangul prose is charged from the tokenizers' own counts per
		// character: close to cl100k_base, which needs 1.5 to 1.7 times the
		// tokens of o200k_base on it (Korean the most), so that ratio is the
		// floor of any estimate that never under-counts both.
		for _, class := range []string{"korean", "japanese", "chinese"} {
			rs := ratios[class]
			require.Less(t, quantile(rs, 0.5), 1.9, encName+" median over-count on "+class+" ("+strconv.Itoa(len(rs))+" requests)")
		}
	}
}

// A space before a CJK or Hangul character is a token of its own wherever
// the vocabularies hold no pair of the two: the estimate of a text made of
// spaced characters, alone or repeated, never falls below either count.
func TestSpacedCJKAndHangulCharactersAreNeverUnderCounted(t *testing.T) {
	encs, err := loadEncodings()
	require.NoError(t, err)
	for _, rg := range [][2]rune{{0x3040, 0x30FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0xFF00, 0xFFEF}} {
		for r := rg[0]; r <= rg[1]; r += 7 {
			for _, s := range []string{string(r), " " + string(r), strings.Repeat(" "+string(r), 4), "a " + string(r) + string(r)} {
				for name, enc := range encs {
					require.GreaterOrEqual(t, TextString(s), int64(len(enc.EncodeOrdinary(s))), "%s: %q (%U)", name, s, r)
				}
			}
		}
	}
}
