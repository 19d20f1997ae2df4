package wasmbuild

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var wasmMagic = []byte{0, 'a', 's', 'm', 1, 0, 0, 0}

func TestRootIsTheDirectoryHoldingOurGoMod(t *testing.T) {
	root, err := Root()
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.True(t, isOurModule(mod))
}

func TestBuildCompilesOncePerPackage(t *testing.T) {
	first := Passthrough(t)
	require.Equal(t, wasmMagic, first[:8])
	second := Build(t, passthroughPkg)
	require.Same(t, &first[0], &second[0], "a second call must reuse the first build")
}

func TestPathWritesTheModuleForLoadersThatReadFiles(t *testing.T) {
	p := Path(t, passthroughPkg)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, Passthrough(t), got)
}

func TestFilterHonoursPrebuiltModule(t *testing.T) {
	p := filepath.Join(t.TempDir(), "prebuilt.wasm")
	require.NoError(t, os.WriteFile(p, wasmMagic, 0o644))
	t.Setenv(EnvFilter, p)
	require.Equal(t, wasmMagic, Filter(t))
}

func TestIsOurModuleRejectsOtherModules(t *testing.T) {
	require.False(t, isOurModule([]byte("module example.com/other\n")))
	require.True(t, isOurModule([]byte("// c\nmodule github.com/tokenbudget/tokenbudget\n\ngo 1.26\n")))
}
