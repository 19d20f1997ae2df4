package bench

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/e2e/bench/internal/callgrind"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
)

// envInstructionRequests sets how many requests each measured phase of
// TestInstructionCountPhasesAdmitEveryRequest runs (default 50), and
// envInstructionConfig which plugin config the filter runs: the two
// dimensions of BenchmarkRequest (default), "six" (six dimensions with
// token budgets) or "six+requests" (and request counts), the shapes
// TestAMeteredRequestMakesFewHostCalls pins.
const (
	envInstructionRequests = "TOKENBUDGET_INSTRUCTION_REQUESTS"
	envInstructionConfig   = "TOKENBUDGET_INSTRUCTION_CONFIG"
)

// TestInstructionCountPhasesAdmitEveryRequest is what `make
// bench-instructions` runs under valgrind's callgrind: for the pass-through
// module and the filter, in the same process, a few warm-up requests, then
// N measured 1 KiB requests (BenchmarkRequest's exchange) between a
// callgrind ZERO_STATS and a DUMP_STATS_AT named after the module, with the
// host's garbage collector off in between (callgrind.Count). Each dump thus
// holds the instructions of exactly N steady-state requests, the host's and
// the guest's, on every thread. Outside valgrind the requests
// to callgrind do nothing and the test checks that every measured request
// went the filter's whole way (admitted with its x-ratelimit-* headers).
func TestInstructionCountPhasesAdmitEveryRequest(t *testing.T) {
	n := instructionPhaseCount(t)
	// Callgrind pairs the dump with this thread's instructions in order.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, module := range []string{passthrough, filter} {
		d := newDriver(t, module, instructionConfig(t))
		e := exchange{key: "sk-bench", body: chatBody(t, 1<<10, false), chunks: [][]byte{chatResponse(256, 20)}}
		req, resp := e.requestHeaders(), e.responseHeaders()
		for range 10 {
			d.do(e, req, resp, nil)
		}
		outs := make([]outcome, n)
		callgrind.Count(module, func() {
			for i := range n {
				d.do(e, req, resp, &outs[i])
			}
		})
		for _, o := range outs {
			require.Equal(t, 200, o.status)
			if module == filter {
				require.Equal(t, "1000000000000", o.header("x-ratelimit-tokens-limit"))
			}
		}
	}

	// The estimator alone on BenchmarkEstimator's 64 KiB body, natively and
	// in the estvm module: n parses each, dumped as estimator-native and
	// estimator-vm (instructions per parse ÷ 65,536 is per byte).
	body := chatBody(t, 64<<10, false)
	want, err := estimate.Parse(body, 4096)
	require.NoError(t, err)
	vm := newEstimatorVM(t)
	vm.load(t, body)
	require.Equal(t, want.Input, vm.run(t, len(body)))
	got := make([]int64, 2*n)
	callgrind.Count("estimator-native", func() {
		for i := range n {
			r, _ := estimate.Parse(body, 4096)
			got[i] = r.Input
		}
	})
	callgrind.Count("estimator-vm", func() {
		for i := range n {
			got[n+i] = vm.run(t, len(body))
		}
	})
	for _, g := range got {
		require.Equal(t, want.Input, g)
	}

	// And in the VM on 64 KiB of code messages, the text whose escapes
	// and one- or two-byte pieces cost the VM most: estimator-vm-code.
	body = codeBody(t, 64<<10)
	want, err = estimate.Parse(body, 4096)
	require.NoError(t, err)
	vm.load(t, body)
	callgrind.Count("estimator-vm-code", func() {
		for i := range n {
			got[i] = vm.run(t, len(body))
		}
	})
	for _, g := range got[:n] {
		require.Equal(t, want.Input, g)
	}
}

// instructionPhaseCount is how many requests (or streams) each measured
// phase runs: envInstructionRequests, default 50.
func instructionConfig(t *testing.T) string {
	for _, c := range hostCallCases {
		if c.short == os.Getenv(envInstructionConfig) {
			return c.config
		}
	}
	require.Failf(t, "unknown config", "%s=%q: want \"\", \"six\" or \"six+requests\"", envInstructionConfig, os.Getenv(envInstructionConfig))
	return ""
}

func instructionPhaseCount(t *testing.T) int {
	n := 50
	if v := os.Getenv(envInstructionRequests); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	return n
}
