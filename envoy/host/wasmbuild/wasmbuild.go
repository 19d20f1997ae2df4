// Package wasmbuild compiles the project's proxy-wasm modules for tests, the
// way the Makefile does (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared), once
// per test process and package. Tests that cross the ABI load what it
// returns into the wazero host, so they always exercise the current source.
//
// Set TOKENBUDGET_WASM=<path> to test a prebuilt build/filter.wasm instead
// of compiling ./filter (a relative path is taken from the module root).
package wasmbuild

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// EnvFilter names the variable that points Filter at a prebuilt module.
const EnvFilter = "TOKENBUDGET_WASM"

const (
	filterPkg      = "./filter"
	passthroughPkg = "./examples/passthrough"
	modulePath     = "github.com/tokenbudget/tokenbudget"
)

type result struct {
	once sync.Once
	wasm []byte
	err  error
}

var (
	mu    sync.Mutex
	cache = map[string]*result{}
)

// Filter returns the tokenbudget filter module, or the file EnvFilter names.
func Filter(tb testing.TB) []byte {
	tb.Helper()
	if p := os.Getenv(EnvFilter); p != "" {
		return load(tb, p)
	}
	return Build(tb, filterPkg)
}

// Passthrough returns the pass-through module, the overhead baseline.
func Passthrough(tb testing.TB) []byte {
	tb.Helper()
	return Build(tb, passthroughPkg)
}

// Build compiles the main package pkg (a path relative to the module root
// such as "./filter", or an import path) to a wasip1 reactor and returns
// the module's bytes. The first call per package builds; later calls, from
// any goroutine, share that result, failure included.
func Build(tb testing.TB, pkg string) []byte {
	tb.Helper()
	mu.Lock()
	r, ok := cache[pkg]
	if !ok {
		r = &result{}
		cache[pkg] = r
	}
	mu.Unlock()
	r.once.Do(func() { r.wasm, r.err = compile(pkg) })
	if r.err != nil {
		tb.Fatalf("wasmbuild: %v", r.err)
	}
	return r.wasm
}

// Path writes the module of pkg into the test's temporary directory and
// returns the file, for code that loads modules from disk.
func Path(tb testing.TB, pkg string) string {
	tb.Helper()
	return write(tb, filepath.Base(pkg)+".wasm", Build(tb, pkg))
}

// FilterPath is Path for Filter.
func FilterPath(tb testing.TB) string {
	tb.Helper()
	return write(tb, "filter.wasm", Filter(tb))
}

func write(tb testing.TB, name string, wasm []byte) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(p, wasm, 0o644); err != nil {
		tb.Fatalf("wasmbuild: write %s: %v", p, err)
	}
	return p
}

func load(tb testing.TB, p string) []byte {
	tb.Helper()
	if !filepath.IsAbs(p) {
		root, err := Root()
		if err != nil {
			tb.Fatalf("wasmbuild: %v", err)
		}
		p = filepath.Join(root, p)
	}
	wasm, err := os.ReadFile(p)
	if err != nil {
		tb.Fatalf("wasmbuild: %s=%s: %v", EnvFilter, p, err)
	}
	return wasm
}

// compile builds into a directory it removes again: the bytes stay in
// memory for the life of the process, nothing accumulates on disk.
func compile(pkg string) ([]byte, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tokenbudget-wasmbuild-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "module.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.New("GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared " + pkg + ": " +
			err.Error() + "\n" + strings.TrimSpace(stderr.String()))
	}
	return os.ReadFile(out)
}

// Root finds the tokenbudget module root by walking up from the working
// directory (a test runs in its package's directory) to its go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isOurModule(mod) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module " + modulePath + " above the working directory")
		}
		dir = parent
	}
}

func isOurModule(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1] == modulePath
		}
	}
	return false
}
