//go:build !wasip1

package spendcache

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"golang.org/x/sync/singleflight"
)

var (
	// endholdLua defines endhold, which every script that ends a spend
	// reservation starts with, so the rule is written once.
	//go:embed endhold.lua
	endholdLua string
	//go:embed preflight.lua
	preflightLua string
	//go:embed fill.lua
	fillLua string
	//go:embed postflight.lua
	postflightOwn string
	//go:embed refresh.lua
	refreshLua string
	//go:embed unhold.lua
	unholdOwn string

	// PreflightLua is the preflight's Lua: the admission script runs it
	// before its token buckets (see preflight.lua for its keys and args).
	PreflightLua  = endholdLua + preflightLua
	postflightLua = endholdLua + postflightOwn
	unholdLua     = endholdLua + unholdOwn
)

// Ledger is the part of the PostgreSQL ledger the cache reads.
type Ledger interface {
	Snapshot(ctx context.Context, team string, periods []calendar.Window) (ledger.Snapshot, error)
}

// Options tune a Cache; zero values take the defaults.
type Options struct {
	// Now is the clock deciding which periods are open (tests inject
	// one); default time.Now.
	Now func() time.Time
	// DayGrace and MonthGrace are how long past its period's end a
	// counter lives (defaults 2 days and 7 days): long enough for late
	// settlements of calls that started in it, after which nobody reads it.
	DayGrace, MonthGrace time.Duration
	// PolicyTTL bounds how long a cached policy and balance live without
	// an invalidation (default 10 minutes), so a missed invalidation heals.
	PolicyTTL time.Duration
	// HoldTTL is how long a spend reservation stands without its
	// settlement or release (default 30 minutes): a gateway that died with
	// calls in flight holds their cost no longer than this.
	HoldTTL time.Duration
}

// Cache is the spend cache of one Redis (server or cluster) over one
// ledger. It holds no state but the coalescing of concurrent loads.
type Cache struct {
	c      redis.UniversalClient
	l      Ledger
	o      Options
	loads  singleflight.Group
	fill   *redis.Script
	post   *redis.Script
	fresh  *redis.Script
	unhold *redis.Script
	// OnLoad, when set, is called with each ledger read of a load, its
	// duration and error (the service's metrics); it must not block. Set it
	// before the cache is used.
	OnLoad func(d time.Duration, err error)
}

// New is a cache on c over l.
func New(c redis.UniversalClient, l Ledger, o Options) *Cache {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DayGrace <= 0 {
		o.DayGrace = 48 * time.Hour
	}
	if o.MonthGrace <= 0 {
		o.MonthGrace = 7 * 24 * time.Hour
	}
	if o.PolicyTTL <= 0 {
		o.PolicyTTL = 10 * time.Minute
	}
	if o.HoldTTL <= 0 {
		o.HoldTTL = 30 * time.Minute
	}
	return &Cache{c: c, l: l, o: o,
		fill: redis.NewScript(fillLua), post: redis.NewScript(postflightLua), fresh: redis.NewScript(refreshLua), unhold: redis.NewScript(unholdLua)}
}

// open reports whether w has not ended at now: only an open period's
// counters are ever created or refreshed in Redis.
func (c *Cache) open(w calendar.Window) bool { return c.o.Now().Unix() < w.End }

// ttl is how long from now (by the cache's clock, not Redis') a counter of
// w lives: until its period's end plus the grace.
func (c *Cache) ttl(w calendar.Window) int64 {
	grace := c.o.MonthGrace
	if w.Period == calendar.Day {
		grace = c.o.DayGrace
	}
	return max(w.End*1000+grace.Milliseconds()-c.o.Now().UnixMilli(), 1)
}
