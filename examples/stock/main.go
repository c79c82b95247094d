// Command stock shows stock deduction guarded by a goredisson lock.
//
// Ten workers, spread over two service instances (two go-redis clients and
// two rlock Clients, as two processes would have), each try to buy one of
// five items: read the stock, take a slow step (a payment call, say), and
// write back stock-1. Without a lock they all read the same stock and sell
// more items than exist; with a goredisson lock around the read and the
// write, exactly five are sold. The program exits 1 if the locked run
// oversells.
//
//	go run ./examples/stock [--redis ADDR] [--workers 10] [--items 5]
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

// slowStep is the time between reading the stock and writing it back.
const slowStep = 2 * time.Millisecond

func main() {
	addr := flag.String("redis", "", "Redis address (default: start a throwaway redis-server)")
	workers := flag.Int("workers", 10, "workers, one purchase each")
	items := flag.Int("items", 5, "items in stock")
	flag.Parse()
	if err := run(*addr, *workers, *items); err != nil {
		fmt.Fprintln(os.Stderr, "stock:", err)
		os.Exit(1)
	}
}

// mutex is what a purchase needs of a lock. *rlock.Lock has these methods;
// so has noLock, the "before" of the comparison.
type mutex interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// noLock locks nothing.
type noLock struct{}

func (noLock) Lock(context.Context) error   { return nil }
func (noLock) Unlock(context.Context) error { return nil }

// buy is one worker's purchase. The lock is taken for a new owner (this
// purchase), waited for as long as ctx allows, and released when buy
// returns. It reports whether the worker bought an item.
func buy(ctx context.Context, lock mutex, rdb *redis.Client, key string) (bool, error) {
	ctx = ctxowner.New(ctx) // this purchase owns the lock, whatever goroutine runs it
	if err := lock.Lock(ctx); err != nil {
		return false, err
	}
	defer lock.Unlock(ctx)

	// The critical section: read, check, slow step, write back.
	stock, err := rdb.Get(ctx, key).Int()
	if err != nil || stock <= 0 {
		return false, err // sold out
	}
	time.Sleep(slowStep)
	if err := rdb.Set(ctx, key, stock-1, 0).Err(); err != nil {
		return false, err
	}
	return true, nil
}

// sell puts items in stock and lets the workers buy at once, worker w on
// instance w%2 with the lock locks[w%2] gives it. It returns how many
// bought an item.
func sell(ctx context.Context, rdbs []*redis.Client, locks []mutex, key string, workers, items int) (int, error) {
	if err := rdbs[0].Set(ctx, key, items, 0).Err(); err != nil {
		return 0, err
	}
	var sold atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			ok, err := buy(ctx, locks[w%2], rdbs[w%2], key)
			if ok {
				sold.Add(1)
			}
			errs[w] = err
		})
	}
	close(start)
	wg.Wait()
	return int(sold.Load()), errors.Join(errs...)
}

func run(addr string, workers, items int) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt) // Ctrl-C ends every wait
	defer cancel()
	addr, stop, err := redisAddr(ctx, addr)
	if err != nil {
		return err
	}
	defer stop()
	key := "stock:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var rdbs []*redis.Client
	var locks []mutex
	for range 2 { // two service instances
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: workers + 4})
		defer rdb.Close()
		client, err := rlock.NewClient(rdb)
		if err != nil {
			return err
		}
		defer client.Close()
		rdbs, locks = append(rdbs, rdb), append(locks, client.NewLock(key+":lock"))
	}
	defer rdbs[0].Del(ctx, key)
	runs := []struct {
		label string
		locks []mutex
	}{{"no lock", []mutex{noLock{}, noLock{}}}, {"goredisson", locks}}
	for _, r := range runs {
		sold, err := sell(ctx, rdbs, r.locks, key, workers, items)
		if err != nil {
			return err
		}
		left, err := rdbs[0].Get(ctx, key).Int()
		if err != nil {
			return err
		}
		fmt.Printf("%-10s: %d workers, %d items: sold %d, stock left %d, oversold %d\n",
			r.label, workers, items, sold, left, max(0, sold-items))
		if r.label == "goredisson" && sold != min(workers, items) {
			return fmt.Errorf("the locked run sold %d items of %d", sold, items)
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
