package abi

import (
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
