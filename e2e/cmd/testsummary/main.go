// Command testsummary gives `make test` its closing line: how many packages,
// tests and fuzz targets ran, and the wall time, counted from what the runs
// reported rather than written down.
//
//	testsummary run --tally FILE -- go test -json ARGS...
//	testsummary report --tally FILE --fuzz N --started UNIX_SECONDS
//
// run starts the command, writes its output as `go test` without -json
// would (each package's closing "ok"/"FAIL" line, and a failed test's
// "--- FAIL" line with its log; no "=== RUN" framing, nothing of a passing
// test), appends the run's counts to FILE as one JSON line, and exits with
// the command's status. report sums FILE's lines into one line:
//
//	make test: P packages, T tests (S subtests, K skipped[, N failed]), F fuzz targets, <wall time>
//
// A package is counted once however many runs tested it (the host profiles
// and wasip1 runs test some packages again); a test once per run that ran it.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

func main() {
	code, err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		if code == 0 {
			code = 2
		}
	}
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("usage: testsummary run|report ...")
	}
	switch args[0] {
	case "run":
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		tally := fs.String("tally", "", "file the run's counts are appended to")
		if err := fs.Parse(args[1:]); err != nil {
			return 2, err
		}
		if *tally == "" || fs.NArg() == 0 {
			return 2, errors.New("usage: testsummary run --tally FILE -- go test -json ARGS...")
		}
		return runTests(fs.Args(), *tally, stdout, stderr)
	case "report":
		fs := flag.NewFlagSet("report", flag.ContinueOnError)
		tally := fs.String("tally", "", "the file run appended to")
		fuzz := fs.Int("fuzz", 0, "fuzz targets that ran and passed")
		started := fs.Int64("started", 0, "when make test started, in Unix seconds")
		if err := fs.Parse(args[1:]); err != nil {
			return 2, err
		}
		f, err := os.Open(*tally)
		if err != nil {
			return 1, err
		}
		defer f.Close()
		c, err := readTally(f)
		if err != nil {
			return 1, err
		}
		var wall time.Duration
		if *started > 0 {
			wall = time.Since(time.Unix(*started, 0)).Round(time.Second)
		}
		_, err = fmt.Fprintln(stdout, c.line(*fuzz, wall))
		return 0, err
	}
	return 2, fmt.Errorf("unknown command %q: want run or report", args[0])
}

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	ImportPath string // of a build-output event
	Test       string
	Output     string
}

// counts is one run's tally, one JSON line of the tally file.
type counts struct {
	Packages []string `json:"packages"` // packages whose tests ran (passed or failed)
	Tests    int      `json:"tests"`    // top-level tests that ran to an end
	Subtests int      `json:"subtests"`
	Skipped  int      `json:"skipped"` // tests and subtests that skipped
	Failed   int      `json:"failed"`  // tests and subtests that failed
}

func (c *counts) add(o counts) {
	c.Packages = append(c.Packages, o.Packages...)
	c.Tests += o.Tests
	c.Subtests += o.Subtests
	c.Skipped += o.Skipped
	c.Failed += o.Failed
}

func (c counts) line(fuzz int, wall time.Duration) string {
	seen := map[string]bool{}
	for _, p := range c.Packages {
		seen[p] = true
	}
	s := fmt.Sprintf("make test: %d packages, %d tests (%d subtests, %d skipped", len(seen), c.Tests, c.Subtests, c.Skipped)
	if c.Failed > 0 {
		s += fmt.Sprintf(", %d failed", c.Failed)
	}
	s += fmt.Sprintf("), %d fuzz targets", fuzz)
	if wall > 0 {
		s += ", " + wall.String()
	}
	return s
}

func readTally(r io.Reader) (counts, error) {
	var total counts
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var c counts
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return total, fmt.Errorf("tally line %q: %w", sc.Text(), err)
		}
		total.add(c)
	}
	return total, sc.Err()
}

func runTests(argv []string, tally string, stdout, stderr io.Writer) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 2, err
	}
	if err := cmd.Start(); err != nil {
		return 2, err
	}
	c, ferr := filter(out, stdout)
	werr := cmd.Wait()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(werr, &exit):
		code = exit.ExitCode()
	case werr != nil:
		return 2, werr
	}
	if ferr != nil {
		return max(code, 1), ferr
	}
	f, err := os.OpenFile(tally, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return max(code, 1), err
	}
	b, _ := json.Marshal(c)
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return max(code, 1), err
	}
	return code, nil
}

// filter reads `go test -json` events, writes what `go test` would print
// without -json, and counts the run. A test's output (its subtests' too) is
// held until its top-level test ends: dropped when that passed or skipped,
// printed as `go test` prints a failure when it failed (the "--- FAIL" line
// first, then the log, then the failed subtests, each level indented by
// four spaces). A package's own lines are held until it ends: a passing
// package prints its closing line only, a failed one everything, with what
// its unfinished tests (a panic, a timeout) had printed.
func filter(r io.Reader, w io.Writer) (counts, error) {
	var c counts
	type key struct{ pkg, test string }
	held := map[key][]string{}
	failed := map[key]bool{}
	children := map[key][]key{} // in the order they first ran
	var roots []key             // top-level tests not ended yet
	pkgOut := map[string][]string{}
	anyFailed := false
	bw := bufio.NewWriter(w)
	var render func(k key, depth int)
	render = func(k key, depth int) {
		indent := strings.Repeat("    ", depth)
		var rest []string
		for _, l := range held[k] {
			if strings.HasPrefix(l, "--- ") {
				bw.WriteString(indent + l)
			} else {
				rest = append(rest, l)
			}
		}
		for _, l := range rest {
			bw.WriteString(indent + l)
		}
		for _, ch := range children[k] {
			if failed[ch] {
				render(ch, depth+1)
			}
		}
	}
	forget := func(k key) {
		var drop func(k key)
		drop = func(k key) {
			for _, ch := range children[k] {
				drop(ch)
			}
			delete(held, k)
			delete(failed, k)
			delete(children, k)
		}
		drop(k)
		kept := roots[:0]
		for _, r := range roots {
			if r != k {
				kept = append(kept, r)
			}
		}
		roots = kept
	}
	dec := json.NewDecoder(r)
	for {
		var e event
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			return c, fmt.Errorf("read go test -json: %w", err)
		}
		if e.Action == "build-output" {
			bw.WriteString(e.Output)
			continue
		}
		if e.Test == "" {
			switch e.Action {
			case "output":
				pkgOut[e.Package] = append(pkgOut[e.Package], e.Output)
			case "pass", "skip", "fail":
				for _, k := range append([]key(nil), roots...) {
					if k.pkg == e.Package {
						if e.Action == "fail" {
							render(k, 0) // never ended: what it printed may say why
						}
						forget(k)
					}
				}
				for _, l := range pkgOut[e.Package] {
					// go test in package-list mode prints a passing package's
					// closing line only ("ok", or "?" with no test files).
					if e.Action == "fail" || strings.HasPrefix(l, "ok  ") || strings.HasPrefix(l, "?   ") {
						bw.WriteString(l)
					}
				}
				delete(pkgOut, e.Package)
				anyFailed = anyFailed || e.Action == "fail"
				if e.Action != "skip" {
					c.Packages = append(c.Packages, e.Package)
				}
			}
			continue
		}
		k := key{e.Package, e.Test}
		parent, _, sub := cutLast(e.Test)
		switch e.Action {
		case "run":
			if sub {
				pk := key{e.Package, parent}
				children[pk] = append(children[pk], k)
			} else {
				roots = append(roots, k)
			}
		case "output":
			if !framing(e.Output) {
				held[k] = append(held[k], e.Output)
			}
		case "pass", "fail", "skip":
			if sub {
				c.Subtests++
			} else {
				c.Tests++
			}
			switch e.Action {
			case "skip":
				c.Skipped++
			case "fail":
				c.Failed++
				failed[k] = true
			}
			if !sub {
				if failed[k] {
					render(k, 0)
				}
				forget(k)
			}
		}
	}
	if anyFailed {
		bw.WriteString("FAIL\n") // go test's last line when a package failed, which -json leaves out
	}
	sort.Strings(c.Packages)
	return c, bw.Flush()
}

// cutLast splits a subtest's name at its last slash.
func cutLast(test string) (parent, name string, sub bool) {
	i := strings.LastIndexByte(test, '/')
	if i < 0 {
		return "", test, false
	}
	return test[:i], test[i+1:], true
}

// framing reports a line test2json adds for the verbose stream, which
// `go test` without -v does not print: === RUN, PAUSE, CONT and NAME.
func framing(line string) bool {
	t := strings.TrimLeft(line, " ")
	for _, p := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(t, p) || strings.TrimRight(t, "\n") == strings.TrimSpace(p) {
			return true
		}
	}
	return false
}
