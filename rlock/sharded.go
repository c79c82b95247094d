package rlock

import (
	"fmt"

	"github.com/goredisson/goredisson/internal/engine"
)

// PubSubMode is a Client's pub/sub on a Cluster [shardedSubscriptionMode].
type PubSubMode int

// The pub/sub modes (docs/api.md, docs/redisson.md#releases).
const (
	PubSubAuto    PubSubMode = iota // Redisson's AUTO, the default: sharded on a Cluster whose servers have it (7+)
	PubSubClassic                   // PUBLISH and SUBSCRIBE (Redisson: OFF)
	PubSubSharded                   // SPUBLISH and SSUBSCRIBE (Redisson: ON)
	PubSubBoth                      // both kinds at once, for a fleet of mixed Redisson releases (3.22.0 to 3.27.x)
)

// WithPubSubMode sets the pub/sub on a Cluster; of it and WithShardedPubSub,
// the last given wins.
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
