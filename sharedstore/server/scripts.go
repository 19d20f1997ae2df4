package server

import (
	"context"
	_ "embed"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

var (
	//go:embed common.lua
	commonLua string
	//go:embed admit.lua
	admitLua string
	//go:embed end.lua
	endLua string
	//go:embed give.lua
	giveLua string
)

// script is one Lua program run by EVALSHA. It is loaded once at start and
// again whenever Redis answers NOSCRIPT (a restart, a failover, SCRIPT
// FLUSH), so the body crosses the wire only then.
type script struct {
	name string
	body string // the script's own text, after common.lua
	src  string
	sha  *redis.Script // used for its SHA1 only
	// fn names the script's function in lib, the single server's function
	// library (library.go); empty where scripts run by EVALSHA only.
	fn  string
	lib *library
}

// The admission's variants: admitLua alone declares the (empty) spend
// verdict its reply ends with; admitSpendLua runs the spend preflight
// first, so with a single server the spend limits and the token buckets
// are checked in one script and one round trip; spendOnlyLua is the
// preflight alone, run in the team's slot before a cluster admission.
var (
	plainAdmitLua = "local spendout, spendhold\n" + admitLua
	admitSpendLua = spendcache.PreflightLua + "\n" + admitLua
	spendOnlyLua  = spendcache.PreflightLua + "\nif spendhold then spendhold() end\nreturn { 1, spendout }\n"
)

func newScript(name, body string) *script {
	src := commonLua + "\ninit()\n" + body
	return &script{name: name, body: body, src: src, sha: redis.NewScript(src)}
}

// load puts the script into every node's script cache (a cluster client
// broadcasts SCRIPT LOAD to all shards).
func (s *script) load(ctx context.Context, c redis.UniversalClient) error {
	if err := c.ScriptLoad(ctx, s.src).Err(); err != nil {
		return errs.Wrap("load "+s.name+" script", err)
	}
	return nil
}

// run calls the script by SHA, reloading it once on NOSCRIPT.
func (s *script) run(ctx context.Context, c redis.UniversalClient, keys []string, args []any) (any, error) {
	v, err := c.EvalSha(ctx, s.sha.Hash(), keys, args...).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if lerr := s.load(ctx, c); lerr != nil {
			return nil, lerr
		}
		v, err = c.EvalSha(ctx, s.sha.Hash(), keys, args...).Result()
	}
	if err != nil {
		return nil, wrapScriptError(s, err)
	}
	return v, nil
}

func wrapScriptError(s *script, err error) error { return errs.Wrap("run "+s.name+" script", err) }
