// Package fleet holds the tests of `make fleet`: the example fleet's config
// files load, agree with each other and with the script, and the script
// brings up a fleet that serves and stops on a signal.
package fleet

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

const root = "../.."

func read(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	return b
}

// scriptSetting is the default the script gives a variable (NAME=... or
// NAME=${FLEET_X:-default}).
func scriptSetting(t *testing.T, script, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `=(?:\$\{[A-Z0-9_]+:-(.*)\}|(.*))$`).FindStringSubmatch(script)
	require.NotNil(t, m, name)
	return m[1] + m[2]
}

func TestTheFleetConfigFilesExistLoadAndAgreeWithTheScript(t *testing.T) {
	script := string(read(t, "examples/fleet/run.sh"))
	raw := read(t, scriptSetting(t, script, "CONFIG"))
	c, err := config.Check(raw) // what `make validate CONFIG=examples/fleet/plugin.json` runs
	require.NoError(t, err)
	rt, err := c.Compile()
	require.NoError(t, err)
	require.Equal(t, config.StorageRedis, c.RateLimiting.Storage)
	require.Equal(t, "sharedstore", c.RateLimiting.Redis.Cluster, "the --cluster name the script gives the gateways")
	require.Equal(t, c.RateLimiting.Redis.Token, scriptSetting(t, script, "STORE_TOKEN"),
		"sharedstore's data-plane token is the one the filter sends")
	require.True(t, rt.HasSpendLimits(), "the filter sends the spend part, so the fleet's stored limits apply")

	// The ledger's first price list is the filter's pricing: estimates and charges agree.
	prices := jsonx.Parse(read(t, scriptSetting(t, script, "PRICES")))
	require.Equal(t, jsonx.Object, prices.Kind)
	from := prices.Get("effective_from")
	require.Equal(t, jsonx.String, from.Kind)
	_, err = time.Parse(time.RFC3339, from.Str())
	require.NoError(t, err)
	pc, err := config.Check(append(append([]byte(`{"pricing":`), prices.Get("pricing").Raw...), '}'))
	require.NoError(t, err)
	prt, err := pc.Compile()
	require.NoError(t, err)
	require.Equal(t, len(c.Pricing), len(pc.Pricing))
	for name := range c.Pricing {
		want, _ := rt.Price(name)
		got, ok := prt.Price(name)
		require.True(t, ok, name)
		require.Equal(t, want, got, name)
	}

	// Two gateways apart from each other and from `make run`'s ports.
	ports := map[string]string{gateway.DefaultListen: "make run", gateway.DefaultAdmin: "make run admin"}
	for _, g := range regexp.MustCompile(`FLEET_GATEWAY[12]:-([0-9.:]+),([0-9.:]+)\}`).FindAllStringSubmatch(script, -1) {
		for _, addr := range g[1:] {
			require.NotContains(t, ports, addr, "collides with %s", ports[addr])
			ports[addr] = "fleet"
		}
	}
	require.Len(t, ports, 6)
	for _, name := range []string{"STORE", "WORKER"} {
		addr := scriptSetting(t, script, name)
		require.NotContains(t, ports, addr, name)
		ports[addr] = name
	}

	info, err := os.Stat(filepath.Join(root, "examples/fleet/run.sh"))
	require.NoError(t, err)
	require.NotZero(t, info.Mode()&0o111, "run.sh is executable")
	out, err := exec.Command("bash", "-n", filepath.Join(root, "examples/fleet/run.sh")).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Regexp(t, `(?m)^fleet: .*\n\texec examples/fleet/run\.sh$`, string(read(t, "Makefile")))
}

func goBuild(t *testing.T, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	return out
}

func TestTheFleetScriptBringsUpAFleetThatServesAndStopsOnASignal(t *testing.T) {
	for _, tool := range []string{"redis-cli", "psql", "pg_isready", "curl"} {
		redistest.RequireBinary(t, tool)
	}
	database := pgtest.Database(t)
	bin := t.TempDir()
	wasm := filepath.Join(bin, "filter.wasm")
	require.NoError(t, os.WriteFile(wasm, wasmbuild.Filter(t), 0o644))
	dir := t.TempDir()
	redisAddr := redistest.FreeAddr(t)
	store, worker, gw1, adm1, gw2, adm2 := redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t), redistest.FreeAddr(t)
	cmd := exec.Command("bash", "examples/fleet/run.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"FLEET_DIR="+dir, "FLEET_SHAREDSTORE="+goBuild(t, bin, "./sharedstore/cmd/sharedstore"),
		"FLEET_GATEWAY="+goBuild(t, bin, "./envoy/cmd/gateway"), "FLEET_WASM="+wasm,
		"FLEET_REDIS_PORT="+redisAddr[strings.LastIndex(redisAddr, ":")+1:], "FLEET_DATABASE="+database,
		"FLEET_STORE="+store, "FLEET_WORKER="+worker, "FLEET_GATEWAY1="+gw1+","+adm1, "FLEET_GATEWAY2="+gw2+","+adm2)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	t.Cleanup(func() {
		// Only if the test failed before stopping it: the group is the script's own.
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		done <- cmd.Wait()
	}()
	var banner []string
	deadline := time.After(3 * time.Minute)
	for up := false; !up; {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the script ended before the fleet was up: %s", stderr.String())
			banner = append(banner, l)
			up = strings.HasPrefix(l, "  config")
		case <-deadline:
			t.Fatalf("no fleet after 3 minutes: %s\n%s", strings.Join(banner, "\n"), stderr.String())
		}
	}
	text := strings.Join(banner, "\n")
	for _, want := range []string{"http://" + gw1, "http://" + gw2, "http://" + adm1, "http://" + store + "/v1/admin/",
		filepath.Join(dir, "admin.token"), "(started here)"} {
		require.Contains(t, text, want)
	}

	adminToken, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	require.NoError(t, err)
	require.Len(t, strings.TrimSpace(string(adminToken)), 64)
	call := func(token, method, url, body string) (int, string) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	st, body := call(string(adminToken), "GET", "http://"+store+"/v1/admin/prices", "")
	require.Equal(t, http.StatusOK, st, body)
	require.Contains(t, body, `"gpt-4o":{"input":"2.50"`, "the ledger got the example's price list")
	st, body = call(string(adminToken), "PUT", "http://"+store+"/v1/admin/teams/research/spend-limits/team/research/month", `{"limit_usd":"200.00"}`)
	require.Equal(t, http.StatusOK, st, body)
	st, _ = call("s3cret", "GET", "http://"+store+"/v1/admin/prices", "")
	require.Equal(t, http.StatusUnauthorized, st, "the data-plane token is not an admin token")
	for _, g := range []string{gw1, gw2} {
		st, body = call("sk-local-demo", "POST", "http://"+g+"/v1/chat/completions",
			`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":100}`)
		require.Equal(t, http.StatusOK, st, "%s: %s", g, body)
	}
	// The walk-through's spend report: the worker (every 2 s) confirms the
	// calls at the example's prices, nothing waits for a price.
	confirmed := regexp.MustCompile(`"scope":"team","id":"research","limit_usd":"200.00","confirmed_usd":"0\.0*[1-9][0-9]*"`)
	deadline = time.After(30 * time.Second)
	for !confirmed.MatchString(body) {
		select {
		case <-deadline:
			t.Fatalf("the worker never confirmed the team's spend: %s", body)
		case <-time.After(200 * time.Millisecond):
		}
		st, body = call(string(adminToken), "GET", "http://"+store+"/v1/admin/teams/research/spend", "")
		require.Equal(t, http.StatusOK, st, body)
	}
	require.Contains(t, body, `"unpriced_records":0`)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		require.NoError(t, err, "a signal stops the fleet cleanly: %s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the fleet did not stop within 30 s of SIGTERM")
	}
	for _, addr := range []string{redisAddr, store, gw1, gw2} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		require.Error(t, err, "%s still answers after the fleet stopped", addr)
	}
}

func TestTheFleetScriptRefusesAnAddressAlreadyInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	cmd := exec.Command("bash", "examples/fleet/run.sh")
	cmd.Dir = root
	// The binaries are never run: the check comes before anything starts.
	cmd.Env = append(os.Environ(), "FLEET_DIR="+t.TempDir(), "FLEET_SHAREDSTORE=/bin/true", "FLEET_GATEWAY=/bin/true",
		"FLEET_WASM=/bin/true", "FLEET_STORE="+redistest.FreeAddr(t), "FLEET_WORKER="+redistest.FreeAddr(t),
		"FLEET_GATEWAY1="+redistest.FreeAddr(t)+","+l.Addr().String(), "FLEET_GATEWAY2="+redistest.FreeAddr(t)+","+redistest.FreeAddr(t))
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "fleet: "+l.Addr().String()+" is in use")
}
