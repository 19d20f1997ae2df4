package estimate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAModelIsEstimatedForTheEncodingItsFamilyUses(t *testing.T) {
	for model, want := range map[string]Encoding{
		"gpt-4o": O200k, "gpt-4o-mini": O200k, "chatgpt-4o-latest": O200k, "gpt-4.1-nano": O200k, "gpt-5": O200k,
		"gpt-5.1": O200k, "gpt-5-mini": O200k, "o1": O200k, "o1-preview": O200k, "o3-mini": O200k, "o4-mini": O200k,
		"gpt-oss-120b": O200k, "openai/gpt-4o": O200k, "azure/gpt-4.1": O200k,
		"gpt-4": AnyEncoding, "gpt-4-turbo": AnyEncoding, "gpt-3.5-turbo": AnyEncoding, "gpt-4one": AnyEncoding,
		"o10": AnyEncoding, "claude-sonnet-4-5": AnyEncoding, "": AnyEncoding, "GPT-4O": AnyEncoding, "my-deployment": AnyEncoding,
	} {
		require.Equal(t, want, EncodingOf(model), model)
	}
}

func TestAnO200kModelIsEstimatedForItsEncodingAlone(t *testing.T) {
	const korean = `"서울은 대한민국의 수도이며 인구가 약 천만 명입니다. 회의는 내일 오후 세 시에 시작할 예정입니다."`
	body := func(model string) []byte {
		return []byte(`{"model":"` + model + `","messages":[{"role":"user","content":` + korean + `}],"max_tokens":16}`)
	}
	both, err := Parse(body("gpt-4"), 0)
	require.NoError(t, err)
	own, err := Parse(body("gpt-4o"), 0)
	require.NoError(t, err)
	require.Less(t, own.Input, both.Input, "Hangul costs less in o200k_base than the estimate fitting cl100k_base too")
	_, _, counts, err := parseCounts(body("gpt-4o"), 0)
	require.NoError(t, err)
	require.Equal(t, counts.o200k, own.Input)
	require.Equal(t, both.Input, counts.any, "the model changes which estimate is taken, not the estimates")

	ascii := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"the same in English"}]}`)
	r, _, c, err := parseCounts(ascii, 0)
	require.NoError(t, err)
	require.Equal(t, c.any, c.o200k, "without three-byte characters the encodings are estimated alike")
	require.Equal(t, c.any, r.Input)
}
