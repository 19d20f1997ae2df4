package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sample is a module of its own with a passing package, a failing one and
// one without tests: what `go test` prints for each is the reference.
var sample = map[string]string{
	"go.mod": "module sample\n\ngo 1.26\n",
	"good/good_test.go": `package good

import "testing"

func TestPasses(t *testing.T) { t.Log("a passing test's log is not printed") }
func TestTable(t *testing.T) {
	for _, n := range []string{"a", "b", "c"} {
		t.Run(n, func(t *testing.T) {})
	}
}
func TestSkips(t *testing.T) { t.Skip("not here") }
`,
	"bad/bad_test.go": `package bad

import "testing"

func TestPasses(t *testing.T) {}
func TestFails(t *testing.T) {
	t.Log("before")
	t.Run("fine", func(t *testing.T) {})
	t.Run("broken", func(t *testing.T) {
		t.Run("deeper", func(t *testing.T) { t.Error("boom") })
	})
}
`,
	"none/none.go": "package none\n",
}

func writeSample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range sample {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	return dir
}

// normal blanks the durations, which differ between two runs.
func normal(s string) string {
	s = regexp.MustCompile(`\([0-9.]+s\)`).ReplaceAllString(s, "(Xs)")
	return regexp.MustCompile(`\t[0-9.]+s\n`).ReplaceAllString(s, "\tXs\n")
}

// packageBlocks cuts go test's output into each package's lines, up to and including its
// closing line ("ok", "FAIL" or "?"), sorted: packages finish in any order, so two runs of the
// same packages print the same blocks, not always in the same order.
func packageBlocks(s string) []string {
	var blocks []string
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		b.WriteString(line)
		if strings.HasPrefix(line, "ok  \t") || strings.HasPrefix(line, "FAIL\t") || strings.HasPrefix(line, "?   \t") {
			blocks = append(blocks, b.String())
			b.Reset()
		}
	}
	sort.Strings(blocks)
	return append(blocks, b.String())
}

func TestARunPrintsWhatGoTestPrintsAndCountsWhatRan(t *testing.T) {
	dir := writeSample(t)
	t.Chdir(dir)
	plain, err := exec.Command("go", "test", "-count=1", "./...").Output()
	require.Error(t, err, "the sample has a failing test")

	tally := filepath.Join(t.TempDir(), "tally")
	var out, errOut bytes.Buffer
	code, err := run([]string{"run", "--tally", tally, "--", "go", "test", "-json", "-count=1", "./..."}, &out, &errOut)
	require.NoError(t, err, errOut.String())
	require.Equal(t, 1, code, "go test's status")
	require.Equal(t, packageBlocks(normal(string(plain))), packageBlocks(normal(out.String())), "the same lines as go test without -json")
	require.Contains(t, out.String(), "ok  \tsample/good\t", "CI reads the closing lines")
	require.NotContains(t, out.String(), "=== RUN")

	// A second run of the same packages counts its tests again but not the packages.
	code, err = run([]string{"run", "--tally", tally, "--", "go", "test", "-json", "-count=1", "./good"}, &out, &errOut)
	require.NoError(t, err)
	require.Zero(t, code)
	var report bytes.Buffer
	started := time.Now().Add(-90 * time.Second).Unix()
	code, err = run([]string{"report", "--tally", tally, "--fuzz", "7", "--started", strconv.FormatInt(started, 10)}, &report, &errOut)
	require.NoError(t, err)
	require.Zero(t, code)
	// good: 3 tests, 3 subtests, 1 skipped, twice; bad: 2 tests, 3 subtests, 2 failed (deeper, broken) + TestFails.
	require.Regexp(t, `^make test: 2 packages, 8 tests \(9 subtests, 2 skipped, 3 failed\), 7 fuzz targets, 1m3[0-9]s\n$`, report.String())
}

func TestAFailedBuildIsPrintedAndFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module broken\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x_test.go"), []byte("package broken\n\nfunc TestX(t *testing.T) { undefined() }\n"), 0o644))
	t.Chdir(dir)
	var out, errOut bytes.Buffer
	code, err := run([]string{"run", "--tally", filepath.Join(dir, "tally"), "--", "go", "test", "-json", "-count=1", "."}, &out, &errOut)
	require.NoError(t, err)
	require.NotZero(t, code)
	require.Contains(t, out.String()+errOut.String(), "undefined")
	require.Contains(t, out.String(), "FAIL")
}
