// Command ociimage packs the filter's .wasm as an OCI image Istio can pull (WasmPlugin
// url: oci://...), and writes the WasmPlugin that pins it:
//
//	ociimage --wasm build/filter.wasm --ref ghcr.io/example/tokenbudget:0.1.0 \
//	    --layout build/oci --tar build/oci.tar --digest-file build/oci.digest \
//	    --wasmplugin envoy/istio/wasmplugin.yaml --wasmplugin-out build/istio/wasmplugin.yaml
//
// The image is the "compat" variant of the Wasm image specification: one
// application/vnd.oci.image.layer.v1.tar+gzip layer holding plugin.wasm, and the manifest
// annotation module.wasm.image/variant=compat. Istio's fetcher tries that variant first, and,
// unlike the artifact variant's custom media types, every registry and every image tool (crane,
// skopeo, docker, podman) stores and copies it. The image is reproducible: no timestamps, so one
// module always gives one digest.
//
// --layout is an OCI image layout directory (index.json names the image by --ref's tag);
// --tar is the same layout as one tar file (an "oci-archive"), which keeps the manifest bytes and
// so the digest. Istio checks a WasmPlugin's sha256 against the pulled image's manifest digest
// (for an oci:// url it is not the module's own sha256), so --wasmplugin-out is the WasmPlugin of
// --wasmplugin with url set to oci://--ref and sha256 set to that digest; the checked-in manifest
// carries a placeholder (all zeros) that a pull would refuse.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// PluginFile is the file the compat variant's layer must hold.
	PluginFile = "plugin.wasm"
	// VariantAnnotation marks an OCI-media-type image as the compat variant.
	VariantAnnotation = "module.wasm.image/variant"
	// PlaceholderSHA256 is the checked-in WasmPlugin's sha256 until the image is built.
	PlaceholderSHA256 = "0000000000000000000000000000000000000000000000000000000000000000"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "static" {
		return runStatic(args[1:], stdout)
	}
	fs := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	wasm := fs.String("wasm", "build/filter.wasm", "the proxy-wasm module")
	ref := fs.String("ref", "ghcr.io/example/tokenbudget:0.1.0", "the image reference the WasmPlugin pulls (its tag names the image in the layout)")
	dir := fs.String("layout", "build/oci", "OCI image layout directory to write (replaced)")
	tarPath := fs.String("tar", "build/oci.tar", `the layout as one tar file ("" to skip)`)
	digestFile := fs.String("digest-file", "build/oci.digest", `file to write the manifest digest to ("" to skip)`)
	plugin := fs.String("wasmplugin", "", "WasmPlugin manifest to pin to the image")
	pluginOut := fs.String("wasmplugin-out", "", "where to write the pinned WasmPlugin (with --wasmplugin)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if (*plugin == "") != (*pluginOut == "") {
		return errors.New("--wasmplugin and --wasmplugin-out go together")
	}
	r, err := name.NewTag(*ref)
	if err != nil {
		return fmt.Errorf("--ref %q: %w", *ref, err)
	}
	module, err := os.ReadFile(*wasm)
	if err != nil {
		return err
	}
	img, err := Image(module)
	if err != nil {
		return err
	}
	d, err := writeImage(img, r.TagStr(), *dir, *tarPath, *digestFile)
	if err != nil {
		return err
	}
	if *plugin != "" {
		src, err := os.ReadFile(*plugin)
		if err != nil {
			return err
		}
		out, err := PinWasmPlugin(src, "oci://"+r.String(), d.Hex)
		if err != nil {
			return fmt.Errorf("%s: %w", *plugin, err)
		}
		if err := os.MkdirAll(filepath.Dir(*pluginOut), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(*pluginOut, out, 0o644); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(stdout, "%s %s\n", r.String(), d.String())
	return err
}

// Image is the compat-variant image of a module: one gzipped tar layer holding plugin.wasm.
func Image(module []byte) (v1.Image, error) {
	if len(module) < 8 || !bytes.Equal(module[:4], []byte("\x00asm")) {
		return nil, errors.New("not a Wasm binary (no \\0asm magic)")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// Zero times and ids: the same module gives the same layer, and so the same digest.
	if err := tw.WriteHeader(&tar.Header{Name: PluginFile, Mode: 0o444, Size: int64(len(module)),
		Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(module); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerTar := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "wasip1", "wasm"
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, map[string]string{VariantAnnotation: "compat"}).(v1.Image), nil
}

// writeImage writes img as the layout dir (named tag), and as the tar and the digest file
// when they are not "", and returns its manifest digest.
func writeImage(img v1.Image, tag, dir, tarPath, digestFile string) (v1.Hash, error) {
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	if err := WriteLayout(dir, img, tag); err != nil {
		return v1.Hash{}, err
	}
	if tarPath != "" {
		if err := TarDir(dir, tarPath); err != nil {
			return v1.Hash{}, err
		}
	}
	if digestFile != "" {
		if err := os.WriteFile(digestFile, []byte(d.String()+"\n"), 0o644); err != nil {
			return v1.Hash{}, err
		}
	}
	return d, nil
}

// layoutFiles are the entries of an OCI image layout directory. WriteLayout
// replaces these and TarDir packs these only, so a layout directory can hold
// another image's layout beside them (build/oci/sharedstore in build/oci).
var layoutFiles = []string{"blobs", "index.json", "oci-layout"}

// WriteLayout replaces dir's OCI image layout with one holding img, named tag in index.json.
func WriteLayout(dir string, img v1.Image, tag string) error {
	for _, f := range layoutFiles {
		if err := os.RemoveAll(filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
	}))
}

// TarDir writes dir's layout files into one tar at path, in name order with zero times, so the archive
// is as reproducible as the layout.
func TarDir(dir, path string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if top, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); !slices.Contains(layoutFiles, top) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range files {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return errors.Join(err, f.Close())
		}
		st, err := os.Stat(p)
		if err != nil {
			return errors.Join(err, f.Close())
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Typeflag: tar.TypeReg, Size: st.Size(), Format: tar.FormatPAX}
		if st.IsDir() {
			h.Name += "/"
			h.Mode, h.Typeflag, h.Size = 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return errors.Join(err, f.Close())
		}
		if !st.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return errors.Join(err, f.Close())
			}
			if _, err := tw.Write(b); err != nil {
				return errors.Join(err, f.Close())
			}
		}
	}
	return errors.Join(tw.Close(), f.Close())
}

var (
	urlLine    = regexp.MustCompile(`(?m)^(  url: ).*$`)
	sha256Line = regexp.MustCompile(`(?m)^(  sha256: )"?` + PlaceholderSHA256 + `"?(.*)$`)
)

// PinWasmPlugin rewrites a WasmPlugin's spec.url and its placeholder spec.sha256 line, leaving
// every other byte (comments included) as written.
func PinWasmPlugin(src []byte, url, sha string) ([]byte, error) {
	if len(urlLine.FindAll(src, -1)) != 1 {
		return nil, errors.New("want exactly one spec.url line (\"  url: ...\")")
	}
	if len(sha256Line.FindAll(src, -1)) != 1 {
		return nil, errors.New("want exactly one spec.sha256 line holding the placeholder " + PlaceholderSHA256)
	}
	out := urlLine.ReplaceAll(src, []byte("${1}"+url))
	out = sha256Line.ReplaceAll(out, []byte(`${1}"`+sha+`"${2}`))
	if strings.Contains(string(out), PlaceholderSHA256) {
		return nil, errors.New("the placeholder digest appears more than once")
	}
	return out, nil
}
