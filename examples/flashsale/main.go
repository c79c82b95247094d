// Command flashsale shows a coupon flash sale guarded by goredisson locks:
// never more orders than coupons, and at most one order per buyer.
//
// 200 buyers click "buy" twice at the same moment, one click reaching each
// of two service instances (two go-redis clients and two rlock Clients, as
// two processes would have), for 50 coupons. A click checks that the buyer
// has no order yet, takes a coupon from the stock (read it, a database
// round trip, write back stock-1) and writes the order. Without locks both
// checks race: coupons are oversold and buyers get two orders. With a lock
// per buyer around "check the order, then create it" and a lock on the
// stock around "read, then write back", exactly 50 buyers get one order
// each. A lock inside one process would not do: the two clicks of a buyer
// run in different instances. The program exits 1 if the locked run sells
// anything but one coupon to each of 50 buyers.
//
//	go run ./examples/flashsale [--redis ADDR]
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
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

const (
	coupons     = 50
	buyers      = 200
	workers     = 16                     // goroutines per instance
	dbRoundTrip = 200 * time.Microsecond // between reading the stock and writing it back
	stockWait   = 5 * time.Second        // a click waits this long for the stock lock
)

// errBusy answers a click that did not get the stock lock within stockWait.
var errBusy = errors.New("busy, try again")

func main() {
	addr := flag.String("redis", "", "Redis address (default: start a throwaway redis-server)")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "flashsale:", err)
		os.Exit(1)
	}
}

// sale is one flash sale: its stock and its orders (a hash buyer -> number
// of orders) live under prefix; locks (one per instance, nil for the run
// without locks) guard it.
type sale struct {
	prefix string
	rdbs   [2]*redis.Client
	locks  [2]*rlock.Client
}

// click serves one "buy" click of buyer on instance i.
func (s *sale) click(ctx context.Context, i int, buyer string) error {
	ctx = ctxowner.New(ctx) // this request owns the locks it takes
	rdb := s.rdbs[i]
	if s.locks[i] != nil {
		buyerLock := s.locks[i].NewLock(s.prefix + ":lock:buyer:" + buyer)
		if err := buyerLock.Lock(ctx); err != nil {
			return err
		}
		defer buyerLock.Unlock(ctx) // only after the order is written
	}
	// One order per buyer: check, then act, under the buyer's lock.
	has, err := rdb.HExists(ctx, s.prefix+":orders", buyer).Result()
	if err != nil || has {
		return err
	}
	got, err := s.takeCoupon(ctx, i)
	if err != nil || !got {
		return err
	}
	return rdb.HIncrBy(ctx, s.prefix+":orders", buyer, 1).Err()
}

// takeCoupon takes one coupon from the stock, if one is left, under the
// stock lock; it waits at most stockWait for the lock.
func (s *sale) takeCoupon(ctx context.Context, i int) (bool, error) {
	rdb := s.rdbs[i]
	if s.locks[i] != nil {
		stockLock := s.locks[i].NewLock(s.prefix + ":lock:stock")
		ok, err := stockLock.TryLock(ctx, stockWait, 0) // lease 0: the watchdog renews it
		if err != nil {
			return false, err
		}
		if !ok {
			return false, errBusy
		}
		defer stockLock.Unlock(ctx)
	}
	stock, err := rdb.Get(ctx, s.prefix+":stock").Int()
	if err != nil || stock <= 0 {
		return false, err // sold out
	}
	time.Sleep(dbRoundTrip)
	return true, rdb.Set(ctx, s.prefix+":stock", stock-1, 0).Err()
}

// play runs the sale: every buyer's two clicks go one to each instance, in
// the same order on both, so that they arrive at about the same time.
func (s *sale) play(ctx context.Context) error {
	if err := s.rdbs[0].Set(ctx, s.prefix+":stock", coupons, 0).Err(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range 2 {
		queue := make(chan string, buyers)
		for b := range buyers {
			queue <- strconv.Itoa(b)
		}
		close(queue)
		for range workers {
			wg.Go(func() {
				for buyer := range queue {
					if err := s.click(ctx, i, buyer); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// report prints the outcome and returns the orders and the buyers with
// more than one.
func (s *sale) report(ctx context.Context, label string) (orders, twice int, err error) {
	stock, err := s.rdbs[0].Get(ctx, s.prefix+":stock").Int()
	if err != nil {
		return 0, 0, err
	}
	perBuyer, err := s.rdbs[0].HGetAll(ctx, s.prefix+":orders").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, v := range perBuyer {
		n, _ := strconv.Atoi(v)
		orders += n
		if n > 1 {
			twice++
		}
	}
	fmt.Printf("%-10s: %d clicks, %d coupons: %d orders, oversold %d, buyers with two orders %d, stock left %d\n",
		label, 2*buyers, coupons, orders, max(0, orders-coupons), twice, stock)
	return orders, twice, nil
}

func run(addr string) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt) // Ctrl-C ends every wait
	defer cancel()
	addr, stop, err := redisAddr(ctx, addr)
	if err != nil {
		return err
	}
	defer stop()
	var locks [2]*rlock.Client
	var rdbs [2]*redis.Client
	for i := range 2 { // two service instances
		rdbs[i] = redis.NewClient(&redis.Options{Addr: addr, PoolSize: workers + 4})
		defer rdbs[i].Close()
		if locks[i], err = rlock.NewClient(rdbs[i]); err != nil {
			return err
		}
		defer locks[i].Close()
	}
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, s := range []*sale{
		{prefix: "flashsale:" + id + ":no-lock", rdbs: rdbs},
		{prefix: "flashsale:" + id + ":goredisson", rdbs: rdbs, locks: locks},
	} {
		defer rdbs[0].Del(ctx, s.prefix+":stock", s.prefix+":orders")
		if err := s.play(ctx); err != nil {
			return err
		}
		label := "goredisson"
		if s.locks[0] == nil {
			label = "no lock"
		}
		orders, twice, err := s.report(ctx, label)
		if err != nil {
			return err
		}
		if s.locks[0] != nil && (orders != coupons || twice != 0) {
			return fmt.Errorf("the locked run made %d orders, %d buyers twice", orders, twice)
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
