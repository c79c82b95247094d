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

// StockResult is the outcome of a stock deduction run.
type StockResult struct {
	Workers   int // workers that tried to buy one item each
	Items     int // items in stock at the start
	Sold      int // workers told "bought"
	StockLeft int // stock after the run
	Oversold  int // items sold beyond the stock
}

// Stock plays the seeds' stock deduction: items in stock at key, workers
// goroutines spread over the instances rdbs, each reading the stock and,
// if it is above zero, writing back stock-1 after work (a slow service
// call). With locks (one goredisson Client per instance) each worker does
// it under the lock key+":lock", waiting for it; without, the workers race.
func Stock(ctx context.Context, rdbs []redis.UniversalClient, locks []*rlock.Client, key string, workers, items int, work time.Duration) (StockResult, error) {
	if len(rdbs) == 0 || (locks != nil && len(locks) != len(rdbs)) || workers <= 0 || items < 0 || key == "" {
		return StockResult{}, fmt.Errorf("scenario: stock needs instances, one lock client per instance, workers > 0, items >= 0 and a key")
	}
	if err := rdbs[0].Set(ctx, key, items, 0).Err(); err != nil {
		return StockResult{}, err
	}
	var (
		sold atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := rdbs[w%len(rdbs)]
			owner := ctxowner.New(ctx)
			if locks != nil {
				lock := locks[w%len(locks)].NewLock(key + ":lock")
				if err := lock.Lock(owner); err != nil {
					errs <- err
					return
				}
				defer func() {
					if err := lock.Unlock(owner); err != nil {
						errs <- err
					}
				}()
			}
			n, err := rdb.Get(owner, key).Int()
			if err != nil || n <= 0 {
				errs <- err
				return
			}
			time.Sleep(work)
			if err := rdb.Set(owner, key, n-1, 0).Err(); err != nil {
				errs <- err
				return
			}
			sold.Add(1)
		}()
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(drain(errs)...); err != nil {
		return StockResult{}, err
	}
	left, err := rdbs[0].Get(ctx, key).Int()
	if err != nil {
		return StockResult{}, err
	}
	res := StockResult{Workers: workers, Items: items, Sold: int(sold.Load()), StockLeft: left}
	res.Oversold = max(0, res.Sold-items)
	return res, nil
}
