package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// The cache-breakdown scenario: a Redis cache in front of a slow backing
// store; one hot key has just expired and N requests arrive for it at
// once. The guard must let exactly one of them load the store.
//
// The strategies are those of examples/cachebreakdown (written again here:
// an example is a main package):
//   - rebuild lock, with each row's lock: on a miss, take the lock
//     "<key>:rebuild", read again (the holder before may have reloaded),
//     and load only if it still misses;
//   - goredisson two-level guard: L1 (the hot copy) and a long-lived L2
//     copy; on an L1 miss one request takes the lock without waiting
//     (TryLock(0)) and reloads both, every other request serves the L2
//     copy at once;
//   - no guard: every request that misses loads.

// Strategy rows of the breakdown table beyond the lock rows.
const (
	twoLevelName = "goredisson two-level guard"
	noGuardName  = "no guard"
)

// cacheTTL is the TTL of a reloaded value; l2TTL of the two-level guard's
// stale copy.
const (
	cacheTTL = 10 * time.Minute
	l2TTL    = time.Hour
)

// requestTimeout bounds a breakdown request: one still waiting then has
// failed (as a web request would time out).
const requestTimeout = 30 * time.Second

// breakdownResult is one breakdown burst of one row: every request's
// latency (ns), the loads of the backing store, stale reads served, and
// failed requests.
type breakdownResult struct {
	Lat    []int64
	Loads  int64
	Stale  int64
	Errors int64
	Err    string
}

// breakdownGo runs requests concurrent requests for key (absent from the
// cache), all released at once, with strategy ("lock" with l's lock,
// twoLevelName or noGuardName). For the two-level guard it writes the
// stale L2 copy first.
func breakdownGo(l lib, srv servers, strategy string, requests int, load time.Duration, key string) (breakdownResult, error) {
	cache := newRedis(srv.Redis, 64, nil)
	defer cache.Close()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout+10*time.Second)
	defer cancel()
	var newMutex newMutexFunc
	var rc *rlock.Client
	switch strategy {
	case "lock":
		nm, closeLib, err := openLib(l, srv, 64, nil, 0)
		if err != nil {
			return breakdownResult{}, err
		}
		defer closeLib()
		newMutex = nm
	case twoLevelName:
		lockRedis := newRedis(srv.Redis, 64, nil)
		defer lockRedis.Close()
		c, err := rlock.NewClient(lockRedis)
		if err != nil {
			return breakdownResult{}, err
		}
		defer c.Close()
		rc = c
		if err := cache.Set(ctx, key+":l2", "stale", l2TTL).Err(); err != nil {
			return breakdownResult{}, err
		}
	}
	if err := cache.Del(ctx, key).Err(); err != nil { // the hot key has expired
		return breakdownResult{}, err
	}
	var loads, stale, failed atomic.Int64
	var firstErr atomic.Value
	reload := func(ctx context.Context) error {
		n := loads.Add(1)
		time.Sleep(load)
		return cache.Set(ctx, key, key+"@v"+strconv.FormatInt(n, 10), cacheTTL).Err()
	}
	get := func(ctx context.Context) (bool, error) { // hit?
		err := cache.Get(ctx, key).Err()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return err == nil, err
	}
	request := func() error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		if hit, err := get(ctx); hit || err != nil {
			return err
		}
		switch strategy {
		case noGuardName:
			return reload(ctx)
		case twoLevelName:
			owner := ctxowner.New(ctx)
			lk := rc.NewLock(key + ":rebuild")
			ok, err := lk.TryLock(owner, 0, 0)
			if err != nil {
				return err
			}
			if !ok {
				err := cache.Get(ctx, key+":l2").Err()
				if err == nil {
					stale.Add(1)
					return nil
				}
				if !errors.Is(err, redis.Nil) {
					return err
				}
				if err := lk.Lock(owner); err != nil { // no L2 copy: wait for the reload
					return err
				}
			}
			defer lk.Unlock(owner)
			if hit, err := get(ctx); hit || err != nil {
				return err
			}
			if err := reload(ctx); err != nil {
				return err
			}
			return cache.Set(ctx, key+":l2", "fresh", l2TTL).Err()
		}
		m := newMutex(ctx, key+":rebuild")
		if err := m.lock(); err != nil {
			return err
		}
		hit, err := get(ctx)
		if err == nil && !hit {
			err = reload(ctx)
		}
		if uerr := m.unlock(); err == nil {
			err = uerr
		}
		return err
	}
	lat := make([]int64, requests)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			<-start
			t := time.Now()
			if err := request(); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
			lat[i] = int64(time.Since(t))
		})
	}
	time.Sleep(50 * time.Millisecond) // every goroutine waits at the barrier
	close(start)
	wg.Wait()
	res := breakdownResult{Lat: lat, Loads: loads.Load(), Stale: stale.Load(), Errors: failed.Load()}
	if e, ok := firstErr.Load().(string); ok {
		res.Err = e
	}
	return res, nil
}

// summary returns the p50 and p99 of the requests' latencies.
func (r breakdownResult) summary() (p50, p99 time.Duration) {
	d := make([]time.Duration, len(r.Lat))
	for i, v := range r.Lat {
		d[i] = time.Duration(v)
	}
	return pct(d, 50), pct(d, 99)
}

func (r breakdownResult) String() string {
	p50, p99 := r.summary()
	return fmt.Sprintf("%d loads, p50 %v p99 %v, %d stale, %d errors %s", r.Loads, p50, p99, r.Stale, r.Errors, r.Err)
}
