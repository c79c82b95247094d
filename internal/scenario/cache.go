package scenario

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// Backend is the slow source of truth behind a cache (a database): it
// counts its loads.
type Backend struct {
	Delay time.Duration // how long a load takes
	loads atomic.Int64
}

// Load returns the value of key after Delay and counts the load.
func (b *Backend) Load(ctx context.Context, key string) (string, error) {
	n := b.loads.Add(1)
	select {
	case <-time.After(b.Delay):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return fmt.Sprintf("%s@v%d", key, n), nil
}

// Loads returns how many loads were made.
func (b *Backend) Loads() int { return int(b.loads.Load()) }

// Cache is a Redis cache in front of a Backend, with a rebuild guard for
// cache breakdown (a hot key expiring under load). Strategy "" rebuilds
// without a lock (every reader that misses loads); "lock" lets one reader
// rebuild under a goredisson lock while the others wait for it and then
// read the fresh copy; "two-level" keeps an L1 copy with a short TTL and an
// L2 copy with a long one: on an L1 miss one reader rebuilds both under
// the lock while the others serve the (possibly stale) L2 copy at once.
type Cache struct {
	Redis    redis.UniversalClient
	Locks    *rlock.Client // required by "lock" and "two-level"
	Backend  *Backend
	Strategy string
	TTL      time.Duration // L1 TTL (and the only TTL without two levels)
	L2TTL    time.Duration // L2 TTL for "two-level"
	stale    atomic.Int64
}

// Stale returns how many reads were served from L2 while L1 was missing.
func (c *Cache) Stale() int { return int(c.stale.Load()) }

// Get returns the value of key, loading it on a miss as the strategy says.
func (c *Cache) Get(ctx context.Context, key string) (string, error) {
	if v, err := c.Redis.Get(ctx, key).Result(); err == nil || !errors.Is(err, redis.Nil) {
		return v, err
	}
	switch c.Strategy {
	case "":
		return c.load(ctx, key)
	case "lock":
		lock := c.Locks.NewLock(key + ":rebuild")
		owner := ctxowner.New(ctx)
		if err := lock.Lock(owner); err != nil {
			return "", err
		}
		defer func() { _ = lock.Unlock(owner) }()
		// Double check: whoever held the lock before us may have rebuilt it.
		if v, err := c.Redis.Get(ctx, key).Result(); err == nil || !errors.Is(err, redis.Nil) {
			return v, err
		}
		return c.load(ctx, key)
	case "two-level":
		lock := c.Locks.NewLock(key + ":rebuild")
		owner := ctxowner.New(ctx)
		ok, err := lock.TryLock(owner, 0, 0)
		if err != nil {
			return "", err
		}
		if !ok {
			v, err := c.Redis.Get(ctx, key+":l2").Result()
			if err == nil {
				c.stale.Add(1)
				return v, nil
			}
			if !errors.Is(err, redis.Nil) {
				return "", err
			}
			// Cold start, no L2 copy yet: wait for the rebuild.
			if err := lock.Lock(owner); err != nil {
				return "", err
			}
		}
		defer func() { _ = lock.Unlock(owner) }()
		if v, err := c.Redis.Get(ctx, key).Result(); err == nil || !errors.Is(err, redis.Nil) {
			return v, err
		}
		v, err := c.load(ctx, key)
		if err == nil {
			err = c.Redis.Set(ctx, key+":l2", v, c.L2TTL).Err()
		}
		return v, err
	}
	return "", fmt.Errorf("scenario: unknown cache strategy %q", c.Strategy)
}

func (c *Cache) load(ctx context.Context, key string) (string, error) {
	v, err := c.Backend.Load(ctx, key)
	if err != nil {
		return "", err
	}
	return v, c.Redis.Set(ctx, key, v, c.TTL).Err()
}

// ExpiryResult is the outcome of Expiries.
type ExpiryResult struct {
	Expiries int   // times the hot key expired
	Readers  int   // concurrent readers after each expiry
	Loads    []int // backend loads caused by each expiry
	Stale    int   // reads served from L2
	Errors   int   // reads that failed
}

// Expiries lets the hot key expire n times (the L1 copy is deleted, as its
// TTL would) and each time sends readers concurrent reads, released
// together; it reports the backend loads each expiry caused.
func Expiries(ctx context.Context, c *Cache, key string, n, readers int) (ExpiryResult, error) {
	res := ExpiryResult{Expiries: n, Readers: readers}
	if _, err := c.Get(ctx, key); err != nil { // warm up: L1 (and L2) filled
		return res, err
	}
	var failed atomic.Int64
	for range n {
		if err := c.Redis.Del(ctx, key).Err(); err != nil {
			return res, err
		}
		before := c.Backend.Loads()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := c.Get(ctx, key); err != nil {
					failed.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		res.Loads = append(res.Loads, c.Backend.Loads()-before)
	}
	res.Stale, res.Errors = c.Stale(), int(failed.Load())
	return res, nil
}
