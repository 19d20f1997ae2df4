//go:build !wasip1

package admin

import (
	"context"
	"fmt"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"

	"github.com/redis/go-redis/v9"
)

// scanBatch is the COUNT hint of each SCAN step.
const scanBatch = 500

// invalidate deletes the team's cached spend policy, every usage key of
// the team and its cached balance, so the spend cache reloads all of them
// from the ledger: the policy as it now is, each counter as the period's
// aggregate plus its pending estimates. Deleting instead of rewriting
// keeps one writer of the cache's figures (the cache's loader and the
// worker), and a counter reloaded from the ledger is never counted twice.
//
// On a Redis Cluster a team's keys share one hash slot, so the SCAN runs
// on the master that owns it.
func (s *Server) invalidate(ctx context.Context, team string) error {
	node, err := nodeFor(ctx, s.redis, spendcache.PolicyKey(team))
	if err != nil {
		return fmt.Errorf("admin: invalidate %s: %w", team, err)
	}
	keys := []string{spendcache.PolicyKey(team), spendcache.BalanceKey(team)}
	var cursor uint64
	for {
		batch, next, err := node.Scan(ctx, cursor, spendcache.UsagePattern(team), scanBatch).Result()
		if err != nil {
			return fmt.Errorf("admin: invalidate %s: scan usage keys: %w", team, err)
		}
		keys = append(keys, batch...)
		if next == 0 {
			break
		}
		cursor = next
	}
	// One DEL per key: they share a slot, but a DEL of many keys would be
	// refused by a cluster node mid-resharding; a pipeline keeps it one
	// round trip.
	_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("admin: invalidate %s: delete: %w", team, err)
	}
	return nil
}

// nodeFor is the client that holds key: the cluster master of its slot, or
// the one server.
func nodeFor(ctx context.Context, c redis.UniversalClient, key string) (redis.Cmdable, error) {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return c, nil
}
