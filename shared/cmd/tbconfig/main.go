// Command tbconfig checks a tokenbudget plugin config before it reaches
// Envoy, and prints the JSON Schema editors and CI can validate against.
//
//	tbconfig validate FILE   (FILE "-" reads stdin)
//	tbconfig schema [-o FILE]
//
// validate prints every error ("error: …", exit 1) and every warning
// ("warning: …"); warnings alone exit 0.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/config/schema"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = "usage: tbconfig validate FILE|-\n       tbconfig schema [-o FILE]\n"

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "validate":
		if len(args) != 2 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		return validate(args[1], stdin, stdout)
	case "schema":
		return writeSchema(args[1:], stdout, stderr)
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
}

func validate(file string, stdin io.Reader, out io.Writer) int {
	var raw []byte
	var err error
	if file == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(out, "error: read config: %v\n", err)
		return 1
	}
	c, err := config.Parse(raw)
	if err == nil {
		err = c.Validate()
	}
	if err == nil {
		_, err = c.Compile()
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(out, "error: %s\n", line)
		}
		return 1
	}
	for _, w := range c.Warnings() {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	return 0
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
