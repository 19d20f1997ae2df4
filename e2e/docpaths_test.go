package e2e

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

// The documents whose repository paths must name what the repository holds.
var documentedPaths = []string{"README.md", "DECISIONS.md", "BENCHMARKS.md", "docs/*.md"}

// TestEveryPathTheDocumentsNameIsInTheRepository holds README.md, DECISIONS.md, BENCHMARKS.md
// and docs/*.md to the work tree: every repository path they name in backquotes exists, and none
// climbs out of the repository.
func TestEveryPathTheDocumentsNameIsInTheRepository(t *testing.T) {
	root, err := wasmbuild.Root()
	require.NoError(t, err)
	tree := readTree(t, root)
	for _, pattern := range documentedPaths {
		names, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		require.NotEmpty(t, names, pattern)
		for _, name := range names {
			text, err := os.ReadFile(name)
			require.NoError(t, err)
			rel, _ := filepath.Rel(root, name)
			for _, bad := range missingPaths(string(text), tree) {
				t.Errorf("%s: %s", rel, bad)
			}
		}
	}
}

// TestThePathCheckFindsWhatIsNotInTheRepository pins what the check above reads as a repository
// path, so that a rule too lax to find anything fails here.
func TestThePathCheckFindsWhatIsNotInTheRepository(t *testing.T) {
	tree := repoTree{
		top:   map[string]bool{"shared": true, "docs": true, "Makefile": true, "README.md": true, "build": true},
		files: map[string]bool{"shared/jsonx/scan.go": true, "docs/a.md": true, "Makefile": true},
		dirs:  map[string]bool{"shared": true, "shared/jsonx": true, "docs": true},
		bases: map[string]bool{"scan.go": true, "a.md": true, "Makefile": true, "README.md": true},
	}
	doc := "`shared/jsonx/scan.go`, `shared/jsonx/`, `./shared/...`, `go test ./shared/jsonx/`, `docs/*.md`,\n" +
		"`scan.go`, `build/filter.wasm`, `github.com/x/y.go`, `/etc/passwd`, `tb|b|<key>`, `shared/<pkg>/x.go`,\n" +
		"`application/json`, `Makefile`,\n" +
		"```sh\ncat shared/gone.go\n```\n" +
		"`shared/gone.go` `docs/*.txt` `../shared/DESIGN.md` `DESIGN.md` `legacy.go` `go vet ./shared/old/...`\n" +
		"See docs/a.md and README.md, not ENVOY_HOST.md or ../seeds/004.md."
	require.Equal(t, []string{
		"`shared/gone.go` does not exist",
		"`docs/*.txt` matches nothing",
		"`../shared/DESIGN.md` is outside the repository",
		"`DESIGN.md` is no file of the repository",
		"`legacy.go` is no file of the repository",
		"`./shared/old/...` does not exist",
		"ENVOY_HOST.md is no file of the repository",
		"../seeds/004.md is outside the repository",
	}, missingPaths(doc, tree))
}

type repoTree struct {
	top   map[string]bool // entries at the root
	files map[string]bool // slash-separated paths from the root
	dirs  map[string]bool
	bases map[string]bool // every file's base name
}

func readTree(t *testing.T, root string) repoTree {
	t.Helper()
	tree := repoTree{top: map[string]bool{}, files: map[string]bool{}, dirs: map[string]bool{}, bases: map[string]bool{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if !strings.Contains(rel, "/") {
			tree.top[rel] = true
		}
		if d.IsDir() {
			if rel == ".git" || rel == "build" || rel == "e2e/.tmp" {
				return filepath.SkipDir
			}
			tree.dirs[rel] = true
			return nil
		}
		tree.files[rel] = true
		tree.bases[d.Name()] = true
		return nil
	})
	require.NoError(t, err)
	return tree
}

var (
	fence     = regexp.MustCompile("(?ms)^[ \t]*```.*?^[ \t]*```")
	inline    = regexp.MustCompile("`([^`\n]+)`")
	pathChars = regexp.MustCompile(`^[A-Za-z0-9_.*+\-/]+$`)
	// A bare file name of a source or documentation file: it must be some file of the tree.
	bareSource = regexp.MustCompile(`^[A-Za-z0-9_.*+\-]+\.(md|go|s|h|lua)$`)
)

// missingPaths reads each word of each backquoted span outside fenced blocks, and each name of
// a Markdown file in the prose. A word is a repository path when it starts where the repository
// does: at one of the root's entries (after an optional "./"), or at ".." (always wrong: nothing
// outside the repository is a reference). A bare name of a source or documentation file is one
// too, and must be the name of some file in the tree. Not paths: URLs and module paths (a first
// segment with a dot in it), absolute paths (routes, paths inside images), placeholders (`<…>`),
// and build/, which holds what the Makefile writes.
func missingPaths(text string, tree repoTree) []string {
	var bad []string
	text = fence.ReplaceAllString(text, "")
	for _, m := range inline.FindAllStringSubmatch(text, -1) {
		for _, word := range strings.Fields(m[1]) {
			word = strings.Trim(word, `"'(),;:`)
			if i := strings.LastIndexByte(word, '='); i >= 0 {
				word = word[i+1:]
			}
			if msg := checkWord(tree, word); msg != "" {
				bad = append(bad, "`"+word+"` "+msg)
			}
		}
	}
	for _, word := range markdownName.FindAllString(inline.ReplaceAllString(text, ""), -1) {
		if msg := checkWord(tree, word); msg != "" {
			bad = append(bad, word+" "+msg)
		}
	}
	return bad
}

var markdownName = regexp.MustCompile(`[A-Za-z0-9_.\-/]*[A-Za-z0-9_\-]\.md\b`)

func checkWord(tree repoTree, word string) string {
	if !pathChars.MatchString(word) {
		return ""
	}
	if strings.HasPrefix(word, "../") || word == ".." {
		return "is outside the repository"
	}
	word = strings.TrimPrefix(word, "./")
	if !strings.Contains(word, "/") {
		if bareSource.MatchString(word) && !tree.top[word] && !baseMatches(tree, word) {
			return "is no file of the repository"
		}
		return ""
	}
	first := word[:strings.IndexByte(word, '/')]
	if !tree.top[first] || first == "build" {
		return ""
	}
	return checkPath(tree, word)
}

func baseMatches(tree repoTree, pattern string) bool {
	if !strings.ContainsAny(pattern, "*") {
		return tree.bases[pattern]
	}
	for b := range tree.bases {
		if ok, _ := path.Match(pattern, b); ok {
			return true
		}
	}
	return false
}

func checkPath(tree repoTree, p string) string {
	clean := strings.TrimSuffix(strings.TrimSuffix(p, "/..."), "/")
	if !strings.Contains(clean, "*") {
		if tree.files[clean] || tree.dirs[clean] {
			return ""
		}
		return "does not exist"
	}
	for f := range tree.files {
		if ok, _ := path.Match(clean, f); ok {
			return ""
		}
	}
	for d := range tree.dirs {
		if ok, _ := path.Match(clean, d); ok {
			return ""
		}
	}
	return "matches nothing"
}

// TestEverySectionTheDocumentsCiteExists holds the documents' citations of one another
// (`BENCHMARKS.md`, "Refunds at settlement"; DECISIONS, "Estimation") to their headings, or, in
// DECISIONS.md, to the bold lead of an entry, so that a section renamed or folded into another
// leaves no reference behind. The documents have no numbered sections, so "section 28" is stale.
func TestEverySectionTheDocumentsCiteExists(t *testing.T) {
	root, err := wasmbuild.Root()
	require.NoError(t, err)
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		return string(b)
	}
	titles := map[string]map[string]bool{}
	for _, doc := range []string{"README", "DECISIONS", "BENCHMARKS"} {
		titles[doc] = sectionTitles(read(doc + ".md"))
	}
	for _, pattern := range documentedPaths {
		names, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		for _, name := range names {
			rel, _ := filepath.Rel(root, name)
			for _, bad := range staleCitations(read(rel), titles) {
				t.Errorf("%s: %s", rel, bad)
			}
		}
	}
}

func TestTheCitationCheckFindsSectionsThatAreGone(t *testing.T) {
	titles := map[string]map[string]bool{"BENCHMARKS": sectionTitles("# B\n## Refunds at settlement\ntext\n")}
	doc := "(`BENCHMARKS.md`, \"Refunds at\nsettlement\") and (BENCHMARKS, \"Refunds\"), BENCHMARKS.md section 28."
	require.Equal(t, []string{`BENCHMARKS "Refunds" names no section`, "BENCHMARKS section 28: there are no numbered sections"},
		staleCitations(doc, titles))
}

var (
	heading    = regexp.MustCompile(`(?m)^#+ +(.+?) *$`)
	boldLead   = regexp.MustCompile(`(?m)^- \*\*([^*]+?)\.?\*\*`)
	citation   = regexp.MustCompile("(README|DECISIONS|BENCHMARKS)(?:\\.md)?`?,?[ \n]+\"([^\"]+)\"")
	numberedAt = regexp.MustCompile("(README|DECISIONS|BENCHMARKS)(?:\\.md)?`?,?[ \n]+sections?[ \n]+([0-9]+)")
	spaces     = regexp.MustCompile(`\s+`)
)

func sectionTitles(text string) map[string]bool {
	titles := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		titles[m[1]] = true
	}
	for _, m := range boldLead.FindAllStringSubmatch(text, -1) {
		titles[m[1]] = true
	}
	return titles
}

func staleCitations(text string, titles map[string]map[string]bool) []string {
	var bad []string
	for _, m := range citation.FindAllStringSubmatch(text, -1) {
		name := spaces.ReplaceAllString(m[2], " ")
		if known, ok := titles[m[1]]; ok && !known[name] {
			bad = append(bad, m[1]+` "`+name+`" names no section`)
		}
	}
	for _, m := range numberedAt.FindAllStringSubmatch(text, -1) {
		bad = append(bad, m[1]+" section "+m[2]+": there are no numbered sections")
	}
	return bad
}
