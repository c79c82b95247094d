package rlock

import (
	"fmt"

	"github.com/goredisson/goredisson/internal/engine"
)

// PubSubMode is how a Client publishes its messages (unlock, release,
// count-down) and listens for the other clients' on a Redis Cluster:
// Redisson's shardedSubscriptionMode, and both kinds at once for a fleet
// whose Redisson clients do not all use the same (docs/redisson.md#releases).
// Off a Cluster PubSubAuto is classic pub/sub, as Redisson's always is
// there; PubSubSharded and PubSubBoth are what they say wherever the
// servers have sharded pub/sub.
type PubSubMode int

// The pub/sub modes.
const (
	// PubSubAuto is Redisson's AUTO: sharded pub/sub on a Cluster whose
	// servers support it (Redis and Valkey 7+), else classic. The default,
	// unless WithRedissonVersion names a release that decides otherwise.
	PubSubAuto PubSubMode = iota
	// PubSubClassic is PUBLISH and SUBSCRIBE (Redisson: OFF).
	PubSubClassic
	// PubSubSharded is SPUBLISH and SSUBSCRIBE (Redisson: ON).
	PubSubSharded
	// PubSubBoth publishes every message with PUBLISH and SPUBLISH (in the
	// same script) and listens with SUBSCRIBE and SSUBSCRIBE (on one
	// connection to the master of the channel's slot), so that Redisson
	// clients of either kind wake this Client's waiters and are woken by
	// it; one unlock still wakes one waiter of this Client. The default on
	// a Cluster with WithRedissonVersion 3.22.0 to 3.27.x, whose clients
	// each decide at start (off a Cluster they, and that default, are
	// classic). Classic where the servers have no sharded pub/sub (before
	// Redis 7).
	PubSubBoth
)

// WithPubSubMode sets how the Client publishes and listens on a Cluster
// (default PubSubAuto, see WithRedissonVersion); WithShardedPubSub(on) is
// PubSubSharded or PubSubClassic. The last of the two given wins.
func WithPubSubMode(m PubSubMode) Option {
	return func(o *options) {
		switch m {
		case PubSubAuto:
			o.Sharded = engine.ShardedAuto
		case PubSubClassic:
			o.Sharded = engine.ShardedOff
		case PubSubSharded:
			o.Sharded = engine.ShardedOn
		case PubSubBoth:
			o.Sharded = engine.ShardedBoth
		default:
			o.errs = append(o.errs, fmt.Errorf("pub/sub mode %d: want PubSubAuto, PubSubClassic, PubSubSharded or PubSubBoth", m))
		}
	}
}
