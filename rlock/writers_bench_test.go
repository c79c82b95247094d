package rlock_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/rlock"
)

// BenchmarkWaitingWriters: 300 owners of one Client block on a lock the
// benchmark holds; it unlocks, and each owner takes the lock once and gives
// it back: 300 hand-offs per op (rounds=3: each owner takes it three times,
// locking again at once after its unlock, 900 hand-offs). scripts/hand-off
// counts the EVALSHA and EVAL calls Redis served from the benchmark's unlock
// to the last owner's (the owners' attempts before they blocked are left
// out): 2 is the floor (one release, one acquire). hand-offs/s is over the
// same span.
//
//	go test -run '^$' -bench WaitingWriters -benchtime 3x -count 3 ./rlock
func BenchmarkWaitingWriters(b *testing.B) {
	const owners = 300
	for _, rounds := range []int{1, 3} {
		b.Run("WriteLock/rounds="+strconv.Itoa(rounds), func(b *testing.B) {
			benchDrain(b, owners, rounds, layout.RWChannel("bench:writers"), func(c *rlock.Client) rlock.Locker {
				return c.NewReadWriteLock("bench:writers").WriteLock()
			})
		})
		b.Run("Lock/rounds="+strconv.Itoa(rounds), func(b *testing.B) {
			benchDrain(b, owners, rounds, layout.Channel("bench:lockers"), func(c *rlock.Client) rlock.Locker {
				return c.NewLock("bench:lockers")
			})
		})
	}
}

func benchDrain(b *testing.B, owners, rounds int, channel string, newLock func(*rlock.Client) rlock.Locker) {
	c, _ := newBenchClient(b, 16)
	lock := newLock(c)
	drainHandoffs(b, owners, rounds, lock, func(int) rlock.Locker { return lock },
		func() int { return rlock.BlockedWaiters(c, channel) })
}

// drainHandoffs runs the hand-off benchmark: holder takes holderLock, the
// owners block (owner i on lockOf(i)) until blocked counts them all, the
// holder unlocks, and each owner takes its lock rounds times, unlocking
// after each. It reports scripts/hand-off (INFO commandstats, from the
// holder's unlock to the last owner's) and hand-offs/s.
func drainHandoffs(b *testing.B, owners, rounds int, holderLock rlock.Locker, lockOf func(i int) rlock.Locker, blocked func() int) {
	raw := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer raw.Close()
	var spent time.Duration
	scripts := 0
	b.ResetTimer()
	b.StopTimer()
	for range b.N {
		holder := ctxowner.New(context.Background())
		if err := holderLock.Lock(holder); err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range owners {
			lock := lockOf(i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := ctxowner.New(context.Background())
				for range rounds {
					if err := lock.Lock(ctx); err != nil {
						b.Error(err)
						return
					}
					if err := lock.Unlock(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		for deadline := time.Now().Add(time.Minute); blocked() < owners; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("only %d of %d owners blocked after a minute", blocked(), owners)
			}
		}
		before := scriptCalls(b, raw)
		b.StartTimer()
		start := time.Now()
		if err := holderLock.Unlock(holder); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
		spent += time.Since(start)
		b.StopTimer()
		scripts += scriptCalls(b, raw) - before
	}
	handoffs := float64(owners * rounds * b.N)
	b.ReportMetric(float64(scripts)/handoffs, "scripts/hand-off")
	b.ReportMetric(handoffs/spent.Seconds(), "hand-offs/s")
}

// scriptCalls returns the EVALSHA and EVAL calls Redis has served, from
// INFO commandstats.
func scriptCalls(b *testing.B, rdb *redis.Client) int {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if ok && (name == "cmdstat_evalsha" || name == "cmdstat_eval") {
			calls, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
			n += calls
		}
	}
	return n
}
