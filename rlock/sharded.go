package rlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// shardedMode is Redisson's shardedSubscriptionMode.
type shardedMode uint8

const (
	shardedAuto shardedMode = iota // sharded on a Cluster that supports it
	shardedOn
	shardedOff
)

// pubCommand is the publish command the scripts are given: PUBLISH or
// SPUBLISH. It is a script argument of its own type, written by go-redis
// through MarshalBinary when the command is sent, so that the choice can
// be made once the Cluster has been asked (see resolve), after the calls
// that carry it were built.
type pubCommand struct {
	mode  shardedMode
	state atomic.Uint32 // 0: not decided yet; pubClassic or pubSharded
	mu    sync.Mutex    // one decision at a time
}

const (
	pubClassic = 1
	pubSharded = 2
)

var (
	publishBytes  = []byte("publish")
	spublishBytes = []byte("spublish")
)

// MarshalBinary returns the command as go-redis writes it.
func (p *pubCommand) MarshalBinary() ([]byte, error) {
	if p.state.Load() == pubSharded {
		return spublishBytes, nil
	}
	return publishBytes, nil
}

// String returns "publish" or "spublish".
func (p *pubCommand) String() string {
	b, _ := p.MarshalBinary()
	return string(b)
}

// sharded reports whether unlock messages are published with SPUBLISH
// (and waited for with SSUBSCRIBE). Valid once resolved.
func (p *pubCommand) sharded() bool { return p.state.Load() == pubSharded }

// decideLocally settles the choice that needs no question to Redis: ON,
// OFF, and AUTO off a Cluster (Redisson decides sharded pub/sub only in its
// cluster connection manager).
func (p *pubCommand) decideLocally(rdb redis.UniversalClient) {
	_, isCluster := rdb.(*redis.ClusterClient)
	switch {
	case p.mode == shardedOn:
		p.state.Store(pubSharded)
	case p.mode == shardedOff || !isCluster:
		p.state.Store(pubClassic)
	}
}

// resolve decides AUTO on a Cluster as Redisson does
// (PublishSubscribeService.checkShardingSupport): sharded when a node
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
func (c *Client) resolveMode(ctx context.Context) error {
	if c.opts.publishCommand.state.Load() != 0 {
		return nil
	}
	return c.opts.publishCommand.resolve(ctx, c.rdb)
}
