package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

// Envoy's legacy host profile (docs/envoy-wasi.md): a module importing anything
// else fails to load with "missing import". A signature is "params>results"
// with i for i32 and I for i64; Envoy also refuses a mismatched signature.
// An empty signature means "not checked".
var legacyEnv = map[string]string{
	"proxy_log": "iii>i", "proxy_get_status": "iii>i", "proxy_set_property": "iiii>i",
	"proxy_get_property": "iiii>i", "proxy_send_local_response": "iiiiiiii>i",
	"proxy_get_shared_data": "iiiii>i", "proxy_set_shared_data": "iiiii>i",
	"proxy_register_shared_queue": "iii>i", "proxy_resolve_shared_queue": "iiiii>i",
	"proxy_dequeue_shared_queue": "iii>i", "proxy_enqueue_shared_queue": "iii>i",
	"proxy_get_header_map_value": "iiiii>i", "proxy_add_header_map_value": "iiiii>i",
	"proxy_replace_header_map_value": "iiiii>i", "proxy_remove_header_map_value": "iii>i",
	"proxy_get_header_map_pairs": "iii>i", "proxy_set_header_map_pairs": "iii>i",
	"proxy_get_header_map_size": "iii>i", "proxy_get_buffer_status": "iii>i",
	"proxy_get_buffer_bytes": "iiiii>i", "proxy_set_buffer_bytes": "iiiii>i",
	"proxy_http_call": "iiiiiiiiii>i", "proxy_grpc_call": "", "proxy_grpc_stream": "",
	"proxy_grpc_close": "i>i", "proxy_grpc_cancel": "i>i", "proxy_grpc_send": "iiii>i",
	"proxy_set_tick_period_milliseconds": "i>i", "proxy_get_current_time_nanoseconds": "i>i",
	"proxy_define_metric": "iiii>i", "proxy_increment_metric": "iI>i", "proxy_record_metric": "iI>i",
	"proxy_get_metric": "ii>i", "proxy_set_effective_context": "i>i", "proxy_done": ">i",
	"proxy_call_foreign_function": "", "proxy_continue_stream": "i>i", "proxy_close_stream": "i>i",
	"proxy_get_log_level": "i>i", "pthread_equal": "", "emscripten_notify_memory_growth": "",
	"envoy_resolve_dns": "",
}

// The 18 WASI functions Envoy shipped before mid-2026, under both names.
var legacyWASI = []string{
	"fd_write", "fd_read", "fd_seek", "fd_close", "fd_fdstat_get", "fd_fdstat_set_flags",
	"environ_get", "environ_sizes_get", "args_get", "args_sizes_get", "clock_time_get",
	"random_get", "sched_yield", "poll_oneoff", "proc_exit", "path_open", "fd_prestat_get",
	"fd_prestat_dir_name",
}

// Exports the host needs, with the ABI v0.2.1 signatures cpp-host checks.
var requiredExports = map[string]string{
	"_initialize":                 ">",
	"proxy_abi_version_0_2_1":     ">",
	"proxy_on_memory_allocate":    "i>i",
	"proxy_on_context_create":     "ii>",
	"proxy_on_vm_start":           "ii>i",
	"proxy_on_configure":          "ii>i",
	"proxy_on_tick":               "i>",
	"proxy_on_http_call_response": "iiiii>",
	"proxy_on_request_headers":    "iii>i",
	"proxy_on_request_body":       "iii>i",
	"proxy_on_request_trailers":   "ii>i",
	"proxy_on_response_headers":   "iii>i",
	"proxy_on_response_body":      "iii>i",
	"proxy_on_response_trailers":  "ii>i",
	"proxy_on_log":                "i>",
	"proxy_on_done":               "i>i",
	"proxy_on_delete":             "i>",
}

var modules = []struct {
	name string
	pkg  string
	wasm func(testing.TB) []byte
}{
	{"filter", "./filter", wasmbuild.Filter},
	{"passthrough", "./examples/passthrough", wasmbuild.Passthrough},
}

func signature(f api.FunctionDefinition) string {
	var b strings.Builder
	for _, t := range f.ParamTypes() {
		b.WriteString(valueType(t))
	}
	b.WriteByte('>')
	for _, t := range f.ResultTypes() {
		b.WriteString(valueType(t))
	}
	return b.String()
}

func valueType(t api.ValueType) string {
	switch t {
	case api.ValueTypeI32:
		return "i"
	case api.ValueTypeI64:
		return "I"
	default:
		return api.ValueTypeName(t)
	}
}

func compile(t *testing.T, wasm []byte) wazero.CompiledModule {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { _ = rt.Close(ctx) })
	cm, err := rt.CompileModule(ctx, wasm)
	require.NoError(t, err)
	return cm
}

func TestModulesImportOnlyWhatEnvoysLegacyHostProvides(t *testing.T) {
	wasi := map[string]bool{}
	for _, n := range legacyWASI {
		wasi[n] = true
	}
	for _, m := range modules {
		t.Run(m.name, func(t *testing.T) {
			cm := compile(t, m.wasm(t))
			for _, f := range cm.ImportedFunctions() {
				mod, name, _ := f.Import()
				switch mod {
				case "env":
					want, ok := legacyEnv[name]
					require.True(t, ok, "env.%s is not in Envoy's legacy host", name)
					if want != "" {
						require.Equal(t, want, signature(f), "signature of env.%s", name)
					}
				case "wasi_snapshot_preview1", "wasi_unstable":
					require.True(t, wasi[name], "%s.%s is not in Envoy's legacy WASI list", mod, name)
				default:
					require.Failf(t, "import from a module Envoy does not provide", "%s.%s", mod, name)
				}
			}
		})
	}
}

func TestModulesExportTheProxyWasmEntryPoints(t *testing.T) {
	for _, m := range modules {
		t.Run(m.name, func(t *testing.T) {
			exports := compile(t, m.wasm(t)).ExportedFunctions()
			for name, sig := range requiredExports {
				f, ok := exports[name]
				require.True(t, ok, "missing export %s", name)
				require.Equal(t, sig, signature(f), "signature of export %s", name)
			}
			for name := range exports {
				if strings.HasPrefix(name, "proxy_abi_version_") {
					require.Equal(t, "proxy_abi_version_0_2_1", name, "the first ABI marker wins in Envoy; export only one")
				}
			}
			_, hasMalloc := exports["malloc"]
			require.False(t, hasMalloc, "Envoy prefers malloc over proxy_on_memory_allocate; the binding owns allocation")
		})
	}
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Module     *struct{ Path string }
	GoFiles    []string
	Error      *struct{ Err string }
}

// banned are the packages that link syscall into a wasip1 build (or are
// syscall): Envoy's host allows only a few WASI calls while _initialize runs
// (proxy-wasm-cpp-host WasmBase::startVm), and Go's syscall package calls
// fd_fdstat_get from its init on wasip1, which traps there on the strictest
// hosts. time, os and fmt import it; encoding/json brings reflection-heavy
// init and links os.
var banned = map[string]bool{"syscall": true, "os": true, "time": true, "fmt": true, "encoding/json": true}

// goList runs go list for wasip1 from the module root and decodes each
// package it prints.
func goList(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	root, err := wasmbuild.Root()
	require.NoError(t, err)
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		require.NoError(t, err, string(exit.Stderr))
	}
	require.NoError(t, err)
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
}

const modulePath = "github.com/tokenbudget/tokenbudget"

// No package of the modules — ours or a dependency's — may link syscall.
// The test names the importer, so a new dependency that drags syscall in
// is found at once.
func TestModulesLinkNothingThatCallsWASIDuringInitialize(t *testing.T) {
	for _, m := range modules {
		t.Run(m.name, func(t *testing.T) {
			own := 0
			for _, p := range goList(t, "-deps", m.pkg) {
				for _, imp := range p.Imports {
					require.False(t, banned[imp], "%s imports %s, which links syscall into the module", p.ImportPath, imp)
				}
				if p.Module != nil && p.Module.Path == modulePath {
					own++
				}
			}
			require.Positive(t, own, "go list found none of our packages")
		})
	}
}

// Every package meant for the module stays startable in Envoy even before
// the filter links it: the module's own dependencies, and every package
// under shared/ (which holds no native tool). The list is derived from the
// tree, one subtest per package, failing beside the package that brought
// the import in.
func TestEveryPackageMeantForTheModuleLinksNoSyscall(t *testing.T) {
	meant := map[string]bool{}
	for _, p := range goList(t, "-deps", "./filter") {
		if p.Module != nil && p.Module.Path == modulePath {
			meant[p.ImportPath] = true
		}
	}
	for _, p := range goList(t, "./shared/...") {
		meant[p.ImportPath] = true
	}
	require.Contains(t, meant, modulePath+"/shared/bucket", "the derived list found the shared packages")
	for pkg := range meant {
		t.Run(strings.TrimPrefix(pkg, modulePath+"/"), func(t *testing.T) {
			for _, p := range goList(t, "-deps", pkg) {
				for _, imp := range p.Imports {
					require.False(t, banned[imp], "%s (a dependency of %s) imports %s", p.ImportPath, pkg, imp)
				}
			}
		})
	}
}

// Everything under shared/ is compiled into the module, so every package
// there builds for wasip1: a native tool (a command, a reflection-based
// generator) belongs beside the command that uses it, not in shared/. A
// package whose files are all excluded for wasip1 drops out of a wasip1
// `go list ./shared/...` (and so out of `make vet`'s wasip1 vet) without a
// word, so the native listing is the reference.
func TestEveryPackageUnderSharedBuildsForWasip1(t *testing.T) {
	root, err := wasmbuild.Root()
	require.NoError(t, err)
	cmd := exec.Command("go", "list", "./shared/...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	native := strings.Fields(string(out))
	require.Contains(t, native, modulePath+"/shared/bucket")
	wasip1 := map[string]bool{}
	for _, p := range goList(t, "-e", "./shared/...") {
		if p.Error != nil {
			require.Failf(t, "a package under shared/ does not build for wasip1", "%s: %s", p.ImportPath, p.Error.Err)
		}
		require.NotEmpty(t, p.GoFiles, "%s has no Go file for wasip1", p.ImportPath)
		wasip1[p.ImportPath] = true
	}
	for _, pkg := range native {
		require.True(t, wasip1[pkg], "%s builds natively but not for wasip1: move the native tool out of shared/", pkg)
	}
}
