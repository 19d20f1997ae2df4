package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
)

// envEstimatorWasm names a prebuilt testdata/estvm module.
const envEstimatorWasm = "TOKENBUDGET_ESTVM_WASM"

// estimatorVM is testdata/estvm instantiated in plain wazero (the compiler
// engine, as the host uses) with WASI, no proxy-wasm host.
type estimatorVM struct {
	mod          api.Module
	alloc, parse api.Function
}

func newEstimatorVM(tb testing.TB) *estimatorVM {
	tb.Helper()
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig()
	if dir := os.Getenv(envWasmCache); dir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		require.NoError(tb, err)
		cfg = cfg.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	tb.Cleanup(func() { _ = rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	wasm := []byte(nil)
	if p := os.Getenv(envEstimatorWasm); p != "" {
		// Prebuilt, for runs that must not start a compiler (under valgrind).
		var err error
		wasm, err = os.ReadFile(p)
		require.NoError(tb, err)
	} else {
		wasm = wasmbuild.Build(tb, "./e2e/bench/testdata/estvm")
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	require.NoError(tb, err)
	mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	require.NoError(tb, err)
	vm := &estimatorVM{mod: mod, alloc: mod.ExportedFunction("alloc"), parse: mod.ExportedFunction("parse")}
	require.NotNil(tb, vm.alloc, "estvm exports alloc")
	require.NotNil(tb, vm.parse, "estvm exports parse")
	return vm
}

// load copies body into the module's buffer once; parse then reads it in
// place, so the benchmark loop times only the estimator (and one call).
func (vm *estimatorVM) load(tb testing.TB, body []byte) {
	tb.Helper()
	res, err := vm.alloc.Call(context.Background(), uint64(len(body)))
	require.NoError(tb, err)
	require.True(tb, vm.mod.Memory().Write(uint32(res[0]), body), "body fits in linear memory")
}

func (vm *estimatorVM) run(tb testing.TB, n int) int64 {
	res, err := vm.parse.Call(context.Background(), uint64(n))
	if err != nil {
		tb.Fatal(err)
	}
	return int64(res[0])
}

func TestEstimatorModuleAgreesWithTheNativeEstimator(t *testing.T) {
	vm := newEstimatorVM(t)
	for _, bs := range bodySizes {
		body := chatBody(t, bs.size, false)
		want, err := estimate.Parse(body, 4096)
		require.NoError(t, err)
		vm.load(t, body)
		require.Equal(t, want.Input, vm.run(t, len(body)), bs.name)
	}
	vm.load(t, []byte(`[1,2]`))
	require.Equal(t, int64(-1), vm.run(t, 5), "a body that is not an object")
}

// BenchmarkEstimator is estimate.Parse's throughput natively and inside
// wazero on the same bodies; `benchstat -col /vm` gives the VM's cost as a
// ratio. One wazero call per op is included, negligible beside a parse.
// The machine is shared, so the median op (p50-MB/s) is the steadier
// figure.
func BenchmarkEstimator(b *testing.B) {
	vm := newEstimatorVM(b)
	for _, where := range []string{"native", "wazero"} {
		b.Run("vm="+where, func(b *testing.B) {
			for _, bs := range bodySizes {
				b.Run("body="+bs.name, func(b *testing.B) {
					body := chatBody(b, bs.size, false)
					parse := func() int64 {
						r, err := estimate.Parse(body, 4096)
						if err != nil {
							b.Fatal(err)
						}
						return r.Input
					}
					if where == "wazero" {
						vm.load(b, body)
						parse = func() int64 { return vm.run(b, len(body)) }
					}
					b.SetBytes(int64(len(body)))
					b.ReportAllocs()
					took := make([]time.Duration, b.N)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						start := time.Now()
						if parse() <= 0 {
							b.Fatal("no estimate")
						}
						took[i] = time.Since(start)
					}
					b.StopTimer()
					p50 := median(took)
					b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns/op")
					b.ReportMetric(float64(len(body))/p50.Seconds()/1e6, "p50-MB/s")
				})
			}
		})
	}
}
