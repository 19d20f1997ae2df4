package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// pluginLines is the gateway's log handler: its own records go to the
// logfmt handler next, and the plugin's (source=wasm) are written as Envoy
// writes a Wasm log entry, "[time][level][wasm] message", the message as
// the plugin gave it. logfmt would quote a message and escape every quote
// inside it, and a config error names fields in quotes.
type pluginLines struct {
	next  slog.Handler
	mu    *sync.Mutex
	w     io.Writer
	level slog.Leveler
}

func newPluginLines(w io.Writer, level slog.Leveler) *pluginLines {
	return &pluginLines{next: slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}), mu: &sync.Mutex{}, w: w, level: level}
}

func (p *pluginLines) Enabled(ctx context.Context, l slog.Level) bool { return p.next.Enabled(ctx, l) }

func (p *pluginLines) Handle(ctx context.Context, r slog.Record) error {
	wasm := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "source" && a.Value.String() == "wasm" {
			wasm = true
			return false
		}
		return true
	})
	if !wasm {
		return p.next.Handle(ctx, r)
	}
	var b strings.Builder
	b.WriteString("[")
	b.WriteString(r.Time.UTC().Format(time.RFC3339Nano))
	b.WriteString("][")
	b.WriteString(strings.ToLower(r.Level.String()))
	b.WriteString("][wasm] ")
	b.WriteString(r.Message)
	b.WriteString("\n")
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *pluginLines) WithAttrs(as []slog.Attr) slog.Handler {
	return &pluginLines{next: p.next.WithAttrs(as), mu: p.mu, w: p.w, level: p.level}
}

func (p *pluginLines) WithGroup(name string) slog.Handler {
	return &pluginLines{next: p.next.WithGroup(name), mu: p.mu, w: p.w, level: p.level}
}
