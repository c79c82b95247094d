package engine

import "fmt"

// Names under Redisson's NameMapper (WithNameMapper), as the Java side's
// release (WithRedissonVersion) maps them: what each release changes, with
// the Redisson commits, is in docs/redisson.md#releases.

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
func (c *Core) mapName(name string, k Kind, sync string) mapped {
	if c == nil || c.cfg.MapName == nil || name == "" {
		return mapped{key: name, aux: name}
	}
	key, err := c.mapOnce(name)
	if err != nil {
		return mapped{key: name, aux: name, err: err}
	}
	m, err := c.asRelease(mapped{key: key, aux: key}, name, k, sync)
	if err != nil {
		return mapped{key: name, aux: name, err: err}
	}
	return m
}

// asRelease changes m, the mapping of name, as the configured release
// (older than the newest) maps that name for a lock of kind k or a
// synchronizer.
func (c *Core) asRelease(m mapped, name string, k Kind, sync string) (mapped, error) {
	v := c.cfg.Version
	switch {
	case sync == "" && (k == KindRead || k == KindWrite) && v.Less(3, 20, 1):
		// RedissonReadWriteLock passed getRawName() to the read and write
		// locks, which mapped it again (fixed in 3.20.1, #4925).
		twice, err := c.mapOnce(m.key)
		if err != nil {
			return m, err
		}
		m.key, m.aux = twice, twice
	case sync == "" && (k == KindFair || k == KindNonReentrantFair) && v.Less(3, 52, 0):
		// redisson_lock_queue and redisson_lock_timeout used the unmapped
		// name before 3.52.0 (#6759).
		m.aux = name
	case sync == "permitsemaphore" && v.Less(3, 19, 1):
		// {name}:timeout used the unmapped name before 3.19.1 (#4708).
		m.aux = name
	}
	return m, nil
}

// mapOnce maps name and checks the mapper's answer.
func (c *Core) mapOnce(name string) (string, error) {
	key := c.cfg.MapName(name)
	switch {
	case key == "":
		return "", fmt.Errorf("%w: name mapper maps %q to an empty name", ErrInvalidArgument, name)
	case c.cfg.UnmapName(key) != name:
		return "", fmt.Errorf("%w: name mapper maps %q to %q, which it unmaps to %q (two names would share a key)", ErrInvalidArgument, name, key, c.cfg.UnmapName(key))
	}
	return key, nil
}
