// Command tbconfig checks a tokenbudget plugin config before it reaches
// Envoy, and prints the JSON Schema editors and CI can validate against.
//
//	tbconfig validate [--injects-credential] FILE   (FILE "-" reads stdin)
//	tbconfig schema [-o FILE]
//	tbconfig pricing-from-litellm FILE [MODEL...]
//
// validate prints every problem in one run, one line each with its JSON
// path ("error: …"): what does not parse and, on what does, what would not
// validate. Exit codes:
//
//	0  the config loads (warnings, "warning: …", and notes, "note: …", such
//	   as which model entries shadow another for some spellings, are printed
//	   but do not fail it)
//	1  the config would be rejected: unreadable, not JSON, or any parse or validation error
//	2  bad usage
//
// --injects-credential says that Envoy injects the provider's credential upstream (the
// credential injector of envoy/envoy-providers.yaml or envoy/istio/providers.yaml): validate
// then warns about what a gateway with a paid key behind it must not do (credential.go).
//
// pricing-from-litellm converts LiteLLM's model_prices_and_context_window.json
// (all models, or the ones named) into the plugin config's pricing section on
// stdout, with notes on what it skipped or rounded on stderr.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/tokenbudget/tokenbudget/envoy/cmd/tbconfig/schema"
	"github.com/tokenbudget/tokenbudget/shared/config"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = "usage: tbconfig validate [--injects-credential] FILE|-\n       tbconfig schema [-o FILE]\n       tbconfig pricing-from-litellm FILE|- [MODEL...]\n"

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "validate":
		injected := len(args) == 3 && args[1] == flagInjectsCredential
		if len(args) != 2 && !injected {
			fmt.Fprint(stderr, usage)
			return 2
		}
		return validate(args[len(args)-1], stdin, stdout, injected)
	case "schema":
		return writeSchema(args[1:], stdout, stderr)
	case "pricing-from-litellm":
		return runPricingFromLiteLLM(args[1:], stdin, stdout, stderr)
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
}

// exitInvalid is the one exit code of a config that would not load.
const exitInvalid = 1

func validate(file string, stdin io.Reader, out io.Writer, injectsCredential bool) int {
	var raw []byte
	var err error
	if file == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(out, "error: read config: %v\n", err)
		return exitInvalid
	}
	if err := syntaxError(raw); err != nil {
		fmt.Fprintf(out, "error: %v\n", err)
		return exitInvalid
	}
	c, err := config.Check(raw)
	if err == nil {
		_, err = c.Compile()
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(out, "error: %s\n", line)
		}
		return exitInvalid
	}
	ws := c.Warnings()
	if injectsCredential {
		ws = append(ws, credentialWarnings(c)...)
	}
	for _, w := range ws {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	for _, n := range c.ModelNameNotes() {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	// The last line says the config loads, so a clean run is not silent.
	name := file
	if name == "-" {
		name = "the config on stdin"
	}
	switch len(ws) {
	case 0:
		fmt.Fprintf(out, "OK: %s loads\n", name)
	case 1:
		fmt.Fprintf(out, "OK: %s loads, with 1 warning\n", name)
	default:
		fmt.Fprintf(out, "OK: %s loads, with %d warnings\n", name, len(ws))
	}
	return 0
}

// syntaxError locates malformed JSON by line and column. The filter's own
// parser (jsonx, kept free of syscall for the .wasm) only says the document
// is not valid JSON; this native tool can afford encoding/json to point at
// the byte.
func syntaxError(raw []byte) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || json.Valid(trimmed) {
		return nil
	}
	var v any
	err := json.Unmarshal(trimmed, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return nil // valid for encoding/json after all: leave it to config.Parse
	}
	lead := len(raw) - len(bytes.TrimLeftFunc(raw, unicode.IsSpace))
	off := min(int(se.Offset)+lead, len(raw))
	if off > 0 {
		off-- // Offset counts the bytes read, the culprit included
	}
	line := 1 + bytes.Count(raw[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(raw[:off], '\n')
	return fmt.Errorf("parse plugin config: line %d, column %d: %v", line, col, se)
}

func writeSchema(args []string, stdout, stderr io.Writer) int {
	doc, err := schema.Generate()
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	switch {
	case len(args) == 0:
		_, err = stdout.Write(doc)
	case len(args) == 2 && args[0] == "-o":
		err = os.WriteFile(args[1], doc, 0o644)
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}
