// Command cachebreakdown lets a hot cache key expire several times under
// 50 concurrent readers and counts the backend loads each expiry causes:
// without a guard every reader that misses loads; with a goredisson lock
// one reader rebuilds while the others wait; with two cache levels one
// reader rebuilds while the others serve the stale L2 copy at once. Exits
// 1 when a guarded strategy loads more than once per expiry or a read
// fails.
//
//	go run ./examples/cachebreakdown [--redis ADDR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/embedded"
	"github.com/goredisson/goredisson/internal/scenario"
	"github.com/goredisson/goredisson/rlock"
)

func main() {
	addr := flag.String("redis", "", "Redis address (default: start a private one)")
	readers := flag.Int("readers", 50, "concurrent readers after each expiry")
	expiries := flag.Int("expiries", 3, "times the hot key expires")
	flag.Parse()
	if err := run(*addr, *readers, *expiries); err != nil {
		fmt.Fprintln(os.Stderr, "cachebreakdown:", err)
		os.Exit(1)
	}
}

func run(addr string, readers, expiries int) error {
	ctx := context.Background()
	r, err := embedded.Open(ctx, addr)
	if err != nil {
		return err
	}
	defer r.Close()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: readers + 4})
	defer rdb.Close()
	locks, err := rlock.NewClient(rdb)
	if err != nil {
		return err
	}
	defer locks.Close()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, strategy := range []string{"", "lock", "two-level"} {
		c := &scenario.Cache{Redis: rdb, Locks: locks, Backend: &scenario.Backend{Delay: 20 * time.Millisecond},
			Strategy: strategy, TTL: time.Minute, L2TTL: time.Hour}
		key := "example:hot:" + run + ":" + strategy
		res, err := scenario.Expiries(ctx, c, key, expiries, readers)
		rdb.Del(ctx, key, key+":l2")
		if err != nil {
			return err
		}
		name := strategy
		if name == "" {
			name = "no guard"
		}
		fmt.Printf("%-9s  backend loads per expiry %v, stale reads %d, errors %d\n", name, res.Loads, res.Stale, res.Errors)
		if strategy == "" {
			continue
		}
		for _, n := range res.Loads {
			if n != 1 || res.Errors != 0 {
				return fmt.Errorf("%s: loads per expiry %v, errors %d; want exactly one load each", name, res.Loads, res.Errors)
			}
		}
	}
	return nil
}
