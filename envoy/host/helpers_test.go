package host

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	buildMu    sync.Mutex
	builds     = map[string][]byte{}
	buildDir   string
	buildDirMu sync.Once
)

// guestModule builds testdata/<name> with the standard Go toolchain once per test process.
func guestModule(tb testing.TB, name string) []byte {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := builds[name]; ok {
		return b
	}
	buildDirMu.Do(func() {
		d, err := os.MkdirTemp("", "envoyhost-guests")
		require.NoError(tb, err)
		buildDir = d
	})
	out := filepath.Join(buildDir, name+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = filepath.Join("testdata", name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	msg, err := cmd.CombinedOutput()
	require.NoError(tb, err, "build guest %s: %s", name, msg)
	b, err := os.ReadFile(out)
	require.NoError(tb, err)
	builds[name] = b
	return b
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func newTestHost(t *testing.T, mutate func(*Options)) *Host {
	t.Helper()
	clock := &fixedClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	o := Options{Module: guestModule(t, "guest"), PluginConfig: []byte("cfg1"), RootID: "tokenbudget",
		VMID: "vm-" + t.Name(), PluginName: "tb", Now: clock.Now}
	if mutate != nil {
		mutate(&o)
	}
	h, err := New(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// callbackLog returns the "cb ..." lines of one worker (or the canary, -1), in order.
func callbackLog(h *Host, worker int) []string {
	var out []string
	for _, e := range h.Logs() {
		if e.Worker == worker && strings.HasPrefix(e.Message, "cb ") {
			out = append(out, strings.TrimPrefix(e.Message, "cb "))
		}
	}
	return out
}

func logsWith(h *Host, prefix string) []string {
	var out []string
	for _, e := range h.Logs() {
		if strings.HasPrefix(e.Message, prefix) {
			out = append(out, e.Message)
		}
	}
	return out
}

func reqHeaders(action string, extra ...string) Headers {
	h := Headers{{":method", "POST"}, {":path", "/v1/chat?x=1"}, {":authority", "api.example"}, {":scheme", "http"}, {"x-action", action}}
	for i := 0; i+1 < len(extra); i += 2 {
		h = append(h, [2]string{extra[i], extra[i+1]})
	}
	return h
}
