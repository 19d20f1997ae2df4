package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	extv1alpha1 "istio.io/api/extensions/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/envoy/manifests"
	"github.com/tokenbudget/tokenbudget/shared/config"
)

// readImage reads the one image of an OCI layout back.
func readImage(t *testing.T, dir string) (v1.Image, v1.Descriptor) {
	t.Helper()
	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	idx, err := p.ImageIndex()
	require.NoError(t, err)
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, m.Manifests, 1)
	img, err := idx.Image(m.Manifests[0].Digest)
	require.NoError(t, err)
	return img, m.Manifests[0]
}

// pluginWasm is what Istio's fetcher takes from a compat image: the plugin.wasm of its only
// layer, which must be an OCI tar+gzip layer.
func pluginWasm(t *testing.T, img v1.Image) []byte {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1, "the compat variant has exactly one layer")
	mt, err := layers[0].MediaType()
	require.NoError(t, err)
	require.Equal(t, types.OCILayer, mt)
	rc, err := layers[0].Compressed()
	require.NoError(t, err)
	defer rc.Close()
	gz, err := gzip.NewReader(rc)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	h, err := tr.Next()
	require.NoError(t, err)
	require.Equal(t, PluginFile, h.Name)
	b, err := io.ReadAll(tr)
	require.NoError(t, err)
	_, err = tr.Next()
	require.ErrorIs(t, err, io.EOF, "plugin.wasm is the layer's only file")
	return b
}

// untar extracts an oci-archive into a directory.
func untar(t *testing.T, path string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		require.NoError(t, err)
		dst := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			require.NoError(t, os.MkdirAll(dst, 0o755))
			continue
		}
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, b, 0o644))
	}
}

func TestTheImageCarriesTheModuleAndTheWasmPluginPinsItsDigest(t *testing.T) {
	root, err := wasmbuild.Root()
	require.NoError(t, err)
	module := wasmbuild.Filter(t)
	wasm := filepath.Join(t.TempDir(), "filter.wasm")
	require.NoError(t, os.WriteFile(wasm, module, 0o644))
	out := t.TempDir()
	const ref = "registry.example:5000/team/tokenbudget:1.2.3"
	var stdout bytes.Buffer
	require.NoError(t, run([]string{"--wasm", wasm, "--ref", ref,
		"--layout", filepath.Join(out, "oci"), "--tar", filepath.Join(out, "oci.tar"),
		"--digest-file", filepath.Join(out, "oci.digest"),
		"--wasmplugin", filepath.Join(root, "envoy", "istio", "wasmplugin.yaml"),
		"--wasmplugin-out", filepath.Join(out, "istio", "wasmplugin.yaml")}, &stdout))

	img, desc := readImage(t, filepath.Join(out, "oci"))
	require.Equal(t, module, pluginWasm(t, img), "the layer holds the module byte for byte")
	require.Equal(t, "1.2.3", desc.Annotations["org.opencontainers.image.ref.name"])
	m, err := img.Manifest()
	require.NoError(t, err)
	require.Equal(t, types.OCIManifestSchema1, m.MediaType)
	require.Equal(t, "compat", m.Annotations[VariantAnnotation])
	digest, err := img.Digest()
	require.NoError(t, err)
	require.Equal(t, desc.Digest, digest)

	written, err := os.ReadFile(filepath.Join(out, "oci.digest"))
	require.NoError(t, err)
	require.Equal(t, digest.String()+"\n", string(written))
	require.Equal(t, ref+" "+digest.String()+"\n", stdout.String())

	fromTar, _ := readImage(t, untar(t, filepath.Join(out, "oci.tar")))
	tarDigest, err := fromTar.Digest()
	require.NoError(t, err)
	require.Equal(t, digest, tarDigest, "the tarball is the same image")
	require.Equal(t, module, pluginWasm(t, fromTar))

	// The generated WasmPlugin is still a valid one, pulls this image and pins its digest, which is
	// what Istio compares sha256 with for an oci:// url.
	pinned, err := os.ReadFile(filepath.Join(out, "istio", "wasmplugin.yaml"))
	require.NoError(t, err)
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(pinned, &obj))
	var wp extv1alpha1.WasmPlugin
	require.NoError(t, protojson.Unmarshal(obj.Spec, &wp))
	require.Equal(t, "oci://"+ref, wp.GetUrl())
	require.Equal(t, digest.Hex, wp.GetSha256())
	require.NotContains(t, string(pinned), PlaceholderSHA256)
	src, err := os.ReadFile(filepath.Join(root, "envoy", "istio", "wasmplugin.yaml"))
	require.NoError(t, err)
	require.Equal(t, strings.Count(string(src), "\n"), strings.Count(string(pinned), "\n"), "only two lines change")
	requireDeployable(t, &wp, pinned)
}

// requireDeployable holds the WasmPlugin `make oci` writes to what a cluster needs of it:
// Istio applies it to the ingress gateway it selects (a gateway's listeners are CLIENT, see
// envoy/manifests), and it carries no secret: no sharedstore token, no raw API key.
func requireDeployable(t *testing.T, wp *extv1alpha1.WasmPlugin, text []byte) {
	t.Helper()
	require.True(t, manifests.SelectsLabels(wp, map[string]string{"istio": "ingressgateway"}))
	require.True(t, manifests.WasmPluginAttaches(wp, manifests.Gateway, 8080), "Istio applies it to the gateway's listener")
	raw, err := protojson.Marshal(wp.GetPluginConfig())
	require.NoError(t, err)
	c, err := config.Check(raw)
	require.NoError(t, err)
	require.NotNil(t, c.RateLimiting.Redis)
	require.Empty(t, c.RateLimiting.Redis.Token, "no sharedstore token in the WasmPlugin")
	require.NotEmpty(t, c.RateLimiting.Redis.TokenEnv, "the token comes from the gateway's environment")
	require.NotEmpty(t, c.APIKeys)
	for i, k := range c.APIKeys {
		require.True(t, strings.HasPrefix(k.Key, "sha256:"), "api_keys[%d] is a hash, not a key", i)
	}
	for _, secret := range []string{"sk-", "replace-with", `"token"`} {
		require.NotContains(t, string(raw), secret, "the plugin config holds no secret")
	}
	require.NotContains(t, string(text), "\n        token: ", "no token line anywhere in the resource")
}

func TestOneModuleAlwaysGivesOneDigest(t *testing.T) {
	module := wasmbuild.Filter(t)
	a, err := Image(module)
	require.NoError(t, err)
	b, err := Image(append([]byte(nil), module...))
	require.NoError(t, err)
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	require.Equal(t, da, db)
	changed := append(append([]byte(nil), module...), 0) // a different module, a different image
	c, err := Image(changed)
	require.NoError(t, err)
	dc, err := c.Digest()
	require.NoError(t, err)
	require.NotEqual(t, da, dc)
}

func TestBadInputsAreRefused(t *testing.T) {
	_, err := Image([]byte("not wasm at all"))
	require.ErrorContains(t, err, "not a Wasm binary")
	_, err = PinWasmPlugin([]byte("spec:\n  url: oci://x\n"), "oci://y", "ab")
	require.ErrorContains(t, err, "placeholder", "a manifest without the placeholder is not pinned silently")
	_, err = PinWasmPlugin([]byte("spec:\n  sha256: \""+PlaceholderSHA256+"\"\n"), "oci://y", "ab")
	require.ErrorContains(t, err, "spec.url")
	require.ErrorContains(t, run([]string{"--wasmplugin", "x"}, io.Discard), "go together")
	require.ErrorContains(t, run([]string{"--ref", "Not A Ref"}, io.Discard), "--ref")
}

// What Istio's fetcher does with a WasmPlugin url: pull the image from a registry by tag, check
// the manifest digest against sha256, take plugin.wasm from the single tar+gzip layer.
func TestAPushedImagePullsBackWithTheSameDigestAndModule(t *testing.T) {
	module := wasmbuild.Filter(t)
	img, err := Image(module)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "oci")
	require.NoError(t, WriteLayout(dir, img, "0.1.0"))
	local, _ := readImage(t, dir)

	reg := httptest.NewServer(registry.New())
	defer reg.Close()
	ref, err := name.NewTag(strings.TrimPrefix(reg.URL, "http://") + "/tokenbudget:0.1.0")
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, local))

	pulled, err := remote.Image(ref)
	require.NoError(t, err)
	want, err := img.Digest()
	require.NoError(t, err)
	got, err := pulled.Digest()
	require.NoError(t, err)
	require.Equal(t, want, got, "the digest make oci writes is the one Istio sees")
	require.Equal(t, module, pluginWasm(t, pulled))
}
