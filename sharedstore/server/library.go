package server

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// library is the single server's admission and settlement scripts as one
// Redis function library (FUNCTION LOAD, then FCALL; Redis 7.0 and later).
// EVALSHA runs a script's whole text on every call, and that text begins by
// making the closures and arrays common.lua declares; a library makes them
// once, when it is loaded, and each FCALL runs only the script's own code. On
// the peers benchmark's plan that is 12 % fewer Redis instructions per
// admission and 10 % fewer per settlement (BENCHMARKS.md, "Peers: sharedstore against envoyproxy/ratelimit").
//
// The library's name and its functions' names carry a hash of its text, as
// EVALSHA names a script by its SHA1, so service replicas of different
// versions sharing one Redis each call their own code; an upgrade leaves the
// earlier version's library in place (docs/redis-layout.md). Where FUNCTION
// LOAD is refused (a server before 7.0, an ACL without it, a managed service
// that disables it) the scripts run by EVALSHA as before. A library that
// disappears (FUNCTION FLUSH, a restart of a Redis that keeps nothing) is
// loaded again before the next batch; the calls that found it missing run
// as scripts. Either way a call runs exactly one of the two forms of the same
// code, so no call's semantics depend on which.
type library struct {
	name  string
	src   string
	state atomic.Int32
	// refusal is Redis' answer when it refused the library (for the
	// service's log); set before state becomes libRefused.
	refusal error
}

// A library's states.
const (
	libUnloaded int32 = iota // not loaded yet, or lost: load before the next batch
	libLoaded                // FCALL its functions
	libRefused               // the server refused it: EVALSHA only
)

// newLibrary builds the library of scripts and names each script's function
// in it (script.fn). Each function calls init first, once per Redis process:
// a library's top level runs where only redis.register_function is in reach,
// so the Lua libraries common.lua uses are bound on the first call.
func newLibrary(scripts ...*script) *library {
	// The text with {tag} for the hash, so that the hash names exactly the
	// code Redis will run, wrapping included.
	var b strings.Builder
	b.WriteString(commonLua + "\n")
	for _, sc := range scripts {
		sc.fn = "tb_" + sc.name + "_{tag}"
		// f_<name>: a script's name may be a Lua keyword ("end")
		b.WriteString("local function f_" + sc.name + "(KEYS, ARGV)\nif not sunpack then init() end\n" + sc.body + "\nend\n")
		b.WriteString("redis.register_function('" + sc.fn + "', f_" + sc.name + ")\n")
	}
	sum := sha1.Sum([]byte(b.String()))
	tag := hex.EncodeToString(sum[:6])
	l := &library{name: "tokenbudget_" + tag}
	l.src = "#!lua name=" + l.name + "\n" + strings.ReplaceAll(b.String(), "{tag}", tag)
	for _, sc := range scripts {
		sc.fn, sc.lib = strings.ReplaceAll(sc.fn, "{tag}", tag), l
	}
	return l
}

// load puts the library into Redis. An error reply refuses it for good (the
// scripts serve), unless it is one a server gives only for a while (loading
// its data, busy with a script, a failover under way): that, like a failed
// round trip, leaves the library to be loaded again before the next batch.
func (l *library) load(ctx context.Context, c redis.UniversalClient) {
	err := c.Do(ctx, "function", "load", "replace", l.src).Err()
	switch {
	case err == nil:
		l.state.Store(libLoaded)
	case isReply(err) && !transient(err):
		l.refusal = err
		l.state.Store(libRefused)
	}
}

// transient reports an error reply that a later try may not meet.
func transient(err error) bool {
	for _, p := range []string{"LOADING", "BUSY", "MASTERDOWN", "READONLY", "TRYAGAIN"} {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

// loaded reports that calls may FCALL the library's functions.
func (l *library) loaded() bool { return l != nil && l.state.Load() == libLoaded }

// lost records that a call found the library missing, so that the next
// batch loads it again first.
func (l *library) lost() { l.state.CompareAndSwap(libLoaded, libUnloaded) }

// functionMissing reports FCALL's answer for a function Redis does not hold.
func functionMissing(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "ERR Function not found")
}
