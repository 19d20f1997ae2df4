package modelname

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var entries = []string{"gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "llama3", "openai/o1", "GPT-5", "default-ish"}

func TestAModelNameResolvesToItsEntry(t *testing.T) {
	s := New(entries)
	for _, c := range []struct {
		rule, model, entry string
	}{
		{"an exact entry is its own", "gpt-4o", "gpt-4o"},
		{"a dated snapshot takes its base model's entry", "gpt-4o-2024-08-06", "gpt-4o"},
		{"the longest boundary prefix wins", "gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"an exact entry beats a shorter prefix", "gpt-4o-mini", "gpt-4o-mini"},
		{"a Vertex version after @ is a boundary", "claude-3-5-sonnet@20240620", "claude-3-5-sonnet"},
		{"an Ollama tag after : is a boundary", "llama3:8b", "llama3"},
		{"a provider prefix is dropped", "openai/gpt-4o", "gpt-4o"},
		{"any router path is dropped up to its last slash", "accounts/fireworks/models/llama3:70b", "llama3"},
		{"a provider prefix and a snapshot together", "openai/gpt-4o-2024-08-06", "gpt-4o"},
		{"an entry with a provider prefix takes its provider's snapshots", "openai/o1-2024-12-17", "openai/o1"},
		{"an entry with a provider prefix takes another provider's spelling when it is the only one", "azure/o1", "openai/o1"},
		{"an entry with a provider prefix takes the bare spelling when it is the only one", "o1-preview", "openai/o1"},
		{"letter case does not matter", "GPT-4O-2024-08-06", "gpt-4o"},
		{"an entry written in capitals matches any case", "gpt-5-turbo", "GPT-5"},
		{"a prefix without a boundary is another model", "gpt-4omni", ""},
		{"a dot is not a boundary", "gpt-4o.1", ""},
		{"a trailing boundary alone is no snapshot", "gpt-4", ""},
		{"an unknown model has no entry", "mistral-large", ""},
		{"an empty name has no entry", "", ""},
		{"a lone slash has no entry", "/", ""},
		{"a prefix is not dropped from inside the name", "gpt/4o", ""},
	} {
		t.Run(c.rule, func(t *testing.T) {
			got, ok := s.Resolve(c.model)
			require.Equal(t, c.entry != "", ok)
			require.Equal(t, c.entry, got)
		})
	}
}

func TestNamesEqualButForCaseResolveToTheFirstInSortedOrderWhateverTheirOrder(t *testing.T) {
	t.Parallel()
	for _, names := range [][]string{{"gpt-4o", "GPT-4o"}, {"GPT-4o", "gpt-4o"}} {
		got, ok := New(names).Resolve("gpt-4o-2024-08-06")
		require.True(t, ok)
		require.Equal(t, "GPT-4o", got)
	}
}

func TestAnEmptySetResolvesNothing(t *testing.T) {
	t.Parallel()
	var nilSet *Set
	for _, s := range []*Set{nilSet, {}, New(nil)} {
		_, ok := s.Resolve("gpt-4o")
		require.False(t, ok)
		require.Zero(t, s.Len())
	}
}

func TestAnExactSpellingAllocatesNothing(t *testing.T) {
	s := New(entries)
	for _, m := range []string{"gpt-4o", "gpt-4o-2024-08-06", "openai/gpt-4o-2024-08-06", "unknown-model"} {
		require.Zero(t, testing.AllocsPerRun(100, func() { s.Resolve(m) }), m)
	}
}

func TestOverlappingEntriesAreListed(t *testing.T) {
	t.Parallel()
	got := Overlaps([]string{"gpt-4o", "gpt-4o-mini", "openai/gpt-4o", "claude-3", "claude-3-5-sonnet@20240620", "o1", "o1pro", "a/x", "b/x"})
	require.Equal(t, []Overlap{
		{Wide: "a/x", Narrow: "b/x"},
		{Wide: "claude-3", Narrow: "claude-3-5-sonnet@20240620"},
		{Wide: "gpt-4o", Narrow: "gpt-4o-mini"},
		{Wide: "gpt-4o", Narrow: "openai/gpt-4o"},
		{Wide: "openai/gpt-4o", Narrow: "gpt-4o-mini"},
	}, got, "o1pro does not start at a boundary after o1")
	require.Empty(t, Overlaps([]string{"gpt-4o", "GPT-4O"}), "names equal but for case are a collision")
}

func TestNamesEqualButForCaseCollide(t *testing.T) {
	t.Parallel()
	require.Equal(t, [][2]string{{"GPT-4o", "gpt-4o"}}, Collisions([]string{"gpt-4o", "o1", "GPT-4o"}))
	require.Empty(t, Collisions([]string{"gpt-4o", "openai/gpt-4o"}))
}

// FuzzResolve checks the rule against a plain statement of it: whatever
// Resolve answers is an entry, and it is the one the rule picks.
func FuzzResolve(f *testing.F) {
	for _, m := range []string{"gpt-4o-2024-08-06", "openai/gpt-4o", "llama3:8b", "claude-3-5-sonnet@x", "", "/", "a/b/c-", "GPT-5-x", "-", "@@"} {
		f.Add(m, "gpt-4o,llama3,openai/o1,a/b,GPT-5,c")
	}
	f.Fuzz(func(t *testing.T, model, list string) {
		names := strings.Split(list, ",")
		s := New(names)
		got, ok := s.Resolve(model)
		want, wantOK := reference(names, model)
		require.Equal(t, wantOK, ok, "model %q names %q", model, names)
		if ok {
			require.Equal(t, Fold(want), Fold(got), "model %q names %q", model, names)
		}
	})
}

// reference is the rule written as plainly as possible, over every entry.
func reference(names []string, model string) (string, bool) {
	if model == "" {
		return "", false
	}
	cut := func(n string) (string, string) {
		n = Fold(n)
		i := strings.LastIndexByte(n, '/')
		return n[:i+1], n[i+1:]
	}
	prefix, bare := cut(model)
	for _, n := range names {
		if n != "" && Fold(n) == Fold(model) {
			return n, true
		}
	}
	best := -1
	for _, n := range names {
		_, b := cut(n)
		if b == "" || len(b) <= best {
			continue
		}
		if b == bare || len(bare) > len(b) && strings.HasPrefix(bare, b) && strings.ContainsRune("-@:", rune(bare[len(b)])) {
			best = len(b)
		}
	}
	if best < 0 {
		return "", false
	}
	var own, plain, first string
	for _, n := range names {
		p, b := cut(n)
		if b == "" || len(b) != best || b != bare[:best] {
			continue
		}
		if p == prefix && own == "" {
			own = n
		}
		if p == "" && plain == "" {
			plain = n
		}
		if first == "" || n < first {
			first = n
		}
	}
	switch {
	case own != "":
		return own, true
	case plain != "":
		return plain, true
	}
	return first, true
}

// BenchmarkResolve is the cost of a lookup by spelling: an entry's own name
// (one map lookup), a dated snapshot, a provider prefix with a snapshot, and
// a model no entry matches, against a price list of LiteLLM's size.
func BenchmarkResolve(b *testing.B) {
	names := append([]string(nil), entries...)
	for i := range 500 {
		names = append(names, "model-"+strings.Repeat("x", i%7)+"-"+string(rune('a'+i%26))+strconv.Itoa(i))
	}
	s := New(names)
	for _, m := range []string{"gpt-4o", "gpt-4o-2024-08-06", "openai/gpt-4o-2024-08-06", "mistral-large-2407"} {
		b.Run("model="+m, func(b *testing.B) {
			for b.Loop() {
				s.Resolve(m)
			}
		})
	}
}
