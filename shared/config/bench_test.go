package config

import (
	"os"
	"path/filepath"
	"testing"
)

func BenchmarkPerRequestLookups(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "configs", "tiers.json"))
	if err != nil {
		b.Fatal(err)
	}
	rt, _, err := Load(raw)
	if err != nil {
		b.Fatal(err)
	}
	h := sha("sk-pro-batch")
	a := mustAddrB(b, "203.0.113.9")
	b.ReportAllocs()
	for b.Loop() {
		if rt.Exempt(a, h) {
			b.Fatal("exempt")
		}
		_ = rt.APIKeyRules(rt.Key(h))
		_, _ = rt.Model("claude-4")
	}
}

func BenchmarkLoadTiersExample(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "configs", "tiers.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Load(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseTiersExample is the decoder alone (jsonx + reflection).
func BenchmarkParseTiersExample(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "configs", "tiers.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseTiersExampleEncodingJSON is the encoding/json implementation
// the decoder replaced, kept as the baseline.
func BenchmarkParseTiersExampleEncodingJSON(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "configs", "tiers.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseReference(raw); err != nil {
			b.Fatal(err)
		}
	}
}
