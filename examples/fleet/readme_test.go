package fleet

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

// readmeBlock is the first ```sh block after a README heading.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	readme := string(read(t, "README.md"))
	i := strings.Index(readme, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, heading)
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme[i:])
	require.NotNil(t, m, heading)
	return m[1]
}

// spendFigures is the admin API's spend report.
type spendFigures struct {
	Figures []struct {
		Scope        string `json:"scope"`
		ID           string `json:"id"`
		ConfirmedUSD string `json:"confirmed_usd"`
	} `json:"figures"`
}

func confirmed(t *testing.T, body string) bool {
	t.Helper()
	var r spendFigures
	if json.Unmarshal([]byte(body), &r) != nil {
		return false
	}
	for _, f := range r.Figures {
		if f.Scope == "team" && f.ConfirmedUSD != "" && strings.Trim(f.ConfirmedUSD, "0.") != "" {
			return true
		}
	}
	return false
}

// The README's "Running the pieces yourself", run by bash as written, with the machine's
// fixed ports, Redis, database name and /tmp files swapped for the test's own: sharedstore
// with its admin API, the prices loaded, the worker, a gateway, one request, and the team's
// spend confirmed by the worker.
func TestTheReadmesRunningThePiecesWalkThroughConfirmsSpend(t *testing.T) {
	for _, tool := range []string{"psql", "curl"} {
		redistest.RequireBinary(t, tool)
	}
	block := readmeBlock(t, "### Running the pieces yourself")
	for _, want := range []string{"--admin-token-file", "PUT localhost:8081/v1/admin/prices", "worker", "/spend?period="} {
		require.Contains(t, block, want, "the walk-through enables the admin API, loads prices and reads the spend")
	}

	work := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(work, "build"), 0o755))
	bin := t.TempDir()
	require.NoError(t, os.Symlink(goBuild(t, bin, "./sharedstore/cmd/sharedstore"), filepath.Join(work, "build", "sharedstore")))
	require.NoError(t, os.Symlink(goBuild(t, bin, "./envoy/cmd/gateway"), filepath.Join(work, "build", "gateway")))
	require.NoError(t, os.WriteFile(filepath.Join(work, "build", "filter.wasm"), wasmbuild.Filter(t), 0o644))
	abs, err := filepath.Abs(filepath.Join(root, "examples"))
	require.NoError(t, err)
	require.NoError(t, os.Symlink(abs, filepath.Join(work, "examples")))

	// A database name of the test's own, free for the walk-through's CREATE DATABASE
	// (pgtest drops it at cleanup).
	dbURL, err := url.Parse(pgtest.Database(t))
	require.NoError(t, err)
	dbName := strings.TrimPrefix(dbURL.Path, "/")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "DROP DATABASE "+dbName)
	require.NoError(t, err)
	require.NoError(t, admin.Close(ctx))

	redisAddr := redistest.Start(t)
	store, worker, gw, gwAdmin := redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t)
	script := strings.NewReplacer(
		"make build build/sharedstore build/gateway\n", "", // built above
		"/tmp/store.token", filepath.Join(work, "store.token"),
		"/tmp/admin.token", filepath.Join(work, "admin.token"),
		"tokenbudget_pieces", dbName,
		"127.0.0.1:6379", redisAddr,
		"127.0.0.1:8081", store, "localhost:8081", store,
		"127.0.0.1:8082", worker,
		"127.0.0.1:10001", gw, "localhost:10001", gw,
		"127.0.0.1:9902", gwAdmin, "localhost:9902", gwAdmin,
	).Replace(block)
	for _, fixed := range []string{":6379", ":8081", ":8082", ":10001", ":9902", "/tmp/store.token", "/tmp/admin.token"} {
		require.NotContains(t, script, fixed, "every fixed address and path is swapped")
	}

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Files, not pipes: the processes the walk-through leaves in the background keep their
	// output open, and Wait would wait for them too.
	stdoutF, err := os.Create(filepath.Join(work, "stdout"))
	require.NoError(t, err)
	stderrF, err := os.Create(filepath.Join(work, "stderr"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = stdoutF.Close(); _ = stderrF.Close() })
	cmd.Stdout, cmd.Stderr = stdoutF, stderrF
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		// The walk-through leaves sharedstore, the worker and the gateway running in the
		// background, in the script's process group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		time.Sleep(500 * time.Millisecond)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	text := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(work, name))
		return string(b)
	}
	select {
	case err := <-done:
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", text("stdout"), text("stderr"))
	case <-time.After(4 * time.Minute):
		t.Fatalf("the walk-through did not end within 4 minutes:\n%s\n%s", text("stdout"), text("stderr"))
	}
	out := text("stdout")
	require.Contains(t, out, "\n200\n", "the request was admitted:\n%s", out)

	// Its last command is the spend report. The worker runs every 2 s and the walk-through
	// waits 3; on a loaded machine give it longer, asking the same URL.
	last := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	tok, err := os.ReadFile(filepath.Join(work, "admin.token"))
	require.NoError(t, err)
	ask := func() string {
		req, err := http.NewRequest(http.MethodGet, "http://"+store+"/v1/admin/teams/research/spend?period="+time.Now().UTC().Format("200601"), nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+string(tok))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return string(b)
	}
	if !confirmed(t, last) {
		require.Eventually(t, func() bool { return confirmed(t, ask()) }, 30*time.Second, 500*time.Millisecond,
			"the worker confirms the spend: %s", last)
	}
}
