package estimate

import (
	"slices"
	"strconv"
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
	}
}
