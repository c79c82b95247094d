// Command cachebreakdown shows a rebuild lock against cache breakdown: a
// hot cache key expires while many readers want it.
//
// A Redis cache sits in front of a slow database. The hot key expires
// several times (the program deletes it, as its TTL would), each time under
// 50 concurrent readers, and the program counts the database loads each
// expiry causes, with three strategies:
//
//   - no guard: every reader that misses loads from the database;
//   - lock: the first reader to miss takes the lock "<key>:rebuild" and
//     reloads; the others wait for the lock, find the fresh copy and load
//     nothing;
//   - two-level: L1 has a short TTL and L2 a long one; on an L1 miss one
//     reader takes the lock without waiting and reloads both, while the
//     others serve the (possibly stale) L2 copy at once.
//
// The program exits 1 when a guarded strategy loads more than once per
// expiry or a read fails.
//
//	go run ./examples/cachebreakdown [--redis ADDR] [--readers 50] [--expiries 3] [--load-time 20ms]
//
// Without --redis it starts a throwaway redis-server (it must be on PATH, or
// named by REDIS_SERVER) and stops it at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

const (
	l1TTL = time.Minute // the hot copy
	l2TTL = time.Hour   // the stale copy of the two-level cache
)

func main() {
	addr := flag.String("redis", "", "Redis address (default: start a throwaway redis-server)")
	readers := flag.Int("readers", 50, "concurrent readers after each expiry")
	expiries := flag.Int("expiries", 3, "times the hot key expires")
	loadTime := flag.Duration("load-time", 20*time.Millisecond, "time one database load takes")
	flag.Parse()
	if err := run(*addr, *readers, *expiries, *loadTime); err != nil {
		fmt.Fprintln(os.Stderr, "cachebreakdown:", err)
		os.Exit(1)
	}
}

// cache is a Redis cache in front of a slow database that counts its loads.
type cache struct {
	rdb      *redis.Client
	locks    *rlock.Client
	loadTime time.Duration
	loads    atomic.Int64 // database loads
	stale    atomic.Int64 // reads served from L2
}

// getWithLock reads key; on a miss one reader at a time reloads it under
// the rebuild lock, and the others, once they have the lock, find the
// fresh copy.
func (c *cache) getWithLock(ctx context.Context, key string) (string, error) {
	if v, err := c.rdb.Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
		return v, err // a hit, or a Redis error
	}
	ctx = ctxowner.New(ctx) // this read owns the lock
	lock := c.locks.NewLock(key + ":rebuild")
	if err := lock.Lock(ctx); err != nil {
		return "", err
	}
	defer lock.Unlock(ctx)
	// Check again: the reader that held the lock before us reloaded it.
	if v, err := c.rdb.Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
		return v, err
	}
	return c.reload(ctx, key, false)
}

// getTwoLevel reads L1; on a miss one reader reloads L1 and L2 under the
// rebuild lock while the others serve the L2 copy without waiting.
func (c *cache) getTwoLevel(ctx context.Context, key string) (string, error) {
	if v, err := c.rdb.Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
		return v, err
	}
	ctx = ctxowner.New(ctx)
	lock := c.locks.NewLock(key + ":rebuild")
	ok, err := lock.TryLock(ctx, 0, 0) // one attempt; lease 0: the watchdog renews it
	if err != nil {
		return "", err
	}
	if !ok { // someone is reloading: serve the stale copy
		v, err := c.rdb.Get(ctx, key+":l2").Result()
		switch {
		case err == nil:
			c.stale.Add(1)
			return v, nil
		case !errors.Is(err, redis.Nil):
			return "", err
		}
		if err := lock.Lock(ctx); err != nil { // no L2 copy yet: wait for the reload
			return "", err
		}
	}
	defer lock.Unlock(ctx)
	if v, err := c.rdb.Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
		return v, err
	}
	return c.reload(ctx, key, true)
}

// getUnguarded reads key and reloads it on a miss, as every reader does.
func (c *cache) getUnguarded(ctx context.Context, key string) (string, error) {
	if v, err := c.rdb.Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
		return v, err
	}
	return c.reload(ctx, key, false)
}

// reload loads key from the database and caches it in L1 (and L2).
func (c *cache) reload(ctx context.Context, key string, l2 bool) (string, error) {
	n := c.loads.Add(1)
	time.Sleep(c.loadTime)
	v := key + "@v" + strconv.FormatInt(n, 10)
	if err := c.rdb.Set(ctx, key, v, l1TTL).Err(); err != nil || !l2 {
		return v, err
	}
	return v, c.rdb.Set(ctx, key+":l2", v, l2TTL).Err()
}

// expire warms the cache up, then lets key expire n times, each time under
// readers concurrent reads; it returns the loads each expiry caused and
// how many reads failed.
func expire(ctx context.Context, c *cache, get func(context.Context, string) (string, error), key string, n, readers int) ([]int, int, error) {
	if _, err := get(ctx, key); err != nil {
		return nil, 0, err
	}
	var loads []int
	var failed atomic.Int64
	for range n {
		if err := c.rdb.Del(ctx, key).Err(); err != nil { // as its TTL would
			return nil, 0, err
		}
		before := c.loads.Load()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range readers {
			wg.Go(func() {
				<-start
				if _, err := get(ctx, key); err != nil {
					failed.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		loads = append(loads, int(c.loads.Load()-before))
	}
	return loads, int(failed.Load()), nil
}

func run(addr string, readers, expiries int, loadTime time.Duration) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt) // Ctrl-C ends every wait
	defer cancel()
	addr, stop, err := redisAddr(ctx, addr)
	if err != nil {
		return err
	}
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: readers + 4})
	defer rdb.Close()
	locks, err := rlock.NewClient(rdb)
	if err != nil {
		return err
	}
	defer locks.Close()
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, strategy := range []string{"no guard", "lock", "two-level"} {
		c := &cache{rdb: rdb, locks: locks, loadTime: loadTime}
		get := map[string]func(context.Context, string) (string, error){
			"no guard": c.getUnguarded, "lock": c.getWithLock, "two-level": c.getTwoLevel,
		}[strategy]
		key := "cache:" + id + ":" + strategy
		loads, failed, err := expire(ctx, c, get, key, expiries, readers)
		rdb.Del(ctx, key, key+":l2")
		if err != nil {
			return err
		}
		fmt.Printf("%-9s  backend loads per expiry %v, stale reads %d, errors %d\n", strategy, loads, c.stale.Load(), failed)
		for _, n := range loads {
			if strategy != "no guard" && (n != 1 || failed != 0) {
				return fmt.Errorf("%s: loads per expiry %v, errors %d; want exactly one load each", strategy, loads, failed)
			}
		}
	}
	return nil
}

// redisAddr returns addr after checking that Redis answers there, or, when
// addr is empty, starts a throwaway redis-server. Call stop when done.
func redisAddr(ctx context.Context, addr string) (_ string, stop func(), _ error) {
	if addr == "" {
		srv, err := rlocktest.Start()
		if err != nil {
			return "", nil, err
		}
		return srv.Addr(), func() { _ = srv.Close() }, nil
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return "", nil, fmt.Errorf("redis at %s is unreachable: %w", addr, err)
	}
	return addr, func() {}, nil
}
