package rlock_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// Benchmarks run against the redis-server TestMain started. Each reports
// the PING round trip measured in the same run (ping-rtt-µs), so that
// latencies can be read as multiples of the physical limit:
//
//	go test -run '^$' -bench . -benchtime 5000x -count 3 ./rlock

func newBenchClient(b *testing.B, poolSize int) (*rlock.Client, *redis.Client) {
	b.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: poolSize})
	c, err := rlock.NewClient(rdb)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.Close()
		_ = rdb.Close()
	})
	return c, rdb
}

// startPinger PINGs Redis back to back on a connection of its own while a
// benchmark runs, and returns a func that stops it and reports the median
// round trip: the physical limit under the benchmark's own load.
func startPinger(b *testing.B) (stop func() time.Duration) {
	b.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []time.Duration)
	go func() {
		var d []time.Duration
		for ctx.Err() == nil {
			start := time.Now()
			if rdb.Ping(context.Background()).Err() != nil {
				break
			}
			d = append(d, time.Since(start))
			time.Sleep(100 * time.Microsecond)
		}
		done <- d
	}()
	return func() time.Duration {
		cancel()
		d := <-done
		_ = rdb.Close()
		return percentile(d, 50)
	}
}

// percentile returns the p-th percentile of d (sorted in place).
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p/100))]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// topLevelCalls sums the calls of commands a client sends itself (scripts,
// subscriptions); commands run inside scripts are left out.
func topLevelCalls(b *testing.B, rdb *redis.Client) int {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		switch strings.TrimPrefix(name, "cmdstat_") {
		case "evalsha", "eval", "subscribe", "unsubscribe", "ssubscribe", "sunsubscribe", "script|load":
			calls, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
			n += calls
		}
	}
	return n
}

// BenchmarkLockUnlock: one owner, one key, Lock+Unlock pairs with a
// watchdog lease.
func BenchmarkLockUnlock(b *testing.B) {
	c, rdb := newBenchClient(b, 10)
	ctx := ctxowner.New(context.Background())
	lock := c.NewLock("bench:uncontended")
	lat := make([]time.Duration, 0, 1<<16)
	pings := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A PING before each pair, on the same connection pool, measures
		// the round trip under the very same conditions.
		start := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		if len(pings) < cap(pings) {
			pings = append(pings, time.Since(start))
		}
		start = time.Now()
		if err := lock.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := lock.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(start))
		}
	}
	b.StopTimer()
	// allocs/op above counts the PING too; this is the pair alone.
	b.ReportMetric(testing.AllocsPerRun(500, func() {
		_ = lock.Lock(ctx)
		_ = lock.Unlock(ctx)
	}), "allocs/pair")
	rtt := percentile(pings, 50)
	p50 := percentile(lat, 50)
	b.ReportMetric(micros(rtt), "ping-rtt-µs")
	b.ReportMetric(micros(p50), "pair-p50-µs")
	b.ReportMetric(micros(percentile(lat, 99)), "pair-p99-µs")
	b.ReportMetric(float64(p50)/float64(rtt), "pair-p50/rtt")
}

// BenchmarkLockUnlockParallel: many goroutines, each with its own owner and
// key, in one Client.
func BenchmarkLockUnlockParallel(b *testing.B) {
	c, _ := newBenchClient(b, 64)
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 goroutines
	pinger := startPinger(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := ctxowner.New(context.Background())
		lock := c.NewLock("bench:parallel:" + strconv.FormatInt(seq.Add(1), 10))
		for pb.Next() {
			if err := lock.Lock(ctx); err != nil {
				b.Error(err)
				return
			}
			if err := lock.Unlock(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(micros(pinger()), "ping-rtt-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkContendedHandoff: 16 owners in one Client take turns on one key.
// handoff-gap is the time from an Unlock returning to the next owner's Lock
// returning; cmds/acq counts the client commands Redis served per
// acquisition (scripts, subscriptions), from INFO commandstats.
func BenchmarkContendedHandoff(b *testing.B) {
	for _, think := range []time.Duration{0, time.Millisecond} {
		b.Run("think="+think.String(), func(b *testing.B) {
			benchHandoff(b, 16, think, func(c *rlock.Client) rlock.Locker { return c.NewLock("bench:contended") })
		})
	}
}

// BenchmarkFairHandoff is BenchmarkContendedHandoff for a FairLock: the
// lock passes along the queue, so max/min (acquisitions of the busiest
// owner over the least busy one) should stay near 1.
func BenchmarkFairHandoff(b *testing.B) {
	for _, think := range []time.Duration{0, time.Millisecond} {
		b.Run("think="+think.String(), func(b *testing.B) {
			benchHandoff(b, 16, think, func(c *rlock.Client) rlock.Locker { return c.NewFairLock("bench:fair") })
		})
	}
}

// BenchmarkReadLockParallel: 16 owners in one Client take and release the
// read lock of one ReadWriteLock concurrently.
func BenchmarkReadLockParallel(b *testing.B) {
	c, _ := newBenchClient(b, 20)
	read := c.NewReadWriteLock("bench:rw").ReadLock()
	b.ReportAllocs()
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 readers
	pinger := startPinger(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := ctxowner.New(context.Background())
		for pb.Next() {
			if err := read.Lock(ctx); err != nil {
				b.Error(err)
				return
			}
			if err := read.Unlock(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(micros(pinger()), "ping-rtt-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acq/s")
}

func benchHandoff(b *testing.B, owners int, think time.Duration, newLock func(*rlock.Client) rlock.Locker) {
	c, _ := newBenchClient(b, owners+4)
	raw := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer raw.Close()
	lock := newLock(c)

	// turn is one critical section: when its Lock and its Unlock returned.
	type turn struct {
		owner          int
		locked, unlock time.Time
	}
	var (
		remaining atomic.Int64
		inside    atomic.Bool // set inside the critical section only
		turns     = make([][]turn, owners)
	)
	remaining.Store(int64(b.N))
	if err := raw.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	before := topLevelCalls(b, raw)
	pinger := startPinger(b)
	b.ResetTimer()
	var wg sync.WaitGroup
	for o := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := ctxowner.New(context.Background())
			for remaining.Add(-1) >= 0 {
				if err := lock.Lock(ctx); err != nil {
					b.Error(err)
					return
				}
				t := turn{owner: o, locked: time.Now()}
				if !inside.CompareAndSwap(false, true) {
					b.Error("mutual exclusion violated")
				}
				inside.Store(false)
				if err := lock.Unlock(ctx); err != nil {
					b.Error(err)
					return
				}
				t.unlock = time.Now()
				turns[o] = append(turns[o], t)
				if think > 0 {
					time.Sleep(think)
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	rtt := pinger()
	calls := topLevelCalls(b, raw) - before

	// Critical sections never overlap, so ordering them by Lock's return
	// gives the sequence of holders.
	var all []turn
	acquired := make([]int, owners)
	for o, ts := range turns {
		all = append(all, ts...)
		acquired[o] = len(ts)
	}
	slices.SortFunc(all, func(x, y turn) int { return x.locked.Compare(y.locked) })
	var gaps []time.Duration
	retakes := 0
	for i := 1; i < len(all); i++ {
		if all[i].owner == all[i-1].owner {
			retakes++
			continue
		}
		gaps = append(gaps, all[i].locked.Sub(all[i-1].unlock))
	}
	b.ReportMetric(micros(rtt), "ping-rtt-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acq/s")
	p50 := percentile(gaps, 50)
	b.ReportMetric(micros(p50), "gap-p50-µs")
	b.ReportMetric(micros(percentile(gaps, 99)), "gap-p99-µs")
	b.ReportMetric(float64(p50)/float64(rtt), "gap-p50/rtt")
	b.ReportMetric(float64(calls)/float64(b.N), "cmds/acq")
	b.ReportMetric(float64(retakes)/float64(max(1, len(all)-1)), "retake-share")
	lo, hi := slices.Min(acquired), slices.Max(acquired)
	if lo > 0 {
		b.ReportMetric(float64(hi)/float64(lo), "max/min")
	}
}

// BenchmarkFloor measures, in one loop, what a Lock+Unlock pair cannot beat
// on this machine: a PING, a plain SET+DEL pair, and the acquire and release
// scripts run bare through go-redis (no goredisson code around them); and
// beside them a goredisson Lock+Unlock pair, so that what goredisson adds is
// measured under the very same conditions.
func BenchmarkFloor(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	c, _ := newBenchClient(b, 10)
	lock := c.NewLock("bench:floor:lock")
	ctx := context.Background()
	owner := ctxowner.New(ctx)
	acq := redis.NewScript(rlock.ScriptSource("acquire"))
	rel := redis.NewScript(rlock.ScriptSource("release"))
	var pings, pairs, sets, locks []time.Duration
	for i := 0; i < b.N; i++ {
		s := time.Now()
		if err := lock.Lock(owner); err != nil {
			b.Fatal(err)
		}
		if err := lock.Unlock(owner); err != nil {
			b.Fatal(err)
		}
		locks = append(locks, time.Since(s))
		s = time.Now()
		rdb.Ping(ctx)
		pings = append(pings, time.Since(s))
		s = time.Now()
		rdb.Set(ctx, "bench:floor:set", "v", time.Second)
		rdb.Del(ctx, "bench:floor:set")
		sets = append(sets, time.Since(s))
		s = time.Now()
		if err := acq.Run(ctx, rdb, []string{"bench:floor", "goredisson_cancel:{bench:floor}"}, 30000, "f", i, "1").Err(); err != nil {
			b.Fatal(err)
		}
		if err := rel.Run(ctx, rdb, []string{"bench:floor", "goredisson_cancel:{bench:floor}", "redisson_lock__channel:{bench:floor}"},
			"r", "f", i, 1, 60000, 30000, "publish", "0").Err(); err != nil {
			b.Fatal(err)
		}
		pairs = append(pairs, time.Since(s))
	}
	b.ReportMetric(micros(percentile(pings, 50)), "ping-µs")
	b.ReportMetric(micros(percentile(sets, 50)), "setdel-µs")
	b.ReportMetric(micros(percentile(pairs, 50)), "scripts-µs")
	b.ReportMetric(micros(percentile(locks, 50)), "goredisson-µs")
}

// BenchmarkRedLock: one owner, Lock+Unlock pairs of a RedLock over 3 and 5
// redis-servers started for the benchmark (independent masters on
// loopback), sequentially and from 16 goroutines on distinct names.
func BenchmarkRedLock(b *testing.B) {
	for _, n := range []int{3, 5} {
		b.Run(strconv.Itoa(n)+"-masters", func(b *testing.B) {
			locks := func(name string, clients []*rlock.Client) *rlock.RedLock {
				ls := make([]rlock.Locker, len(clients))
				for i, c := range clients {
					ls[i] = c.NewLock(name)
				}
				r, err := rlock.NewRedLock(ls...)
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			clients := make([]*rlock.Client, n)
			for i := range clients {
				srv, err := redistest.Start()
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = srv.Close() })
				rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 32})
				c, err := rlock.NewClient(rdb)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = c.Close(); _ = rdb.Close() })
				clients[i] = c
			}
			b.Run("sequential", func(b *testing.B) {
				r := locks("bench:redlock", clients)
				ctx := ctxowner.New(context.Background())
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					start := time.Now()
					if err := r.Lock(ctx); err != nil {
						b.Fatal(err)
					}
					if err := r.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				b.ReportMetric(micros(percentile(lat, 50)), "pair-p50-µs")
				b.ReportMetric(micros(percentile(lat, 99)), "pair-p99-µs")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
			})
			b.Run("parallel", func(b *testing.B) {
				var seq atomic.Int64
				b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 goroutines
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					r := locks("bench:redlock:"+strconv.FormatInt(seq.Add(1), 10), clients)
					ctx := ctxowner.New(context.Background())
					for pb.Next() {
						if err := r.Lock(ctx); err != nil {
							b.Error(err)
							return
						}
						if err := r.Unlock(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
			})
		})
	}
}
