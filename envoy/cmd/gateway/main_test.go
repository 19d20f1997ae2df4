package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

func TestBadPluginConfigAtStartFailsWithTheReason(t *testing.T) {
	wasm := wasmbuild.Path(t, "./envoy/gateway/testdata/gwguest")
	cfg := filepath.Join(t.TempDir(), "plugin.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`"reject"`), 0o644))
	err := run([]string{"--wasm", wasm, "--config", cfg, "--listen", "127.0.0.1:0", "--admin", "off", "--upstream", "mock"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "load plugin")
}

func TestMissingModuleFailsBeforeListening(t *testing.T) {
	err := run([]string{"--wasm", filepath.Join(t.TempDir(), "nope.wasm"), "--listen", "127.0.0.1:0", "--admin", "off"})
	require.ErrorContains(t, err, "read module")
}

func TestFlagValuesAreValidated(t *testing.T) {
	cases := [][]string{
		{"--profile", "newest"},
		{"--failure-policy", "maybe"},
		{"--log-level", "loud"},
		{"--cluster", "no-equals-sign"},
		{"--clock-start", "yesterday"},
	}
	for _, args := range cases {
		require.Error(t, run(args), "%v", args)
	}
}

func TestFlagParsersMapToHostValues(t *testing.T) {
	p, err := parseProfile("current")
	require.NoError(t, err)
	require.Equal(t, host.ProfileCurrent, p)
	f, err := parsePolicy("reload")
	require.NoError(t, err)
	require.Equal(t, host.FailReload, f)
	l, err := parseLevel("warn")
	require.NoError(t, err)
	require.Equal(t, host.LevelWarn, l)
	c := clusterFlags{}
	require.NoError(t, c.Set("sharedstore=http://127.0.0.1:8081"))
	require.Equal(t, "http://127.0.0.1:8081", c["sharedstore"])
}

func TestClockStartStartsTheHostClockAtTheInstantAndRunsOn(t *testing.T) {
	real := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := func() time.Time { return real }
	now, err := parseClockStart("2026-09-30T23:59:59Z", fake)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 9, 30, 23, 59, 59, 0, time.UTC), now().UTC())
	real = real.Add(2500 * time.Millisecond)
	require.Equal(t, time.Date(2026, 10, 1, 0, 0, 1, 500_000_000, time.UTC), now().UTC(), "it runs on across midnight")

	none, err := parseClockStart("", fake)
	require.NoError(t, err)
	require.Nil(t, none, "without the flag the host keeps the real clock")
}

func TestStreamIdleTimeoutFlagRejectsNegativeDurations(t *testing.T) {
	require.ErrorContains(t, run([]string{"--stream-idle-timeout", "-1s"}), "must not be negative")
}

// --vm-env is Envoy's vm_config.environment_variables: NAME=VALUE a key_values entry, a bare
// NAME a host_env_keys entry taken from the gateway's own environment.
func TestVMEnvFlagsAreEnvoysEnvironmentVariables(t *testing.T) {
	var e vmEnvFlags
	require.NoError(t, e.Set("A=1"))
	require.NoError(t, e.Set("B=x=y"))
	require.NoError(t, e.Set("FROM_HOST"))
	require.ErrorContains(t, e.Set("A=2"), "given twice")
	require.ErrorContains(t, e.Set("FROM_HOST"), "given twice")
	require.Error(t, e.Set("=v"))
	require.Equal(t, map[string]string{"A": "1", "B": "x=y"}, e.keyValues)
	require.Equal(t, []string{"FROM_HOST"}, e.hostKeys)

	t.Setenv("FROM_HOST", "h")
	env, err := host.VMEnvironment(e.keyValues, e.hostKeys, os.LookupEnv)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"A": "1", "B": "x=y", "FROM_HOST": "h"}, env)

	require.Error(t, run([]string{"--max-request-bytes", "0"}))
	require.ErrorContains(t, run([]string{"--vm-env", "A=1", "--vm-env", "A"}), "given twice")
}

func TestThePluginsLogLinesAreWrittenAsGivenAndTheGatewaysAsLogfmt(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newPluginLines(&b, slog.LevelInfo))
	msg := `tokenbudget: plugin config rejected: error: invalid plugin config: rate_limiting.storage: must be "memory" or "redis", not "etcd"`
	log.Error(msg, "source", "wasm")
	log.Info("gateway: listening", "addr", "127.0.0.1:10000")
	log.Debug("below the level", "source", "wasm")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	require.Regexp(t, `^\[[0-9T:.Z-]+\]\[error\]\[wasm\] `+regexp.QuoteMeta(msg)+`$`, lines[0], "the message as the plugin gave it")
	require.Contains(t, lines[1], `level=INFO msg="gateway: listening" addr=127.0.0.1:10000`)
}
