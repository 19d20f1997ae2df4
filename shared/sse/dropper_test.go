package sse

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

const content = `data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null}` + "\n\n"
const usageOnly = `data: {"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}` + "\n\n"
const done = "data: [DONE]\n\n"

func run(d *Dropper, chunks []string) string {
	var out strings.Builder
	for i, c := range chunks {
		out.Write(d.Write([]byte(c), i == len(chunks)-1))
	}
	return out.String()
}

func TestTheInjectedUsageChunkIsDroppedAtEverySplit(t *testing.T) {
	t.Parallel()
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		fix := func(s string) string { return strings.ReplaceAll(s, "\n", eol) }
		in := fix(content) + fix(content) + fix(usageOnly) + fix(done)
		want := fix(content) + fix(content) + fix(done)
		for i := 0; i <= len(in); i++ {
			for j := i; j <= len(in); j += 7 {
				d := &Dropper{Drop: IsOpenAIUsageOnlyChunk}
				got := run(d, []string{in[:i], in[i:j], in[j:]})
				require.Equal(t, want, got, "eol %q split %d/%d", eol, i, j)
			}
		}
	}
}

func TestEveryOtherByteIsForwardedUnchangedAndInOrder(t *testing.T) {
	t.Parallel()
	in := ": comment\n\nevent: x\ndata: a\ndata: b\nid: 7\n\n" + content + "retry: 10\n\n" + done
	for i := 0; i <= len(in); i++ {
		d := &Dropper{Drop: IsOpenAIUsageOnlyChunk}
		require.Equal(t, in, run(d, []string{in[:i], in[i:]}), "split %d", i)
	}
}

func TestATruncatedStreamForwardsWhatItHeldBackAtTheEnd(t *testing.T) {
	t.Parallel()
	d := &Dropper{Drop: IsOpenAIUsageOnlyChunk}
	require.Equal(t, content+`data: {"partial`, run(d, []string{content, `data: {"partial`}))
}

func TestAnOversizeEventPassesThroughUndecided(t *testing.T) {
	t.Parallel()
	d := &Dropper{Drop: func([]byte) bool { return true }}
	big := "data: " + strings.Repeat("x", maxPending+10)
	out := d.Write([]byte(big), false)
	require.Equal(t, big, string(out), "never buffered without limit")
	out = d.Write([]byte("\n\n"+content), false)
	require.Equal(t, "\n\n", string(out), "the oversize event's end passes, the next event is judged again")
}

func TestOnlyTheUsageOnlyChunkIsSelected(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]bool{
		`{"choices":[],"usage":{"prompt_tokens":1}}`:             true,
		`{"choices":[{"delta":{}}],"usage":{"prompt_tokens":1}}`: false,
		`{"choices":[],"usage":null}`:                            false,
		`[DONE]`:                                                 false,
		`{"choices":[]}`:                                         false,
		`not json`:                                               false,
		`{"choices":[ ],"usage":{"total_tokens":3},"model":"gpt-4o"}`: true,
		`{"choices":[],"usage" :
 {"total_tokens":3}}`: true,
		`{"note":"\"usage\":{","choices":[],"usage":null}`: false,
	} {
		require.Equal(t, want, IsOpenAIUsageOnlyChunk([]byte(data)), data)
	}
}

func FuzzDropperKeepsOrderAndNeverPanics(f *testing.F) {
	f.Add([]byte(content+usageOnly+done), 5)
	f.Add([]byte("data: x\r\n\r\n"), 0)
	f.Fuzz(func(t *testing.T, in []byte, split int) {
		if split < 0 || split > len(in) {
			split = len(in) / 2
		}
		keep := &Dropper{}
		got := string(keep.Write(in[:split], false)) + string(keep.Write(in[split:], true))
		require.Equal(t, string(in), got, "a dropper that drops nothing is the identity")
		d := &Dropper{Drop: IsOpenAIUsageOnlyChunk}
		out := string(d.Write(in[:split], false)) + string(d.Write(in[split:], true))
		require.LessOrEqual(t, len(out), len(in))
	})
}

// The byte scan must never reject what the parser would select.
func FuzzUsagePrefilterNeverRejectsAUsageChunk(f *testing.F) {
	f.Add([]byte(`{"choices":[],"usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`{"usage"  :	{},"choices":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v := jsonx.Parse(data)
		selected := v.Kind == jsonx.Object && v.Get("choices").Kind == jsonx.Array &&
			v.Get("choices").Len() == 0 && v.Get("usage").Kind == jsonx.Object
		if selected {
			require.True(t, mayHoldUsageObject(data), "%s", data)
		}
		require.Equal(t, selected, IsOpenAIUsageOnlyChunk(data))
	})
}
