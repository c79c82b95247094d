package rlock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The Redisson release on the Java side (WithRedissonVersion) and
// Redisson's NameMapper (WithNameMapper). What each changes, with the
// Redisson commits, is in docs/redisson.md#releases.

// redissonVersion is a Redisson release, major.minor.patch; the zero value
// is the newest layout.
type redissonVersion struct{ major, minor, patch int }

func (v redissonVersion) less(major, minor, patch int) bool {
	if v == (redissonVersion{}) {
		return false
	}
	switch {
	case v.major != major:
		return v.major < major
	case v.minor != minor:
		return v.minor < minor
	}
	return v.patch < patch
}

// The releases WithRedissonVersion accepts: those the interop matrix
// (interop/matrix.md) measured, from the first to the last minor line.
var (
	oldestRedisson = redissonVersion{3, 18, 0}
	newestRedisson = redissonVersion{4, 7, 0}
)

var errVersion = errors.New("redisson version")

// parseRedissonVersion parses "3.22", "3.22.1" or "redisson-3.22.1".
func parseRedissonVersion(s string) (redissonVersion, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "redisson-")
	parts := strings.Split(t, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return redissonVersion{}, fmt.Errorf("%w %q: want major.minor[.patch], e.g. 3.22.1", errVersion, s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p == "" || (len(p) > 1 && p[0] == '0') {
			return redissonVersion{}, fmt.Errorf("%w %q: want major.minor[.patch], e.g. 3.22.1", errVersion, s)
		}
		n[i] = v
	}
	v := redissonVersion{n[0], n[1], n[2]}
	if v.less(oldestRedisson.major, oldestRedisson.minor, 0) ||
		!v.less(newestRedisson.major, newestRedisson.minor+1, 0) {
		return redissonVersion{}, fmt.Errorf("%w %q: unsupported; goredisson knows Redisson %d.%d.0 to %d.%d.x (leave the option out for the newest layout)",
			errVersion, s, oldestRedisson.major, oldestRedisson.minor, newestRedisson.major, newestRedisson.minor)
	}
	return v, nil
}

// WithRedissonVersion names the Java side's Redisson release, e.g. "3.20.1".
// On a Cluster it also picks the pub/sub (unless WithPubSubMode or
// WithShardedPubSub says): classic before 3.22.0, both kinds from 3.22.0
// to 3.27.x, sharded (AUTO) from 3.28.0.
func WithRedissonVersion(v string) Option {
	return func(o *options) {
		rv, err := parseRedissonVersion(v)
		if err != nil {
			o.errs = append(o.errs, err)
			return
		}
		o.version = rv
	}
}

// WithNameMapper applies Redisson's NameMapper (docs/redisson.md).
func WithNameMapper(mapName, unmapName func(string) string) Option {
	return func(o *options) {
		if mapName == nil || unmapName == nil {
			o.errs = append(o.errs, errors.New("name mapper: nil map or unmap function"))
			return
		}
		o.mapName, o.unmapName = mapName, unmapName
	}
}

// classicPubSubOnly reports whether the Java side never uses sharded
// pub/sub: Redisson before 3.22.0 always publishes with PUBLISH and
// listens with SUBSCRIBE.
func (o *options) classicPubSubOnly() bool { return o.version.less(3, 22, 0) }

// probesSharding reports whether the Java side (Redisson 3.22.0 to 3.27.x)
// decides sharded pub/sub on a Cluster by sending SPUBLISH "" "" to one
// node, sharded only when that node is the master of slot 0: 3.22.0 to
// 3.26.x ask the first configured address that connects, 3.27.x the first
// master of a map keyed by identity-hashed clients (a new draw at every
// start). A Go client cannot tell which each Java client chose. From
// 3.28.0 Redisson asks PUBSUB SHARDNUMSUB (commit c93363a3d), as AUTO does.
func (o *options) probesSharding() bool {
	return o.version != (redissonVersion{}) && !o.version.less(3, 22, 0) && o.version.less(3, 28, 0)
}

// mapped is a name under the NameMapper: the key and the base of the
// auxiliary keys that some releases derive from the unmapped name.
type mapped struct {
	key string // the Redis key (Redisson's getRawName)
	// aux is the name the release's auxiliary keys (a fair lock's queue
	// and timeouts, a permit semaphore's timeouts) derive from.
	aux string
	err error
}

// mapName applies the NameMapper to name for a lock of kind k (or a
// synchronizer, when sync is non-empty) as the configured release does.
func (c *Client) mapName(name string, k kind, sync string) mapped {
	if c == nil || c.opts.mapName == nil || name == "" {
		return mapped{key: name, aux: name}
	}
	o := &c.opts
	key, err := mapOnce(o, name)
	if err != nil {
		return mapped{key: name, aux: name, err: err}
	}
	m := mapped{key: key, aux: key}
	switch {
	case sync == "" && (k == kindRead || k == kindWrite) && o.version.less(3, 20, 1):
		// RedissonReadWriteLock passed getRawName() to the read and write
		// locks, which mapped it again (fixed in 3.20.1, #4925).
		twice, err := mapOnce(o, key)
		if err != nil {
			return mapped{key: name, aux: name, err: err}
		}
		m.key, m.aux = twice, twice
	case sync == "" && (k == kindFair || k == kindNonReentrantFair) && o.version.less(3, 52, 0):
		// redisson_lock_queue and redisson_lock_timeout used the unmapped
		// name before 3.52.0 (#6759).
		m.aux = name
	case sync == "permitsemaphore" && o.version.less(3, 19, 1):
		// {name}:timeout used the unmapped name before 3.19.1 (#4708).
		m.aux = name
	}
	return m
}

// mapOnce maps name and checks the mapper's answer.
func mapOnce(o *options, name string) (string, error) {
	key := o.mapName(name)
	switch {
	case key == "":
		return "", fmt.Errorf("%w: name mapper maps %q to an empty name", ErrInvalidArgument, name)
	case o.unmapName(key) != name:
		return "", fmt.Errorf("%w: name mapper maps %q to %q, which it unmaps to %q (two names would share a key)", ErrInvalidArgument, name, key, o.unmapName(key))
	}
	return key, nil
}
