package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

// parsers is every package under shared/ that parses: the JSON reader,
// shared/jsonx, and every package that depends on it (every reader of a
// request, a response, a config or the wire goes through it). Derived from
// the tree, so a new parser is one at once.
func parsers(t *testing.T) map[string]bool {
	t.Helper()
	jsonx := modulePath + "/shared/jsonx"
	out := map[string]bool{jsonx: true}
	for _, p := range goList(t, "./shared/...") {
		for _, d := range p.Deps {
			if d == jsonx {
				out[p.ImportPath] = true
			}
		}
	}
	for _, named := range []string{"usage", "estimate", "wire", "config"} {
		require.Contains(t, out, modulePath+"/shared/"+named, "the derivation finds the parsers the layering names")
	}
	return out
}

// The vocabulary is at the bottom: shared/limit and every package of ours it
// depends on (derived with go list -deps) speak of budgets, money, time and
// token counts, and none of them parses or imports a package that does. The
// failure names the importer and the import.
func TestTheVocabularyDependsOnNothingThatParses(t *testing.T) {
	parse := parsers(t)
	vocabulary := 0
	for _, p := range goList(t, "-deps", "./shared/limit") {
		if !strings.HasPrefix(p.ImportPath, modulePath+"/") {
			continue
		}
		vocabulary++
		require.False(t, parse[p.ImportPath], "%s is vocabulary (shared/limit depends on it) but parses", p.ImportPath)
		for _, imp := range p.Imports {
			require.False(t, parse[imp], "%s is vocabulary (shared/limit depends on it) but imports %s, which parses", p.ImportPath, imp)
		}
	}
	require.Greater(t, vocabulary, 1, "go list found shared/limit and what it depends on")
}

// Arrows point down: no package under shared/, nor anything it depends on,
// imports the stores, the filter or the host.
func TestNothingUnderSharedImportsTheStoresTheFilterOrTheHost(t *testing.T) {
	above := []string{modulePath + "/sharedstore", modulePath + "/filter", modulePath + "/envoy"}
	for _, p := range goList(t, "-deps", "./shared/...") {
		for _, imp := range p.Imports {
			for _, a := range above {
				require.False(t, imp == a || strings.HasPrefix(imp, a+"/"), "%s imports %s, above shared/", p.ImportPath, imp)
			}
		}
	}
}

// One name for each vocabulary type: no package re-exports a type, constant
// or variable of a package under shared/ under a name of its own (a type
// alias `Plan = limit.Plan`, a `const KindTokens = limit.KindTokens`), so
// every caller writes the vocabulary's own name. The check reads every
// non-test Go file of the module.
func TestNoPackageRenamesTheVocabulary(t *testing.T) {
	root, err := wasmbuild.Root()
	require.NoError(t, err)
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "build" || n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		shared := map[string]bool{} // local names of the packages under shared/
		for _, s := range f.Imports {
			p, _ := strconv.Unquote(s.Path.Value)
			if !strings.HasPrefix(p, modulePath+"/shared/") {
				continue
			}
			name := p[strings.LastIndexByte(p, '/')+1:]
			if s.Name != nil {
				name = s.Name.Name
			}
			shared[name] = true
		}
		// fromShared names the package under shared/ that e refers into.
		fromShared := func(e ast.Expr) (string, bool) {
			sel, ok := e.(*ast.SelectorExpr)
			if !ok {
				return "", false
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return "", false
			}
			_, ok = shared[id.Name]
			return id.Name + "." + sel.Sel.Name, ok
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if name, ok := fromShared(s.Type); ok && s.Assign.IsValid() {
						require.Failf(t, "a second name for the vocabulary", "%s: type %s = %s; write %s where it is used", rel, s.Name.Name, name, name)
					}
				case *ast.ValueSpec:
					for i, v := range s.Values {
						if name, ok := fromShared(v); ok && i < len(s.Names) && strings.HasSuffix(name, "."+s.Names[i].Name) {
							require.Failf(t, "a second name for the vocabulary", "%s: %s = %s; write %s where it is used", rel, s.Names[i].Name, name, name)
						}
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 100, "the walk read the module's files")
}
