package estimate

import (
	"slices"
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
// enough on ordinary traffic not to refuse honest requests. Every request
// is checked twice: the estimate that fits every encoding (what any model
// gets) against cl100k_base and o200k_base, and, when its model uses
// o200k_base, the estimate Parse gives it against o200k_base alone.
func TestEstimateNeverUndercountsRealTokenizersAndStaysCloseOnProseAndCode(t *testing.T) {
	t.Parallel()
	encs, err := loadEncodings()
	require.NoError(t, err)
	corpus := buildCorpus(40)
	// ratios[column][class]: the columns are the any-model estimate against
	// each encoding, and the o200k model's own estimate against o200k_base.
	const own = "o200k model"
	ratios := map[string]map[string][]float64{}
	note := func(column, class string, est, truth int64) {
		if ratios[column] == nil {
			ratios[column] = map[string][]float64{}
		}
		ratios[column][class] = append(ratios[column][class], float64(est)/float64(truth))
	}
	for i, r := range corpus {
		req, _, input, err := parseCounts(r.body, 4096)
		require.NoError(t, err)
		for _, encName := range []string{"cl100k_base", "o200k_base"} {
			truth := trueTokens(encs[encName], r)
			require.GreaterOrEqual(t, input.any, truth, "%s: %s request %d under-counted: %s", encName, r.class, i, r.body)
			note(encName, r.class, input.any, truth)
		}
		if EncodingOf(req.Model) == O200k {
			est, err := Parse(r.body, 4096)
			require.NoError(t, err)
			truth := trueTokens(encs["o200k_base"], r)
			require.GreaterOrEqual(t, est.Input, truth, "%s: %s request %d under-counted: %s", req.Model, r.class, i, r.body)
			note(own, r.class, est.Input, truth)
		}
	}
	median := func(column, class string) float64 {
		rs := ratios[column][class]
		slices.Sort(rs)
		return quantile(rs, 0.5)
	}
	for _, column := range []string{"cl100k_base", "o200k_base", own} {
		for _, class := range corpusClasses {
			if rs := ratios[column][class]; len(rs) > 0 {
				slices.Sort(rs)
				t.Logf("%-11s %-11s n=%d min=%.2f median=%.2f p95=%.2f max=%.2f", column, class, len(rs), rs[0], quantile(rs, 0.5), quantile(rs, 0.95), rs[len(rs)-1])
			}
		}
	}
	for _, column := range []string{"cl100k_base", "o200k_base"} {
		for _, class := range []string{"prose", "code"} {
			require.Less(t, median(column, class), 1.5, column+" median over-count on "+class)
		}
		// CJK and Hangul prose is charged from the tokenizers' own counts per
		// character: close to cl100k_base, which needs 1.5 to 1.7 times the
		// tokens of o200k_base on it (Korean the most), so that ratio is the
		// floor of any estimate that never under-counts both.
		for _, class := range []string{"korean", "japanese", "chinese"} {
			require.Less(t, median(column, class), 1.9, column+" median over-count on "+class)
		}
	}
	// A model on o200k_base is charged o200k_base's own counts per
	// character, so its CJK and Hangul prose comes close to the real count.
	for _, class := range []string{"korean", "japanese", "chinese"} {
		require.NotEmpty(t, ratios[own][class], "the corpus's %s prose is sent to an o200k_base model", class)
		require.Less(t, median(own, class), 1.6, "o200k model median over-count on "+class)
	}
}

// A space before a CJK or Hangul character is a token of its own wherever
// the vocabularies hold no pair of the two: the estimate of a text made of
// spaced characters, alone or repeated, never falls below either count.
func TestSpacedCJKAndHangulCharactersAreNeverUnderCounted(t *testing.T) {
	t.Parallel()
	encs, err := loadEncodings()
	require.NoError(t, err)
	for _, rg := range [][2]rune{{0x3040, 0x30FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0xFF00, 0xFFEF}} {
		for r := rg[0]; r <= rg[1]; r += 7 {
			for _, s := range []string{string(r), " " + string(r), strings.Repeat(" "+string(r), 4), "a " + string(r) + string(r)} {
				for name, enc := range encs {
					require.GreaterOrEqual(t, TextString(s), int64(len(enc.EncodeOrdinary(s))), "%s: %q (%U)", name, s, r)
				}
				require.GreaterOrEqual(t, textCounts([]byte(s)).o200k, int64(len(encs["o200k_base"].EncodeOrdinary(s))), "o200k_base alone: %q (%U)", s, r)
			}
		}
	}
}
