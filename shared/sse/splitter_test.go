package sse

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder keeps every event it is handed and drops those drop selects.
type recorder struct {
	events []string
	drop   func(data []byte) bool
}

func (r *recorder) Event(name, data []byte) bool {
	r.events = append(r.events, string(name)+"|"+string(data))
	return r.drop != nil && r.drop(data)
}

// Reading and forwarding frame alike: the handler sees the same events
// whichever way the splitter runs and wherever the bytes are split, so the
// usage reader and the drop decision read one framing.
func TestForwardAndReadHandTheSameEvents(t *testing.T) {
	t.Parallel()
	in := "event: a\ndata: 1\ndata: 2\n\n: c\r\n\r\ndata\n\n" + content + usageOnly + "data: x\rdata: y\r\r" + done
	var whole recorder
	var s Splitter
	s.Read([]byte(in), &whole)
	require.Equal(t, []string{"a|1\n2", "|", "|" + strings.TrimSuffix(content[6:], "\n\n"),
		"|" + strings.TrimSuffix(usageOnly[6:], "\n\n"), "|x\ny", "|[DONE]"}, whole.events)
	for i := 0; i <= len(in); i++ {
		var read, fwd recorder
		var r, f Splitter
		r.Read([]byte(in[:i]), &read)
		r.Read([]byte(in[i:]), &read)
		out := string(f.Forward(nil, []byte(in[:i]), false, &fwd))
		out += string(f.Forward(nil, []byte(in[i:]), true, &fwd))
		require.Equal(t, whole.events, read.events, "split %d", i)
		require.Equal(t, whole.events, fwd.events, "split %d", i)
		require.Equal(t, in, out, "split %d: nothing dropped, every byte forwarded", i)
	}
}

// The common chunk (whole events, none dropped) is forwarded as the same
// slice: no copy per chunk.
func TestAChunkOfWholeKeptEventsIsForwardedWithoutACopy(t *testing.T) {
	t.Parallel()
	var s Splitter
	chunk := []byte(content + content)
	out := s.Forward(nil, chunk, false, &recorder{})
	require.Equal(t, &chunk[0], &out[0])
	require.Len(t, out, len(chunk))
}

// A dropped event takes its whole terminator with it, also the LF of a CRLF
// that arrives in the next write.
func TestADroppedEventTakesTheLFOfItsSplitCRLF(t *testing.T) {
	t.Parallel()
	var s Splitter
	h := &recorder{drop: IsOpenAIUsageOnlyChunk}
	u := strings.ReplaceAll(usageOnly, "\n", "\r\n")
	out := string(s.Forward(nil, []byte(u[:len(u)-1]), false, h))
	out += string(s.Forward(nil, []byte("\n"+done), true, h))
	require.Equal(t, done, out)
}

func FuzzSplitterFramesAlikeAtEverySplit(f *testing.F) {
	f.Add([]byte(content+usageOnly+done), 5)
	f.Add([]byte("data: x\r\n\r\ndata: y\r\r"), 9)
	f.Fuzz(func(t *testing.T, in []byte, split int) {
		if split < 0 || split > len(in) {
			split = len(in) / 2
		}
		var whole, parts recorder
		var w, p Splitter
		w.Read(in, &whole)
		dropAll := &recorder{drop: func([]byte) bool { return true }}
		out := string(p.Forward(nil, in[:split], false, &parts))
		out += string(p.Forward(nil, in[split:], true, &parts))
		require.Equal(t, whole.events, parts.events)
		require.Equal(t, string(in), out)
		var d Splitter
		dropped := string(d.Forward(nil, in[:split], false, dropAll))
		dropped += string(d.Forward(nil, in[split:], true, dropAll))
		require.LessOrEqual(t, len(dropped), len(in))
	})
}
