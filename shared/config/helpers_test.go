package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func mustLoad(t *testing.T, raw string) (*Runtime, []string) {
	t.Helper()
	rt, warnings, err := Load([]byte(raw))
	require.NoError(t, err)
	require.NotNil(t, rt)
	return rt, warnings
}

func loadErr(t *testing.T, raw string) string {
	t.Helper()
	_, _, err := Load([]byte(raw))
	require.Error(t, err)
	return err.Error()
}

func limited(c int64) Allowance { return Allowance{Capacity: c} }

var unlimited = Allowance{Unlimited: true}

func sha(raw string) string { return identityHash(raw) }
