// Package modelname resolves the model name a client sent to the configured
// entry that governs it. Providers serve one model under several spellings:
// a dated snapshot (gpt-4o-2024-08-06), a version tag (claude-3-5-sonnet@20240620,
// llama3:8b), a provider or router prefix (openai/gpt-4o), another letter case.
// Pricing, per_model budgets and models.* limits all resolve a name the
// same way, through one Set each, so no spelling is priced, limited or
// budgeted differently from the model it names.
//
// The rule: a model's bare name is its name with any provider or router
// prefix dropped (everything up to and including its last '/'), and so is
// an entry's. A model takes the entry whose bare name is its own bare name,
// or else the longest one that its bare name starts with at a boundary ('-',
// '@' or ':' follows it: gpt-4o-2024-08-06, claude-3-5-sonnet@20240620,
// llama3:8b). When several entries share that bare name (gpt-4o and
// openai/gpt-4o), the one with the model's own prefix wins, else the one
// without a prefix, else the first in sorted order. A model no entry
// matches has none, and the caller's default applies. Names are matched
// without regard to ASCII letter case.
//
// Compiled into the .wasm: no fmt, no strings' Unicode tables on the
// request path.
package modelname

import "sort"

// Set is a compiled list of entry names. The zero Set and a nil *Set hold
// no entry. It is read-only once built, so every request may share it.
type Set struct {
	// byName maps each entry's folded name to the entry as configured: a
	// model spelled as an entry costs one lookup.
	byName map[string]string
	// byBare groups the entries by folded bare name.
	byBare map[string]*group
	// longest is the length of the longest bare name: a boundary prefix
	// longer than it cannot be one, so the search starts there.
	longest int
}

// group is the entries that share one bare name, by their folded prefix
// ("" for the entry without one, "openai/" ...), and the first of them in
// sorted order.
type group struct {
	byPrefix map[string]string
	first    string
}

// New compiles names. Two names equal without regard to case are one
// entry, the first in sorted order (names often come from a map, so the
// order they are given in means nothing); the configuration refuses such
// pairs before it builds a Set (see Collisions).
func New(names []string) *Set {
	s := &Set{byName: make(map[string]string, len(names)), byBare: make(map[string]*group, len(names))}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	for _, n := range sorted {
		f := Fold(n)
		if _, dup := s.byName[f]; dup || f == "" {
			continue
		}
		s.byName[f] = n
		prefix, bare := split(f)
		if bare == "" {
			continue // "openai/" names no model: only its exact spelling matches
		}
		g := s.byBare[bare]
		if g == nil {
			g = &group{byPrefix: map[string]string{}, first: n}
			s.byBare[bare] = g
		}
		g.byPrefix[prefix] = n
		if n < g.first {
			g.first = n
		}
		s.longest = max(s.longest, len(bare))
	}
	return s
}

// Len is the number of entries.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byName)
}

// Resolve is the entry that governs model, as configured, and whether
// there is one. A model spelled as an entry costs one map lookup; only a
// miss walks the boundaries.
func (s *Set) Resolve(model string) (entry string, ok bool) {
	if s == nil || len(s.byName) == 0 || model == "" {
		return "", false
	}
	if e, ok := s.byName[model]; ok {
		return e, true
	}
	name := model
	if hasUpper(name) {
		name = Fold(name)
		if e, ok := s.byName[name]; ok {
			return e, true
		}
	}
	prefix, bare := split(name)
	g := s.byBare[bare]
	for i := min(len(bare)-1, s.longest); g == nil && i > 0; i-- {
		if IsBoundary(bare[i]) {
			g = s.byBare[bare[:i]]
		}
	}
	if g == nil {
		return "", false
	}
	if e, ok := g.byPrefix[prefix]; ok {
		return e, true
	}
	if e, ok := g.byPrefix[""]; ok {
		return e, true
	}
	return g.first, true
}

// split cuts a folded name into its provider prefix (up to and including
// its last '/', "" when it has none) and its bare name.
func split(name string) (prefix, bare string) {
	i := lastSlash(name)
	return name[:i+1], name[i+1:]
}

// IsBoundary reports whether c ends a model's base name: '-' before a
// snapshot date or variant, '@' before a Vertex version, ':' before an
// Ollama or Bedrock tag.
func IsBoundary(c byte) bool { return c == '-' || c == '@' || c == ':' }

// Bare is name folded, with its provider prefix dropped.
func Bare(name string) string {
	_, bare := split(Fold(name))
	return bare
}

// Fold is name with ASCII capitals made small (name itself when it has
// none, so the common spelling allocates nothing).
func Fold(name string) string {
	if !hasUpper(name) {
		return name
	}
	b := []byte(name)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}
