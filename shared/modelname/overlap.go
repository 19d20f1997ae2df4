package modelname

import "sort"

// Overlap is a pair of entries whose spellings meet: Narrow takes for
// itself names that would otherwise resolve to Wide. Narrow's bare name
// (provider prefix dropped, folded) is Wide's bare name, or starts with it
// and a boundary. So "gpt-4o-mini" narrows "gpt-4o" (gpt-4o-mini-2024-07-18
// is the mini's), and "openai/gpt-4o" narrows "gpt-4o" (that one spelling
// is its own entry, every other provider's is gpt-4o's). Neither is wrong,
// but an operator who listed the wide entry for a family should know which
// of its spellings another entry takes.
type Overlap struct{ Wide, Narrow string }

// Overlaps lists every overlapping pair of names, sorted by Wide then
// Narrow. Names equal without regard to case are Collisions, not overlaps.
func Overlaps(names []string) []Overlap {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	var out []Overlap
	for _, wide := range sorted {
		w := Bare(wide)
		for _, narrow := range sorted {
			if narrow == wide || Fold(narrow) == Fold(wide) {
				continue
			}
			n := Bare(narrow)
			if n == w || (len(n) > len(w) && n[:len(w)] == w && IsBoundary(n[len(w)])) {
				if n == w && (len(narrow) < len(wide) || len(narrow) == len(wide) && narrow < wide) {
					continue // the same bare name: the longer spelling is the narrow one, listed once
				}
				out = append(out, Overlap{Wide: wide, Narrow: narrow})
			}
		}
	}
	return out
}

// Collisions lists pairs of names equal without regard to case (first,
// second in sorted order): they would be one entry, so which one governs
// would depend on the order a map is read in.
func Collisions(names []string) [][2]string {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	seen := make(map[string]string, len(sorted))
	var out [][2]string
	for _, n := range sorted {
		f := Fold(n)
		if first, ok := seen[f]; ok {
			out = append(out, [2]string{first, n})
			continue
		}
		seen[f] = n
	}
	return out
}
