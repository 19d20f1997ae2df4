package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The static subcommand packs a statically linked Linux binary (sharedstore,
// built with CGO_ENABLED=0) as a container image on an empty base:
//
//	ociimage static --binary build/sharedstore-linux-amd64 --name sharedstore \
//	    --ref ghcr.io/example/tokenbudget-sharedstore:0.1.0 --layout build/oci/sharedstore
//
// No base image can be pulled where the project is built, and a static Go
// binary needs none: the one layer holds the binary, the CA bundle Go's
// crypto/x509 reads for TLS to Redis or PostgreSQL (/etc/ssl/certs/
// ca-certificates.crt, taken from --ca-certs), and /etc/passwd and
// /etc/group naming the non-root user 65532 ("nonroot", as distroless
// images name it) the image runs as. Every time in the image is the Unix
// epoch and every file is written in one order, so the same inputs give the
// same digest.
const (
	// StaticUID is the user (and group) the image runs as.
	StaticUID = 65532
	// BinDir is where the binary goes; the image's entrypoint is BinDir/--name.
	BinDir = "/usr/local/bin"
	// CABundle is where Go's crypto/x509 looks first on Linux.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// epoch is every timestamp of a static image.
var epoch = time.Unix(0, 0).UTC()

func runStatic(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ociimage static", flag.ContinueOnError)
	bin := fs.String("binary", "", "the statically linked Linux binary (CGO_ENABLED=0)")
	nm := fs.String("name", "sharedstore", "the binary's file name in "+BinDir)
	ref := fs.String("ref", "ghcr.io/example/tokenbudget-sharedstore:0.1.0", "the image reference (its tag names the image in the layout)")
	dir := fs.String("layout", "build/oci/sharedstore", "OCI image layout directory to write (its layout files replaced)")
	tarPath := fs.String("tar", "", `the layout as one tar file ("" to skip)`)
	digestFile := fs.String("digest-file", "", `file to write the manifest digest to ("" to skip)`)
	ca := fs.String("ca-certs", CABundle, "the PEM CA bundle to put at "+CABundle)
	port := fs.String("port", "8081/tcp", "the port the image declares")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *bin == "" {
		return errors.New("usage: ociimage static --binary FILE [--name NAME] [--ref REF] [--layout DIR]")
	}
	r, err := name.NewTag(*ref)
	if err != nil {
		return fmt.Errorf("--ref %q: %w", *ref, err)
	}
	binary, err := os.ReadFile(*bin)
	if err != nil {
		return err
	}
	bundle, err := os.ReadFile(*ca)
	if err != nil {
		return fmt.Errorf("--ca-certs: %w", err)
	}
	img, err := StaticImage(binary, *nm, bundle, *port)
	if err != nil {
		return fmt.Errorf("%s: %w", *bin, err)
	}
	d, err := writeImage(img, r.TagStr(), *dir, *tarPath, *digestFile)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s %s\n", r.String(), d.String())
	return err
}

// StaticImage is the image of one static Linux binary: one layer, the
// entrypoint BinDir/name, user 65532.
func StaticImage(binary []byte, name string, caBundle []byte, port string) (v1.Image, error) {
	arch, err := staticArch(binary)
	if err != nil {
		return nil, err
	}
	if name == "" || path.Base(name) != name {
		return nil, fmt.Errorf("--name %q: want a plain file name", name)
	}
	if !bytes.Contains(caBundle, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, errors.New("--ca-certs holds no PEM certificate")
	}
	entry := path.Join(BinDir, name)
	uid := fmt.Sprint(StaticUID)
	files := []staticFile{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:" + uid + ":\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nonroot:x:" + uid + ":" + uid + ":nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/", dir: true, mode: 0o755},
		{name: CABundle[1:], mode: 0o644, body: caBundle},
		{name: "home/", dir: true, mode: 0o755},
		{name: "home/nonroot/", dir: true, mode: 0o700, uid: StaticUID},
		{name: "usr/", dir: true, mode: 0o755},
		{name: "usr/local/", dir: true, mode: 0o755},
		{name: "usr/local/bin/", dir: true, mode: 0o755},
		{name: entry[1:], mode: 0o755, body: binary},
	}
	layerTar, err := tarOf(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "ociimage static " + name}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config = v1.Config{
		Entrypoint:   []string{entry},
		User:         uid + ":" + uid,
		WorkingDir:   "/",
		Env:          []string{"PATH=" + BinDir, "SSL_CERT_FILE=" + CABundle},
		ExposedPorts: map[string]struct{}{port: {}},
	}
	return mutate.ConfigFile(img, cfg)
}

// staticArch checks the binary is a statically linked Linux ELF executable
// and returns its architecture's GOARCH name. A dynamically linked one (a
// cgo build) would not start on an empty base: there is no libc to load.
func staticArch(binary []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return "", fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", errors.New("dynamically linked (it names an interpreter): build it with CGO_ENABLED=0")
		}
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return "", fmt.Errorf("ELF type %v is not an executable", f.Type)
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return "", fmt.Errorf("ELF OS ABI %v is not Linux", f.OSABI)
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	}
	return "", fmt.Errorf("ELF machine %v: want x86-64 or AArch64", f.Machine)
}

type staticFile struct {
	name string
	dir  bool
	mode int64
	uid  int
	body []byte
}

// tarOf writes files in name order, with epoch times and numeric owners.
func tarOf(files []staticFile) ([]byte, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: epoch, Format: tar.FormatPAX,
			Typeflag: tar.TypeReg, Size: int64(len(f.body))}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
