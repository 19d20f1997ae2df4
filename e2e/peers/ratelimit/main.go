// Command peers-ratelimit measures sharedstore against envoyproxy/ratelimit
// (Envoy's global rate-limit service) on one throwaway redis-server, with the
// same plan on both: six dimensions, each with a minute and a day period,
// plus a request-count op. sharedstore admits it in one POST /v1/admit (as
// the filter sends it, with a hold id); ratelimit decides it in one
// ShouldRateLimit call with one descriptor per dimension and period (13 in
// all, the token ones with the token amount as their hits_addend). Rounds
// interleave the two so that whatever else the machine does touches both.
//
// It lives in its own Go module so that ratelimit's dependencies never reach
// the project's go.mod; `make bench-peers` builds both binaries and runs it.
// The last line of its output is the ratio, exactly
// "sharedstore/ratelimit decisions/s ratio: N.NN".
//
// With -callgrind it instead runs redis-server under valgrind's callgrind
// and reports the Redis instructions per decision of each side.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

var dims = []string{"global", "client", "api_key", "user", "team", "model"}

const (
	token  = "peers-bench-token"
	amount = 100 // tokens per decision on every token op
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers-ratelimit:", err)
		os.Exit(1)
	}
}

type options struct {
	sharedstore, ratelimit, redis string
	baseline                      string
	callers, rounds               int
	round                         time.Duration
	callgrind                     int
	keep                          string
}

func run() error {
	var o options
	flag.StringVar(&o.sharedstore, "sharedstore", "build/sharedstore", "sharedstore binary")
	flag.StringVar(&o.baseline, "baseline", "", "optional second sharedstore binary (an older build) measured in the same run, on its own Redis database")
	flag.StringVar(&o.ratelimit, "ratelimit", "build/ratelimit", "envoyproxy/ratelimit service_cmd binary")
	flag.StringVar(&o.redis, "redis-server", "redis-server", "redis-server binary")
	flag.IntVar(&o.callers, "callers", 16, "concurrent callers on each side")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds per side")
	flag.DurationVar(&o.round, "round", 4*time.Second, "length of one round")
	flag.IntVar(&o.callgrind, "callgrind", 0, "if > 0: run redis-server under callgrind and count its instructions over this many decisions per side")
	flag.StringVar(&o.keep, "callgrind-keep", "", "with -callgrind: copy each side's callgrind dump into this directory")
	flag.Parse()

	dir, err := os.MkdirTemp("", "peers-ratelimit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}()

	redisPort := freePort()
	var redisCmd *exec.Cmd
	cgOut := filepath.Join(dir, "callgrind.out")
	if o.callgrind > 0 {
		redisCmd = exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+cgOut, o.redis,
			"--port", strconv.Itoa(redisPort), "--save", "", "--appendonly", "no", "--dir", dir)
	} else {
		redisCmd = exec.Command(o.redis, "--port", strconv.Itoa(redisPort), "--save", "", "--appendonly", "no", "--dir", dir)
	}
	redisCmd.Stdout, redisCmd.Stderr = io.Discard, io.Discard
	if err := redisCmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	procs = append(procs, redisCmd)
	redisAddr := "127.0.0.1:" + strconv.Itoa(redisPort)
	if err := waitTCP(redisAddr, 60*time.Second); err != nil {
		return fmt.Errorf("redis-server: %w", err)
	}

	ssAddr, ss, err := startSharedstore(o.sharedstore, redisAddr, 0)
	if err != nil {
		return err
	}
	procs = append(procs, ss)
	var blAddr string
	var bl *exec.Cmd
	if o.baseline != "" {
		// database 1: the two builds may lay their buckets out differently
		if blAddr, bl, err = startSharedstore(o.baseline, redisAddr, 1); err != nil {
			return err
		}
		procs = append(procs, bl)
	}

	rlAddr, rl, err := startRatelimit(o.ratelimit, dir, redisAddr)
	if err != nil {
		return err
	}
	procs = append(procs, rl)
	if err := waitTCP(ssAddr, 60*time.Second); err != nil {
		return fmt.Errorf("sharedstore: %w", err)
	}
	if err := waitTCP(rlAddr, 60*time.Second); err != nil {
		return fmt.Errorf("ratelimit: %w", err)
	}

	ssSide := newSharedstoreSide("sharedstore", ssAddr, o.callers)
	conn, err := grpc.NewClient(rlAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rlSide := &ratelimitSide{c: rlpb.NewRateLimitServiceClient(conn)}
	sides, pids := []side{ssSide, rlSide}, []int{ss.Process.Pid, rl.Process.Pid}
	if bl != nil {
		if err := waitTCP(blAddr, 60*time.Second); err != nil {
			return fmt.Errorf("baseline sharedstore: %w", err)
		}
		sides, pids = append(sides, newSharedstoreSide("baseline", blAddr, o.callers)), append(pids, bl.Process.Pid)
	}

	// Warm every side: connections, script cache, buckets.
	for _, s := range sides {
		if _, err := drive(s, o.callers, 0, 200); err != nil {
			return fmt.Errorf("warm-up %s: %w", s.name(), err)
		}
	}

	if o.callgrind > 0 {
		// One caller: Redis under valgrind is ~50 times slower, and 16
		// queued callers would run into sharedstore's 2 s Redis deadline.
		// Instructions per decision do not depend on concurrency.
		o.callers = 1
		return countInstructions(o, redisCmd.Process.Pid, cgOut, sides...)
	}

	fmt.Printf("plan: %d token dimensions x 2 periods + 1 request op, %d callers, %d rounds of %s per side, one redis-server %s\n",
		len(dims), o.callers, o.rounds, o.round, redisAddr)
	total := make([]struct {
		n        int64
		dur      time.Duration
		svc, red time.Duration
		drv      time.Duration // the driver's own client work
		rates    []float64
	}, len(sides))
	for r := 0; r < o.rounds; r++ {
		for i, s := range sides {
			svc0, red0, drv0 := cpuTime(pids[i]), cpuTime(redisCmd.Process.Pid), cpuTime(os.Getpid())
			start := time.Now()
			n, err := drive(s, o.callers, o.round, 0)
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r+1, s.name(), err)
			}
			d := time.Since(start)
			t := &total[i]
			t.n += n
			t.dur += d
			t.svc += cpuTime(pids[i]) - svc0
			t.red += cpuTime(redisCmd.Process.Pid) - red0
			t.drv += cpuTime(os.Getpid()) - drv0
			rate := float64(n) / d.Seconds()
			t.rates = append(t.rates, rate)
			fmt.Printf("round %d %-11s %8.0f decisions/s\n", r+1, s.name(), rate)
		}
	}
	rate := func(i int) float64 { return float64(total[i].n) / total[i].dur.Seconds() }
	for i, s := range sides {
		t := total[i]
		fmt.Printf("%-11s %8.0f decisions/s (median round %.0f); CPU per decision: service %.1f µs, redis %.1f µs, driver %.1f µs\n",
			s.name(), rate(i), median(t.rates),
			float64(t.svc.Microseconds())/float64(t.n), float64(t.red.Microseconds())/float64(t.n),
			float64(t.drv.Microseconds())/float64(t.n))
	}
	if len(sides) > 2 {
		fmt.Printf("baseline/ratelimit decisions/s ratio: %.2f\n", rate(2)/rate(1))
	}
	ratio := rate(0) / rate(1)
	fmt.Printf("sharedstore/ratelimit decisions/s ratio: %.2f\n", ratio)
	return nil
}

// countInstructions zeroes callgrind's counters, runs n decisions on one
// side, dumps, and reads the total; the difference between a dump and the
// zeroing is only what that side made Redis do (plus its idle timer ticks).
func countInstructions(o options, pid int, out string, sides ...side) error {
	per := make([]float64, len(sides))
	for i, s := range sides {
		if err := exec.Command("callgrind_control", "-z", strconv.Itoa(pid)).Run(); err != nil {
			return fmt.Errorf("callgrind_control -z: %w", err)
		}
		if _, err := drive(s, o.callers, 0, o.callgrind); err != nil {
			return err
		}
		before, _ := filepath.Glob(out + "*")
		if err := exec.Command("callgrind_control", "-d", strconv.Itoa(pid)).Run(); err != nil {
			return fmt.Errorf("callgrind_control -d: %w", err)
		}
		ir, dump, err := newestTotal(out, before)
		if err != nil {
			return err
		}
		if o.keep != "" {
			// for callgrind_annotate
			if b, err := os.ReadFile(dump); err == nil {
				_ = os.WriteFile(filepath.Join(o.keep, "callgrind."+s.name()+".out"), b, 0o644)
			}
		}
		per[i] = float64(ir) / float64(o.callgrind)
		fmt.Printf("%-11s %d decisions: %d Redis instructions, %.0f per decision\n", s.name(), o.callgrind, ir, per[i])
	}
	if len(sides) > 2 {
		fmt.Printf("baseline/ratelimit Redis instructions per decision: %.2f\n", per[2]/per[1])
	}
	fmt.Printf("sharedstore/ratelimit Redis instructions per decision: %.2f\n", per[0]/per[1])
	return nil
}

var totalsRe = regexp.MustCompile(`(?m)^(?:totals|summary):\s+(\d+)`)

func newestTotal(prefix string, before []string) (int64, string, error) {
	old := map[string]bool{}
	for _, f := range before {
		old[f] = true
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(prefix + "*")
		for _, f := range files {
			if old[f] {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if m := totalsRe.FindSubmatch(b); m != nil {
				n, err := strconv.ParseInt(string(m[1]), 10, 64)
				return n, f, err
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, "", errors.New("no callgrind dump appeared")
}

// side is one system under test: decide makes one decision for caller c.
type side interface {
	name() string
	decide(c, seq int) error
}

// drive runs callers goroutines until d has passed (or, when d is 0, until
// n decisions are made) and returns the decisions made.
func drive(s side, callers int, d time.Duration, n int) (int64, error) {
	var done, next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for seq := 0; ; seq++ {
				if d > 0 && time.Now().After(stop) {
					return
				}
				if d == 0 && next.Add(1) > int64(n) {
					return
				}
				if err := s.decide(c, seq); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done.Add(1)
			}
		}(c)
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return done.Load(), err
	}
	return done.Load(), nil
}

// identity of caller c on dimension d: per-caller for the caller's own
// dimensions, shared for global, team and model.
func identity(d string, c int) string {
	switch d {
	case "global":
		return "all"
	case "team":
		return "team-" + strconv.Itoa(c%2)
	case "model":
		return "gpt-4o"
	}
	return d + "-" + strconv.Itoa(c)
}

type sharedstoreSide struct {
	label  string
	url    string
	client *http.Client
	bodies [][]byte // per caller, with a hold id placeholder
}

// newSharedstoreSide prepares each caller's admission body with the members
// and order the filter writes (wire.AppendAdmitHold): a request-count op on
// the caller's key and six token ops of minute and day, limits too large to
// refuse. The refill rates are spelled as integers (17179869184) where the
// filter writes them with %g (1.7179869184e+10); the service reads both
// to the same float64 by the same path (wire's parseFloat, exact for both).
func newSharedstoreSide(label, addr string, callers int) *sharedstoreSide {
	s := &sharedstoreSide{label: label, url: "http://" + addr + "/v1/admit",
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: callers, MaxConnsPerHost: callers}}}
	for c := 0; c < callers; c++ {
		var b strings.Builder
		b.WriteString(`{"hold_id":"HOLDIDHOLDIDHOLDIDHOLDIDHOLDIDHO","requests":[{"key":"tb|r|api_key|v1|` + identity("api_key", c) +
			`","kind":1,"dimension":"api_key","limits":[{"budget":"second","capacity":1099511627776,"refill_per_sec":1073741824}],"amount":1,"private":true}],"tokens":[`)
		for i, d := range dims {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"key":"tb|t|` + d + `|v1|` + identity(d, c) + `","kind":3,"dimension":"` + d +
				`","limits":[{"budget":"minute","capacity":1099511627776,"refill_per_sec":17179869184},{"budget":"day","capacity":35184372088832,"refill_per_sec":1073741824}],"amount":` +
				strconv.Itoa(amount))
			if d == "api_key" {
				b.WriteString(`,"private":true`)
			}
			b.WriteByte('}')
		}
		b.WriteString(`]}`)
		s.bodies = append(s.bodies, []byte(b.String()))
	}
	return s
}

func (s *sharedstoreSide) name() string { return s.label }

func (s *sharedstoreSide) decide(c, _ int) error {
	body := bytes.Clone(s.bodies[c])
	var id [16]byte
	_, _ = rand.Read(id[:])
	hex.Encode(body[len(`{"hold_id":"`):], id[:])
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := s.client.Do(req)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK || !bytes.HasPrefix(b, []byte(`{"admitted":true`)) {
		return fmt.Errorf("sharedstore answered %d %s", res.StatusCode, b)
	}
	return nil
}

type ratelimitSide struct {
	c    rlpb.RateLimitServiceClient
	reqs sync.Map // caller -> *rlpb.RateLimitRequest
}

func (s *ratelimitSide) name() string { return "ratelimit" }

func (s *ratelimitSide) request(c int) *rlpb.RateLimitRequest {
	if r, ok := s.reqs.Load(c); ok {
		return r.(*rlpb.RateLimitRequest)
	}
	r := &rlpb.RateLimitRequest{Domain: "bench", Descriptors: []*rlcommon.RateLimitDescriptor{{
		Entries:    []*rlcommon.RateLimitDescriptor_Entry{{Key: "requests_second", Value: identity("api_key", c)}},
		HitsAddend: wrapperspb.UInt64(1),
	}}}
	for _, d := range dims {
		for _, p := range []string{"minute", "day"} {
			r.Descriptors = append(r.Descriptors, &rlcommon.RateLimitDescriptor{
				Entries:    []*rlcommon.RateLimitDescriptor_Entry{{Key: d + "_" + p, Value: identity(d, c)}},
				HitsAddend: wrapperspb.UInt64(amount),
			})
		}
	}
	s.reqs.Store(c, r)
	return r
}

func (s *ratelimitSide) decide(c, _ int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.c.ShouldRateLimit(ctx, s.request(c))
	if err != nil {
		return err
	}
	if res.OverallCode != rlpb.RateLimitResponse_OK || len(res.Statuses) != 1+2*len(dims) {
		return fmt.Errorf("ratelimit answered %v with %d statuses", res.OverallCode, len(res.Statuses))
	}
	return nil
}

// startSharedstore starts one sharedstore binary on Redis database db.
func startSharedstore(bin, redisAddr string, db int) (string, *exec.Cmd, error) {
	addr := "127.0.0.1:" + strconv.Itoa(freePort())
	cmd := exec.Command(bin, "--listen", addr, "--redis", "redis://"+redisAddr+"/"+strconv.Itoa(db))
	cmd.Env = append(os.Environ(), "SHAREDSTORE_TOKEN="+token)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return addr, cmd, nil
}

// startRatelimit writes the service's config (one descriptor per dimension
// and period, limits too large to refuse during a run) and starts it on
// Redis with its stats off (DISABLE_STATS: no sink at all, its fastest
// setting).
func startRatelimit(bin, dir, redisAddr string) (string, *exec.Cmd, error) {
	cfg := filepath.Join(dir, "runtime", "ratelimit", "config")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		return "", nil, err
	}
	var y strings.Builder
	y.WriteString("domain: bench\ndescriptors:\n  - key: requests_second\n    rate_limit: {unit: second, requests_per_unit: 4000000000}\n")
	for _, d := range dims {
		for _, p := range []string{"minute", "day"} {
			fmt.Fprintf(&y, "  - key: %s_%s\n    rate_limit: {unit: %s, requests_per_unit: 4000000000}\n", d, p, p)
		}
	}
	if err := os.WriteFile(filepath.Join(cfg, "bench.yaml"), []byte(y.String()), 0o644); err != nil {
		return "", nil, err
	}
	grpcPort := freePort()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"USE_STATSD=false", "DISABLE_STATS=true", "LOG_LEVEL=error", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr,
		"RUNTIME_ROOT="+filepath.Join(dir, "runtime"), "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(freePort()), "GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(freePort()))
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start ratelimit: %w", err)
	}
	return "127.0.0.1:" + strconv.Itoa(grpcPort), cmd, nil
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitTCP(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cpuTime is a process' user plus system time from /proc.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * (time.Second / 100) // USER_HZ
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
