package main

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
)

// staticBinary builds testdata/static as make images builds sharedstore.
func staticBinary(t *testing.T, cgo bool) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "static")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./testdata/static")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	if cgo {
		// A binary that links the C library dynamically, as a cgo build of net does.
		cmd = exec.Command("go", "build", "-o", out, "-ldflags=-linkmode=external", "./testdata/static")
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1")
	}
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	return out
}

// layerFiles lists the one layer's entries, by name.
func layerFiles(t *testing.T, dir string) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	img, desc := readImage(t, dir)
	require.Equal(t, types.OCIManifestSchema1, desc.MediaType)
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	heads, bodies := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		heads[h.Name], bodies[h.Name] = h, b
		require.Zero(t, h.ModTime.Unix(), "%s: every time is the epoch", h.Name)
	}
	return heads, bodies
}

func TestTheSharedstoreImageRunsTheStaticBinaryAsNonRootWithCACertificates(t *testing.T) {
	bin := staticBinary(t, false)
	dir := filepath.Join(t.TempDir(), "oci", "sharedstore")
	var out bytes.Buffer
	require.NoError(t, run([]string{"static", "--binary", bin, "--name", "sharedstore",
		"--ref", "ghcr.io/example/tokenbudget-sharedstore:0.1.0", "--layout", dir}, &out))
	require.Regexp(t, `^ghcr.io/example/tokenbudget-sharedstore:0.1.0 sha256:[0-9a-f]{64}\n$`, out.String())

	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	idx, err := p.ImageIndex()
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Equal(t, "0.1.0", im.Manifests[0].Annotations["org.opencontainers.image.ref.name"])

	img, _ := readImage(t, dir)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "linux", cfg.OS)
	require.Equal(t, "amd64", cfg.Architecture)
	require.Equal(t, []string{"/usr/local/bin/sharedstore"}, cfg.Config.Entrypoint, "the Kubernetes manifests pass args only")
	require.Empty(t, cfg.Config.Cmd)
	require.Equal(t, "65532:65532", cfg.Config.User, "runAsNonRoot needs a numeric user")
	require.Contains(t, cfg.Config.ExposedPorts, "8081/tcp")
	require.Zero(t, cfg.Created.Unix())

	heads, bodies := layerFiles(t, dir)
	want, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.Equal(t, want, bodies["usr/local/bin/sharedstore"], "the binary as built")
	require.Equal(t, int64(0o755), heads["usr/local/bin/sharedstore"].Mode)
	ca, err := os.ReadFile(CABundle)
	require.NoError(t, err)
	require.Equal(t, ca, bodies["etc/ssl/certs/ca-certificates.crt"], "the machine's CA bundle, where Go looks for it")
	require.Contains(t, string(bodies["etc/passwd"]), "nonroot:x:65532:65532:")
	require.Contains(t, string(bodies["etc/group"]), "nonroot:x:65532:")
	require.Equal(t, 65532, heads["home/nonroot/"].Uid)
	for name, h := range heads {
		if name != "home/nonroot/" {
			require.Zero(t, h.Uid, "%s is root's, read-only to the user", name)
		}
	}
}

func TestTheSharedstoreImageIsTheSameBytesTwice(t *testing.T) {
	bin := staticBinary(t, false)
	var dirs [2]string
	for i := range dirs {
		dirs[i] = filepath.Join(t.TempDir(), "sharedstore")
		tarPath := dirs[i] + ".tar"
		require.NoError(t, run([]string{"static", "--binary", bin, "--layout", dirs[i], "--tar", tarPath}, io.Discard))
	}
	files := func(dir string) map[string][]byte {
		m := map[string][]byte{}
		require.NoError(t, filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			require.NoError(t, err)
			if !e.IsDir() {
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				rel, _ := filepath.Rel(dir, p)
				m[rel] = b
			}
			return nil
		}))
		return m
	}
	a, b := files(dirs[0]), files(dirs[1])
	require.NotEmpty(t, a)
	require.Equal(t, a, b, "every file of the layout")
	ta, err := os.ReadFile(dirs[0] + ".tar")
	require.NoError(t, err)
	tb, err := os.ReadFile(dirs[1] + ".tar")
	require.NoError(t, err)
	require.Equal(t, ta, tb)
}

func TestTheModuleLayoutKeepsAnotherImagesLayoutBesideIt(t *testing.T) {
	// make images writes build/oci/sharedstore inside make oci's build/oci: writing either
	// leaves the other, and build/oci.tar packs the module's layout only.
	bin := staticBinary(t, false)
	root := filepath.Join(t.TempDir(), "oci")
	inner := filepath.Join(root, "sharedstore")
	wasm := filepath.Join(t.TempDir(), "m.wasm")
	require.NoError(t, os.WriteFile(wasm, []byte("\x00asm\x01\x00\x00\x00"), 0o644))
	require.NoError(t, run([]string{"static", "--binary", bin, "--layout", inner}, io.Discard))
	tarPath := filepath.Join(t.TempDir(), "oci.tar")
	require.NoError(t, run([]string{"--wasm", wasm, "--layout", root, "--tar", tarPath, "--digest-file", ""}, io.Discard))
	readImage(t, inner)
	readImage(t, root)
	untarred := untar(t, tarPath)
	_, err := os.Stat(filepath.Join(untarred, "sharedstore"))
	require.ErrorIs(t, err, fs.ErrNotExist, "the tar holds the module's layout only")
	readImage(t, untarred)
}

func TestTheStaticImageRefusesWhatWouldNotStartOnAnEmptyBase(t *testing.T) {
	bin := staticBinary(t, false)
	static, err := os.ReadFile(bin)
	require.NoError(t, err)
	ca, err := os.ReadFile(CABundle)
	require.NoError(t, err)
	_, err = StaticImage([]byte("#!/bin/sh\necho hi\n"), "x", ca, "8081/tcp")
	require.ErrorContains(t, err, "not an ELF executable")
	_, err = StaticImage(static, "x", []byte("not pem"), "8081/tcp")
	require.ErrorContains(t, err, "no PEM certificate")
	_, err = StaticImage(static, "../x", ca, "8081/tcp")
	require.ErrorContains(t, err, "plain file name")
	if _, err := exec.LookPath("gcc"); err == nil {
		dyn, err := os.ReadFile(staticBinary(t, true))
		require.NoError(t, err)
		_, err = StaticImage(dyn, "x", ca, "8081/tcp")
		require.ErrorContains(t, err, "CGO_ENABLED=0")
	} else {
		// The machine's own programs are dynamically linked Debian binaries.
		dyn, err := os.ReadFile("/bin/sh")
		require.NoError(t, err)
		_, err = StaticImage(dyn, "x", ca, "8081/tcp")
		require.ErrorContains(t, err, "CGO_ENABLED=0")
	}
	require.True(t, strings.HasPrefix(CABundle, "/etc/ssl/certs/"))
}
