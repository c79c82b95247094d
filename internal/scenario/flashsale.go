package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// FlashSale configures a coupon flash sale: Buyers each click "buy" Clicks
// times at once, the clicks spread over two service instances (two Redis
// connections and, when locking, two goredisson Clients), each running
// Workers goroutines. Stock and orders live in Redis under Prefix.
type FlashSale struct {
	Coupons int           // coupons for sale (50)
	Buyers  int           // distinct buyers (200)
	Clicks  int           // concurrent requests per buyer (2)
	Workers int           // goroutines per instance (16)
	Work    time.Duration // time between reading the stock and writing it back (a database round trip)
	Prefix  string        // key prefix, e.g. "flashsale:<run id>"
	// Progress, when set, is called after each request with the number of
	// requests done so far (from several goroutines).
	Progress func(done int)
}

// DefaultFlashSale is the seed scenario: 50 coupons, 200 buyers clicking
// twice, 16 goroutines in each of two instances.
func DefaultFlashSale(prefix string) FlashSale {
	return FlashSale{Coupons: 50, Buyers: 200, Clicks: 2, Workers: 16, Work: 200 * time.Microsecond, Prefix: prefix}
}

// Requests returns the number of buy requests of the sale.
func (f FlashSale) Requests() int { return f.Buyers * f.Clicks }

// SaleResult is the outcome of one flash sale.
type SaleResult struct {
	Locked          bool          // run with goredisson locks
	Requests        int           // buy requests served
	Orders          int           // orders created
	StockLeft       int           // stock after the sale
	Oversold        int           // orders beyond the coupons
	DuplicateBuyers int           // buyers with more than one order
	HandoffP50      time.Duration // stock lock: unlock returned -> next waiter's lock returned
	HandoffP99      time.Duration
	Handoffs        int // handoffs measured
	Elapsed         time.Duration
}

// section is one critical section on the stock lock: when its owner asked
// for the lock, got it, and released it.
type section struct{ asked, got, released time.Time }

// Run plays the sale on the two instances rdbs. With locks nil it runs
// without any lock; otherwise locks[i] (a goredisson Client on rdbs[i])
// guards each buyer's order check with a lock per buyer and the stock
// update with one stock lock.
func (f FlashSale) Run(ctx context.Context, rdbs [2]redis.UniversalClient, locks *[2]*rlock.Client) (SaleResult, error) {
	if f.Coupons <= 0 || f.Buyers <= 0 || f.Clicks <= 0 || f.Workers <= 0 || f.Prefix == "" {
		return SaleResult{}, fmt.Errorf("scenario: flash sale needs positive coupons, buyers, clicks, workers and a prefix: %+v", f)
	}
	stockKey, ordersKey := f.Prefix+":stock", f.Prefix+":orders"
	if err := rdbs[0].Del(ctx, stockKey, ordersKey).Err(); err != nil {
		return SaleResult{}, err
	}
	if err := rdbs[0].Set(ctx, stockKey, f.Coupons, 0).Err(); err != nil {
		return SaleResult{}, err
	}
	// Click c of every buyer goes to instance c%2, in the same order on
	// both, so that a buyer's clicks arrive at about the same time.
	var queues [2]chan int
	for i := range queues {
		queues[i] = make(chan int, f.Requests())
	}
	for b := range f.Buyers {
		for c := range f.Clicks {
			queues[c%2] <- b
		}
	}
	var (
		done     atomic.Int64
		mu       sync.Mutex
		sections []section
		errs     = make(chan error, 2*f.Workers)
		wg       sync.WaitGroup
	)
	start := time.Now()
	for i := range 2 {
		close(queues[i])
		for range f.Workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := ctxowner.New(ctx)
				for buyer := range queues[i] {
					var s section
					var err error
					if locks == nil {
						err = f.buy(owner, rdbs[i], stockKey, ordersKey, buyer, nil, nil, &s)
					} else {
						err = f.buy(owner, rdbs[i], stockKey, ordersKey, buyer,
							locks[i].NewLock(f.Prefix+":lock:buyer:"+strconv.Itoa(buyer)),
							locks[i].NewLock(f.Prefix+":lock:stock"), &s)
					}
					if err != nil {
						errs <- err
						return
					}
					if !s.got.IsZero() {
						mu.Lock()
						sections = append(sections, s)
						mu.Unlock()
					}
					n := done.Add(1)
					if f.Progress != nil {
						f.Progress(int(n))
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(drain(errs)...); err != nil {
		return SaleResult{}, err
	}
	res := SaleResult{Locked: locks != nil, Requests: int(done.Load()), Elapsed: time.Since(start)}
	stock, err := rdbs[0].Get(ctx, stockKey).Int()
	if err != nil {
		return res, err
	}
	orders, err := rdbs[0].HGetAll(ctx, ordersKey).Result()
	if err != nil {
		return res, err
	}
	res.StockLeft = stock
	for _, v := range orders {
		n, _ := strconv.Atoi(v)
		res.Orders += n
		if n > 1 {
			res.DuplicateBuyers++
		}
	}
	res.Oversold = max(0, res.Orders-f.Coupons)
	gaps := handoffGaps(sections)
	res.Handoffs = len(gaps)
	res.HandoffP50, res.HandoffP99 = Percentile(gaps, 50), Percentile(gaps, 99)
	return res, nil
}

// buy serves one click: unless the buyer already has an order, take a
// coupon if one is left and create the order. With locks, the buyer lock
// makes "check the order, then create it" atomic per buyer and the stock
// lock makes "read the stock, then write it back" atomic.
func (f FlashSale) buy(ctx context.Context, rdb redis.UniversalClient, stockKey, ordersKey string, buyer int, buyerLock, stockLock rlock.Locker, s *section) error {
	id := strconv.Itoa(buyer)
	if buyerLock != nil {
		if err := buyerLock.Lock(ctx); err != nil {
			return err
		}
		defer func() { _ = buyerLock.Unlock(ctx) }()
	}
	has, err := rdb.HExists(ctx, ordersKey, id).Result()
	if err != nil || has {
		return err // one order per buyer: a second click is refused
	}
	if stockLock != nil {
		s.asked = time.Now()
		if err := stockLock.Lock(ctx); err != nil {
			return err
		}
		s.got = time.Now()
	}
	stock, err := rdb.Get(ctx, stockKey).Int()
	if err == nil && stock > 0 {
		time.Sleep(f.Work)
		if err = rdb.Set(ctx, stockKey, stock-1, 0).Err(); err == nil {
			err = rdb.HIncrBy(ctx, ordersKey, id, 1).Err()
		}
	}
	if stockLock != nil {
		if uerr := stockLock.Unlock(ctx); uerr != nil && err == nil {
			err = uerr
		}
		s.released = time.Now()
	}
	return err
}

// handoffGaps returns, for each critical section whose owner was already
// waiting when the previous one ended, the time from the previous
// section's Unlock returning to its Lock returning (0 when it returned
// first: the waiter may learn of the release before the releaser does).
func handoffGaps(sections []section) []time.Duration {
	slices.SortFunc(sections, func(a, b section) int { return a.got.Compare(b.got) })
	var gaps []time.Duration
	for i := 1; i < len(sections); i++ {
		prev, next := sections[i-1], sections[i]
		if next.asked.Before(prev.released) {
			gaps = append(gaps, max(0, next.got.Sub(prev.released)))
		}
	}
	return gaps
}

// Percentile returns the p-th percentile of d (sorted in place), 0 for none.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p/100))]
}

func drain(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// Instances are the two service instances of a flash sale: a go-redis
// client and a goredisson Client each, on one Redis.
type Instances struct {
	Redis [2]redis.UniversalClient
	Locks [2]*rlock.Client
}

// OpenInstances connects two instances to addr with connection pools for
// workers goroutines each. Close them when done.
func OpenInstances(addr string, workers int) (*Instances, error) {
	return OpenInstancesOptions(&redis.Options{Addr: addr}, workers)
}

// OpenInstancesOptions is OpenInstances for the Redis that opt reaches
// (credentials, TLS and database included).
func OpenInstancesOptions(opt *redis.Options, workers int) (*Instances, error) {
	in := &Instances{}
	for i := range in.Redis {
		o := *opt
		o.PoolSize = workers + 4
		rdb := redis.NewClient(&o)
		c, err := rlock.NewClient(rdb)
		if err != nil {
			_ = rdb.Close()
			in.Close()
			return nil, err
		}
		in.Redis[i], in.Locks[i] = rdb, c
	}
	return in, nil
}

// Close closes both instances' clients.
func (in *Instances) Close() {
	for i := range in.Redis {
		if in.Locks[i] != nil {
			_ = in.Locks[i].Close()
		}
		if in.Redis[i] != nil {
			_ = in.Redis[i].Close()
		}
	}
}
