package bench

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/e2e/bench/internal/callgrind"
)

// TestInstructionCountPhasesStreamEveryChunk is the per-chunk figure of
// `make bench-instructions`: for the pass-through module and the filter, in
// the same process, N streamed answers of BenchmarkStreamChunk's 200
// content chunks then the usage chunk (dumped as <module>-stream), and N
// answers of the usage chunk alone (<module>-stream0), each with its
// request. The difference of the two dumps ÷ (N × 200) is one content
// chunk's instructions, host and guest, whatever the request costs.
// Outside valgrind it checks that every stream was admitted.
func TestInstructionCountPhasesStreamEveryChunk(t *testing.T) {
	n := instructionPhaseCount(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, module := range []string{passthrough, filter} {
		d := newDriver(t, module, budgetConfig)
		for _, phase := range []struct {
			name   string
			chunks int
		}{{"-stream", streamedChunks}, {"-stream0", 0}} {
			e := exchange{key: "sk-bench", body: chatBody(t, 1<<10, true), contentType: "text/event-stream",
				chunks: streamChunks(phase.chunks)}
			req, resp := e.requestHeaders(), e.responseHeaders()
			stream := func() {
				s, local := d.open(e, req)
				require.Nil(t, local, "the stream is admitted")
				s.ResponseHeaders(resp, false)
				for j, ch := range e.chunks {
					s.ResponseBody(ch, j == len(e.chunks)-1)
				}
				s.Done()
			}
			for range 10 {
				stream()
			}
			callgrind.Count(module+phase.name, func() {
				for range n {
					stream()
				}
			})
		}
	}
}
