package rlock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/goredisson/goredisson/internal/engine"
)

// The Redisson releases the Java side may run (WithRedissonVersion) and
// what each implies for the pub/sub; what each changes, with the Redisson
// commits, is in docs/redisson.md#releases.

// The releases WithRedissonVersion accepts: those the interop matrix
// (interop/matrix.md) measured, from the first to the last minor line.
var (
	oldestRedisson = engine.Version{Major: 3, Minor: 18}
	newestRedisson = engine.Version{Major: 4, Minor: 7}
)

var errVersion = errors.New("redisson version")

// parseRedissonVersion parses "3.22", "3.22.1" or "redisson-3.22.1".
func parseRedissonVersion(s string) (engine.Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "redisson-")
	parts := strings.Split(t, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return engine.Version{}, fmt.Errorf("%w %q: want major.minor[.patch], e.g. 3.22.1", errVersion, s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p == "" || (len(p) > 1 && p[0] == '0') {
			return engine.Version{}, fmt.Errorf("%w %q: want major.minor[.patch], e.g. 3.22.1", errVersion, s)
		}
		n[i] = v
	}
	v := engine.Version{Major: n[0], Minor: n[1], Patch: n[2]}
	if v.Less(oldestRedisson.Major, oldestRedisson.Minor, 0) ||
		!v.Less(newestRedisson.Major, newestRedisson.Minor+1, 0) {
		return engine.Version{}, fmt.Errorf("%w %q: unsupported; goredisson knows Redisson %d.%d.0 to %d.%d.x (leave the option out for the newest layout)",
			errVersion, s, oldestRedisson.Major, oldestRedisson.Minor, newestRedisson.Major, newestRedisson.Minor)
	}
	return v, nil
}

// classicPubSubOnly reports whether the Java side never uses sharded
// pub/sub: Redisson before 3.22.0 always publishes with PUBLISH and
// listens with SUBSCRIBE.
func classicPubSubOnly(v engine.Version) bool { return v.Less(3, 22, 0) }

// probesSharding reports whether the Java side (Redisson 3.22.0 to 3.27.x)
// decides sharded pub/sub on a Cluster by sending SPUBLISH "" "" to one
// node, sharded only when that node is the master of slot 0: 3.22.0 to
// 3.26.x ask the first configured address that connects, 3.27.x the first
// master of a map keyed by identity-hashed clients (a new draw at every
// start). A Go client cannot tell which each Java client chose. From
// 3.28.0 Redisson asks PUBSUB SHARDNUMSUB (commit c93363a3d), as AUTO does.
func probesSharding(v engine.Version) bool {
	return v != (engine.Version{}) && !v.Less(3, 22, 0) && v.Less(3, 28, 0)
}
