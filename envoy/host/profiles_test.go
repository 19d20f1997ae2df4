package host

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseProfileRoundTripsEveryProfileName(t *testing.T) {
	for _, p := range Profiles {
		got, err := ParseProfile(p.String())
		require.NoError(t, err)
		require.Equal(t, p, got)
	}
	_, err := ParseProfile("newest")
	require.ErrorContains(t, err, "unknown profile")
	t.Setenv(EnvProfile, "envoy-2025")
	p, err := ProfileFromEnv()
	require.NoError(t, err)
	require.Equal(t, ProfileEnvoy2025, p)
	t.Setenv(EnvProfile, "")
	p, err = ProfileFromEnv()
	require.NoError(t, err)
	require.Equal(t, ProfileLegacy, p, "unset means the strictest profile")
}

func TestOnlyTheCurrentProfileOffersPR533sWASIStubs(t *testing.T) {
	for _, tc := range []struct {
		guest   string
		profile Profile
		wantErr string
	}{
		{"pwrite", ProfileLegacy, "missing import: wasi_snapshot_preview1.fd_pwrite"},
		{"pwrite", ProfileEnvoy2025, "missing import: wasi_snapshot_preview1.fd_pwrite"},
		{"pwrite", ProfileCurrent, ""},
		{"wasistubs", ProfileLegacy, "missing import: wasi_snapshot_preview1.clock_res_get"},
		{"wasistubs", ProfileEnvoy2025, "missing import: wasi_snapshot_preview1.clock_res_get"},
		{"wasistubs", ProfileCurrent, ""},
		// cpp-host registers path_symlink with four parameters, WASI (and Go's syscall) has five.
		{"wasisymlink", ProfileCurrent, "import type mismatch: wasi_snapshot_preview1.path_symlink"},
	} {
		t.Run(tc.guest+" on "+tc.profile.String(), func(t *testing.T) {
			h, err := New(context.Background(), Options{Module: guestModule(t, tc.guest), Profile: tc.profile, Workers: 1})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, h.Close(context.Background()))
		})
	}
}

func TestTheInitializeAllowListFollowsTheProfile(t *testing.T) {
	for _, tc := range []struct {
		rule      string
		guest     string
		profile   Profile
		stdio     bool
		wantTrap  string
		wantInLog string
	}{
		{"Go's syscall init (fd_fdstat_get) traps before c4d7bb0", "sleeper", ProfileLegacy, false,
			"restricted_callback: wasi_snapshot_preview1.fd_fdstat_get", ""},
		{"AllowStdioInit lifts that one rule on legacy", "sleeper", ProfileLegacy, true, "", ""},
		{"c4d7bb0 allows fd_fdstat_get and fd_fdstat_set_flags", "sleeper", ProfileEnvoy2025, false, "", ""},
		{"PR #533 keeps allowing them", "sleeper", ProfileCurrent, false, "", ""},
		{"PR #533 allows clock_res_get, poll_oneoff and the stubs during start-up", "wasistubs", ProfileCurrent, false, "",
			"init clock_res_get 0 1 poll_oneoff 0 fd_tell 0"},
		{"sched_yield is on no profile's start-up list (legacy)", "initalloc", ProfileLegacy, false,
			"restricted_callback: wasi_snapshot_preview1.sched_yield", ""},
		{"sched_yield is on no profile's start-up list (envoy-2025)", "initalloc", ProfileEnvoy2025, false,
			"restricted_callback: wasi_snapshot_preview1.sched_yield", ""},
		{"sched_yield is on no profile's start-up list (current)", "initalloc", ProfileCurrent, false,
			"restricted_callback: wasi_snapshot_preview1.sched_yield", ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			o := Options{Module: guestModule(t, tc.guest), Profile: tc.profile, AllowStdioInit: tc.stdio, Workers: 1}
			o.extraHostFns = []hostFn{maybeAlloc(false)}
			h, err := New(context.Background(), o)
			if tc.wantTrap != "" {
				require.ErrorContains(t, err, tc.wantTrap)
				return
			}
			require.NoError(t, err)
			defer h.Close(context.Background())
			if tc.wantInLog != "" {
				require.Contains(t, logsWith(h, "init "), tc.wantInLog)
			}
		})
	}
}

// maybeAlloc is env.test_maybe_alloc for the initalloc guest: allowed during _initialize, it
// makes the host allocate guest memory (as a host call returning data does) when alloc is set.
func maybeAlloc(alloc bool) hostFn {
	return hostFn{module: "env", name: "test_maybe_alloc", results: sig(1), initOK: true, fn: func(v *vm, s []uint64) {
		if alloc {
			v.alloc(16)
		}
		s[0] = 0
	}}
}

func TestAnAllocationDuringStartupLiftsTheRestrictionForTheRestOfIt(t *testing.T) {
	for _, p := range Profiles {
		for _, tc := range []struct {
			alloc    bool
			wantTrap bool
		}{{false, true}, {true, false}} {
			name := p.String() + " without an allocation"
			if tc.alloc {
				name = p.String() + " after an allocation"
			}
			t.Run(name, func(t *testing.T) {
				o := Options{Module: guestModule(t, "initalloc"), Profile: p, Workers: 1}
				o.extraHostFns = []hostFn{maybeAlloc(tc.alloc)}
				h, err := New(context.Background(), o)
				if tc.wantTrap {
					require.ErrorContains(t, err, "restricted_callback: wasi_snapshot_preview1.sched_yield")
					return
				}
				require.NoError(t, err, "cpp-host's allocMemory ends with setRestrictedCallback(false)")
				defer h.Close(context.Background())
				// The canary and the worker each ran _initialize to its end.
				require.Len(t, logsWith(h, "init done"), 2)
			})
		}
	}
}

func TestCurrentProfileStubsAnswerAsCppHost(t *testing.T) {
	h, err := New(context.Background(), Options{Module: guestModule(t, "wasistubs"), Profile: ProfileCurrent, Workers: 1})
	require.NoError(t, err)
	defer h.Close(context.Background())
	for _, tc := range []struct {
		action, want string
		logLevel     Level
		logLine      string
	}{
		{"fd_filestat_get", "8 written 0", 0, ""},
		{"path_filestat_get", "58 written 0", 0, ""},
		{"fd_pwrite 1", "0 written 10", LevelInfo, "to stdout"},
		{"fd_pwrite 2", "0 written 9", LevelError, "to stderr"},
		{"fd_pwrite 3", "8 written 0", 0, ""},
		{"fd_pread", "52 written 0", 0, ""},
		{"fd_tell 3", "8 written 0", 0, ""},
		{"sock_accept", "58 written 0", 0, ""},
		{"sock_recv", "58 written 0", 0, ""},
		{"sock_send", "58 written 0", 0, ""},
		{"sock_shutdown", "58 written 0", 0, ""},
		{"fd_readdir", "20 written 0", 0, ""},
		{"fd_advise", "0 written 0", 0, ""},
		{"fd_sync", "8 written 0", 0, ""},
		{"fd_renumber", "58 written 0", 0, ""},
		{"path_unlink_file", "58 written 0", 0, ""},
		{"path_symlink", "58 written 0", 0, ""},
	} {
		t.Run(tc.action, func(t *testing.T) {
			before := len(h.Logs())
			s := h.NewStream(StreamInfo{})
			s.RequestHeaders(reqHeaders(tc.action), true)
			s.Done()
			require.Empty(t, h.Traps())
			var got []LogEntry
			for _, e := range h.Logs()[before:] {
				if !strings.HasPrefix(e.Message, "errno ") {
					got = append(got, e)
				}
			}
			require.Contains(t, logsWith(h, "errno "+tc.action+" "), "errno "+tc.action+" "+tc.want)
			if tc.logLine == "" {
				require.Empty(t, got, "the stub answers silently")
				return
			}
			require.Equal(t, []LogEntry{{Level: tc.logLevel, Message: tc.logLine, Worker: 0}}, got, "fd_pwrite to fds 1 and 2 writes like fd_write")
		})
	}
}
