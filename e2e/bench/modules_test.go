package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

// envPassthrough points passthroughModule at a prebuilt module, as
// wasmbuild.EnvFilter does for the filter, so `make bench` measures the
// two modules it has just built.
const envPassthrough = "TOKENBUDGET_PASSTHROUGH_WASM"

func passthroughModule(tb testing.TB) []byte {
	tb.Helper()
	p := os.Getenv(envPassthrough)
	if p == "" {
		return wasmbuild.Passthrough(tb)
	}
	if !filepath.IsAbs(p) {
		root, err := wasmbuild.Root()
		if err != nil {
			tb.Fatal(err)
		}
		p = filepath.Join(root, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatalf("%s=%s: %v", envPassthrough, p, err)
	}
	return b
}
