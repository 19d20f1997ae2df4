package abi

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAnEnvironmentVariableIsFoundByItsWholeName(t *testing.T) {
	buf := []byte("TOKEN_X=no\x00TOKEN=a=b\x00EMPTY=\x00TOKEN=second\x00LAST=unterminated")
	cases := []struct {
		name, want string
		ok         bool
	}{
		{"TOKEN", "a=b", true},
		{"TOKEN_X", "no", true},
		{"EMPTY", "", true},
		{"LAST", "unterminated", true},
		{"TOK", "", false},
		{"MISSING", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		v, ok := lookupEnv(buf, c.name)
		require.Equal(t, c.ok, ok, c.name)
		require.Equal(t, c.want, v, c.name)
	}
	_, ok := lookupEnv(nil, "TOKEN")
	require.False(t, ok)
}

// The environment comes from the host: any bytes must give an answer, never a panic, and a
// value found is one the buffer holds after the name and "=".
func FuzzLookupEnv(f *testing.F) {
	f.Add([]byte("A=1\x00B=2\x00"), "B")
	f.Add([]byte("=\x00\x00A"), "")
	f.Add([]byte("TOKEN"), "TOKEN")
	f.Fuzz(func(t *testing.T, buf []byte, name string) {
		v, ok := lookupEnv(buf, name)
		if !ok {
			require.Empty(t, v)
			return
		}
		require.NotEmpty(t, name)
		require.True(t, bytes.Contains(append([]byte{0}, buf...), []byte("\x00"+name+"="+v)), "%q in %q", name+"="+v, buf)
	})
}
