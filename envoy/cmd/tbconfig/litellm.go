package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/money"
)

// The LiteLLM price file (model_prices_and_context_window.json) is one
// object: model name → entry, whose *_cost_per_token / *_token_cost
// members are USD per token. These are the members the pricing section can
// hold; every other member with "cost" in its name is reported as ignored.
const (
	llInput        = "input_cost_per_token"
	llOutput       = "output_cost_per_token"
	llCacheRead    = "cache_read_input_token_cost"
	llCacheWrite   = "cache_creation_input_token_cost"
	llCacheWrite1h = "cache_creation_input_token_cost_above_1hr"
)

// llTierKey is a long-context variant of a rate: "<rate>_above_<N>k_tokens".
var llTierKey = regexp.MustCompile(`^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost|cache_creation_input_token_cost_above_1hr)_above_([0-9]+)k_tokens$`)

// litellmRates is one set of rates as the pricing section writes them.
type litellmRates struct {
	Input        string `json:"input"`
	CachedInput  string `json:"cached_input,omitempty"`
	CacheWrite   string `json:"cache_write,omitempty"`
	CacheWrite1h string `json:"cache_write_1h,omitempty"`
	Output       string `json:"output"`
}

type litellmEntry struct {
	litellmRates
	AboveInputTokens int64         `json:"above_input_tokens,omitempty"`
	Tier             *litellmRates `json:"tier,omitempty"`
}

// pricingFromLiteLLM converts a LiteLLM price file into the plugin config's
// pricing section, {"pricing":{…}}. Rates are read from their decimal text
// (json.Number), never through float64, and written as decimal strings of
// USD per million tokens. only, when not empty, keeps just those models (a
// missing one is an error). notes lists the models skipped and the members
// ignored, for stderr.
//
// A rate finer than the unit (a float artifact such as
// 3.0000000000000004e-07 USD per token) is rounded up to the next
// nano-dollar per million tokens and noted: the rounding is below $1e-15 a
// token and never under-charges. A tier rate LiteLLM leaves out is written
// as the base rate of its kind, which is what LiteLLM charges above the
// threshold for it. An entry with more than one threshold is skipped: the
// pricing section holds one tier, and any single one would misprice some
// requests.
func pricingFromLiteLLM(raw []byte, only []string) (out []byte, notes []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("read LiteLLM prices: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("read LiteLLM prices: data after the top-level object")
	}
	names := only
	if len(names) == 0 {
		for name := range doc {
			if name != "sample_spec" {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	pricing := make(map[string]litellmEntry, len(names))
	for _, name := range names {
		e, ok := doc[name]
		if !ok {
			if len(only) > 0 {
				return nil, nil, fmt.Errorf("model %q is not in the LiteLLM file", name)
			}
			continue
		}
		entry, entryNotes, err := convertLiteLLM(e)
		for _, n := range entryNotes {
			notes = append(notes, name+": "+n)
		}
		if err != nil {
			if len(only) > 0 {
				return nil, nil, fmt.Errorf("model %q: %w", name, err)
			}
			notes = append(notes, name+": skipped: "+err.Error())
			continue
		}
		pricing[name] = entry
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"pricing": pricing}); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), notes, nil
}

// convertLiteLLM converts one LiteLLM entry.
func convertLiteLLM(e map[string]any) (litellmEntry, []string, error) {
	var notes []string
	rate := func(key string) (string, bool, error) {
		v, ok := e[key]
		if !ok || v == nil {
			return "", false, nil
		}
		var text string
		switch x := v.(type) {
		case json.Number:
			text = x.String()
		case string:
			text = x
		default:
			return "", false, fmt.Errorf("%s is not a number", key)
		}
		p, rounded, err := perTokenToPerMillion(text)
		if err != nil {
			return "", false, fmt.Errorf("%s %q: %w", key, text, err)
		}
		if rounded {
			notes = append(notes, key+" "+text+" rounded up to "+p.String()+" USD per million tokens")
		}
		return p.String(), true, nil
	}
	var out litellmEntry
	var err error
	var okIn, okOut bool
	if out.Input, okIn, err = rate(llInput); err != nil {
		return out, notes, err
	}
	if out.Output, okOut, err = rate(llOutput); err != nil {
		return out, notes, err
	}
	if !okIn || !okOut {
		return out, notes, errors.New("no per-token input and output price")
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{llCacheRead, &out.CachedInput}, {llCacheWrite, &out.CacheWrite}, {llCacheWrite1h, &out.CacheWrite1h}} {
		if *f.dst, _, err = rate(f.key); err != nil {
			return out, notes, err
		}
	}

	tierKeys := map[string]string{} // base member → its tier member
	var thresholds []int64
	var ignored []string
	for key := range e {
		if m := llTierKey.FindStringSubmatch(key); m != nil {
			k, err := strconv.ParseInt(m[2], 10, 64)
			if err != nil || k <= 0 || k > 1<<40 {
				return out, notes, fmt.Errorf("%s: unreadable threshold", key)
			}
			if !containsInt(thresholds, k*1000) {
				thresholds = append(thresholds, k*1000)
			}
			tierKeys[m[1]] = key
			continue
		}
		switch key {
		case llInput, llOutput, llCacheRead, llCacheWrite, llCacheWrite1h:
		default:
			if strings.Contains(key, "cost") {
				ignored = append(ignored, key)
			}
		}
	}
	if len(ignored) > 0 {
		sort.Strings(ignored)
		notes = append(notes, "ignores "+strings.Join(ignored, ", "))
	}
	switch len(thresholds) {
	case 0:
		return out, notes, nil
	case 1:
	default:
		return out, notes, fmt.Errorf("%d long-context thresholds; the pricing section holds one", len(thresholds))
	}
	tier := out.litellmRates // LiteLLM charges the base rate of a kind it has no tier rate for
	for base, dst := range map[string]*string{llInput: &tier.Input, llOutput: &tier.Output, llCacheRead: &tier.CachedInput, llCacheWrite: &tier.CacheWrite, llCacheWrite1h: &tier.CacheWrite1h} {
		if key, ok := tierKeys[base]; ok {
			if *dst, _, err = rate(key); err != nil {
				return out, notes, err
			}
		}
	}
	out.AboveInputTokens = thresholds[0]
	out.Tier = &tier
	return out, notes, nil
}

// perTokenToPerMillion turns USD per token (decimal text) into a Price,
// exactly when the unit holds it, else rounded up (rounded true).
func perTokenToPerMillion(text string) (money.Price, bool, error) {
	v, err := money.ParseScaled(text, money.Scale+6)
	if err == nil {
		return money.Price(v), false, nil
	}
	if !errors.Is(err, money.ErrPrecision) {
		return 0, false, err
	}
	// A float artifact is short; anything else finer than the unit (say
	// 1e-999999999, whose exact value big.Rat would spend gigabytes on) is
	// refused as written.
	if i := strings.IndexAny(text, "eE"); len(text) > 64 || i >= 0 && !smallExponent(text[i+1:]) {
		return 0, false, err
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return 0, false, money.ErrSyntax
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(money.Scale+6), nil)))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, false, money.ErrRange
	}
	return money.Price(q.Int64()), true, nil
}

func smallExponent(e string) bool {
	n, err := strconv.Atoi(e)
	return err == nil && n > -400 && n < 400
}

func containsInt(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// runPricingFromLiteLLM is `tbconfig pricing-from-litellm FILE [MODEL...]`.
func runPricingFromLiteLLM(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var raw []byte
	var err error
	if args[0] == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(args[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	out, notes, err := pricingFromLiteLLM(raw, args[1:])
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}
