package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/pubsub"
)

// Sharded is how a Client publishes and waits for messages: Redisson's
// shardedSubscriptionMode, or both kinds (rlock.PubSubMode).
type Sharded uint8

// The modes of Sharded.
const (
	ShardedAuto Sharded = iota // sharded on a Cluster that supports it
	ShardedOn
	ShardedOff
	ShardedBoth // both kinds, where the servers have sharded pub/sub
	// ShardedBothCluster is both kinds on a Cluster, classic elsewhere:
	// WithRedissonVersion 3.22.0 to 3.27.x, as those releases are.
	ShardedBothCluster
)

// pubCommand is the publish command the scripts are given: PUBLISH or
// SPUBLISH. It is a script argument of its own type, written by go-redis
// through MarshalBinary when the command is sent, so that the choice can
// be made once the Cluster has been asked (see resolve), after the calls
// that carry it were built.
type pubCommand struct {
	mode  Sharded
	state atomic.Uint32 // 0: not decided yet; pubClassic or pubSharded
	mu    sync.Mutex    // one decision at a time
}

const (
	pubClassic = 1
	pubSharded = 2
	pubBoth    = 3 // PUBLISH and SPUBLISH (lib/notify.lua)
)

var (
	publishBytes  = []byte("publish")
	spublishBytes = []byte("spublish")
	bothBytes     = []byte("both")
)

// MarshalBinary returns the command as go-redis writes it.
func (p *pubCommand) MarshalBinary() ([]byte, error) {
	switch p.state.Load() {
	case pubSharded:
		return spublishBytes, nil
	case pubBoth:
		return bothBytes, nil
	}
	return publishBytes, nil
}

// String returns "publish", "spublish" or "both".
func (p *pubCommand) String() string {
	b, _ := p.MarshalBinary()
	return string(b)
}

// kinds reports how messages are published and waited for: PUBLISH and
// SUBSCRIBE, SPUBLISH and SSUBSCRIBE, or both. Valid once resolved.
func (p *pubCommand) kinds() pubsub.Kinds {
	switch p.state.Load() {
	case pubSharded:
		return pubsub.Sharded
	case pubBoth:
		return pubsub.Both
	}
	return pubsub.Classic
}

// decideLocally settles the choice that needs no question to Redis: ON,
// OFF, and AUTO (or the releases' both) off a Cluster (Redisson decides
// sharded pub/sub only in its cluster connection manager).
func (p *pubCommand) decideLocally(rdb redis.UniversalClient) {
	_, isCluster := rdb.(*redis.ClusterClient)
	switch {
	case p.mode == ShardedOn:
		p.state.Store(pubSharded)
	case p.mode == ShardedOff || (!isCluster && p.mode != ShardedBoth):
		p.state.Store(pubClassic)
	}
}

// resolve decides AUTO (and both) on a Cluster as Redisson does
// (PublishSubscribeService.detectSharding): sharded (both) when a node
// answers PUBSUB SHARDNUMSUB, classic when it refuses it (before Redis 7).
// A node that cannot be reached decides nothing: the error is returned
// and the next call asks again.
func (p *pubCommand) resolve(ctx context.Context, rdb redis.UniversalClient) error {
	if p.state.Load() != 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.Load() != 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	err := rdb.Do(ctx, "pubsub", "shardnumsub", "0").Err()
	var re redis.Error
	switch {
	case err == nil && (p.mode == ShardedBoth || p.mode == ShardedBothCluster):
		p.state.Store(pubBoth)
	case err == nil:
		p.state.Store(pubSharded)
	case errors.As(err, &re):
		p.state.Store(pubClassic)
	default:
		return err
	}
	return nil
}

// resolveMode makes sure the publish command is decided before a call that
// carries it is sent.
func (c *Core) resolveMode(ctx context.Context) error {
	if c.pub.state.Load() != 0 {
		return nil
	}
	return c.pub.resolve(ctx, c.rdb)
}

// exclusive reports whether a message frees something one waiter can take:
// a lock's unlock (pubsub.WithExclusive). A read-write lock's "0" is not
// (its readers share), nor a semaphore's release.
func exclusive(channel, payload string) bool {
	return payload == layout.UnlockMessage && layout.IsLockChannel(channel)
}
