package fleet

import (
	"bufio"
	"bytes"
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

// freeDatabaseName is a database name of the test's own that no database has yet: pgtest's,
// dropped at once, so a walk-through's CREATE DATABASE can make it (pgtest drops it again at
// cleanup).
func freeDatabaseName(t *testing.T) string {
	t.Helper()
	dbURL, err := url.Parse(pgtest.Database(t))
	require.NoError(t, err)
	name := strings.TrimPrefix(dbURL.Path, "/")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "DROP DATABASE "+name)
	require.NoError(t, err)
	return name
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

	dbName := freeDatabaseName(t) // the walk-through's CREATE DATABASE makes it

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

// fleetRun is one run of examples/fleet/run.sh, up once its banner is printed.
type fleetRun struct {
	cmd    *exec.Cmd
	done   chan error
	banner string
	stderr *bytes.Buffer
}

func startFleet(t *testing.T, env ...string) *fleetRun {
	t.Helper()
	cmd := exec.Command("bash", "examples/fleet/run.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	r := &fleetRun{cmd: cmd, done: make(chan error, 1), stderr: &bytes.Buffer{}}
	cmd.Stderr = r.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
	})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		r.done <- cmd.Wait()
	}()
	deadline := time.After(3 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the script ended before the fleet was up: %s", r.stderr.String())
			r.banner += l + "\n"
			if strings.HasPrefix(l, "  config") {
				go func() {
					for range lines {
					}
				}()
				return r
			}
		case <-deadline:
			t.Fatalf("no fleet after 3 minutes: %s\n%s", r.banner, r.stderr.String())
		}
	}
}

func (r *fleetRun) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-r.done:
		require.NoError(t, err, r.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the fleet did not stop within 30 s of SIGTERM")
	}
}

// The README's "Spend limits and the admin API" walk-through, run by bash against a fleet of
// the script's own, reaches its 429; then `FLEET_FRESH=1 make fleet`, the README's way to start
// afresh, leaves no cached policy behind: the first request is admitted.
func TestTheReadmesSpendWalkThroughRefusesAndAFreshStartAdmitsAgain(t *testing.T) {
	for _, tool := range []string{"redis-cli", "redis-server", "psql", "pg_isready", "curl"} {
		redistest.RequireBinary(t, tool)
	}
	dbName := freeDatabaseName(t) // the script creates it, FLEET_FRESH drops it

	bin := t.TempDir()
	wasm := filepath.Join(bin, "filter.wasm")
	require.NoError(t, os.WriteFile(wasm, wasmbuild.Filter(t), 0o644))
	dir := t.TempDir()
	redisAddr := redistest.FreeAddr(t)
	store, worker, gw1, adm1, gw2, adm2 := redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t)
	port := func(addr string) string { return addr[strings.LastIndex(addr, ":")+1:] }
	env := []string{"FLEET_DIR=" + dir, "FLEET_SHAREDSTORE=" + goBuild(t, bin, "./sharedstore/cmd/sharedstore"),
		"FLEET_GATEWAY=" + goBuild(t, bin, "./envoy/cmd/gateway"), "FLEET_WASM=" + wasm,
		"FLEET_REDIS_PORT=" + port(redisAddr), "FLEET_DB_NAME=" + dbName,
		"FLEET_STORE=" + store, "FLEET_WORKER=" + worker, "FLEET_GATEWAY1=" + gw1 + "," + adm1, "FLEET_GATEWAY2=" + gw2 + "," + adm2}

	f := startFleet(t, env...)
	require.Contains(t, f.banner, "http://"+store+"/v1/admin/")
	block := readmeBlock(t, "### Spend limits and the admin API")
	script := strings.NewReplacer(
		"build/fleet/admin.token", filepath.Join(dir, "admin.token"),
		"localhost:8081", store,
		"10001", port(gw1), "10002", port(gw2),
	).Replace(block)
	require.NotContains(t, script, ":8081")
	out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
	require.NoError(t, err, string(out))
	var statuses []string
	for _, m := range regexp.MustCompile(`(?m)^([0-9]+) ([0-9]{3})$`).FindAllStringSubmatch(string(out), -1) {
		statuses = append(statuses, m[2])
	}
	require.Equal(t, []string{"200", "200", "429", "429"}, statuses, "what the walk-through's comment says:\n%s", out)
	require.Contains(t, string(out), `"path":"/v1/admin/teams/{team}/spend-limits/{scope}/{id}/{period}"`, "GET /v1/admin/ lists the routes")
	f.stop(t)

	call := func(gw string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, "http://"+gw+"/v1/chat/completions", strings.NewReader(
			`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"max_tokens":2000}`))
		require.NoError(t, err)
		req.Header.Set("authorization", "Bearer sk-local-demo")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}

	// The same Redis (its append-only file) and the same ledger: still refused, since a
	// walk-through call's $0.02 does not fit the $0.01 left.
	f = startFleet(t, env...)
	st, body := call(gw1)
	require.Equal(t, http.StatusTooManyRequests, st, "a restart keeps the month's spend: %s", body)
	f.stop(t)

	f = startFleet(t, append(env, "FLEET_FRESH=1")...)
	require.Contains(t, f.banner, "started afresh")
	st, body = call(gw1)
	require.Equal(t, http.StatusOK, st, "after a fresh start the first request is admitted: %s", body)
	f.stop(t)
}
