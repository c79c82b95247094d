package rlock_test

import (
	"context"
	"errors"
	"flag"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// Fuzzing of every input a user controls, against the real redis-server of
// TestMain: the seeds run with go test; search with, e.g.
//
//	go test -run '^$' -fuzz FuzzLockInputs -fuzztime 60s ./rlock
//	go test -run '^$' -fuzz FuzzOptions -fuzztime 60s ./rlock
//
// No input may panic; a bad one must give ErrInvalidArgument; a good one
// must lock, re-enter, unlock and leave no lock behind.

// skipSeedsIfShort leaves the seed corpus out of go test -short (the edit
// loop): a seed with a fixed lease waits for it to run out.
func skipSeedsIfShort(f *testing.F) {
	if testing.Short() && !fuzzing() {
		f.Skip("the seed corpus runs without -short")
	}
}

// fuzzing reports whether this run fuzzes (-test.fuzz) rather than runs
// the seeds.
func fuzzing() bool {
	fl := flag.Lookup("test.fuzz")
	return fl != nil && fl.Value.String() != ""
}

func fuzzClient(t *testing.T, opts ...rlock.Option) (*rlock.Client, *redis.Client, error) {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := rlock.NewClient(rdb, opts...)
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, rdb, err
}

func FuzzLockInputs(f *testing.F) {
	skipSeedsIfShort(f)
	f.Add("order:42", "worker-1", int64(0), int64(0), uint8(0))
	f.Add("", "", int64(-1), int64(-5), uint8(1))
	f.Add("{user}:1", "ü", int64(1500), int64(20), uint8(2))
	f.Add("a}b{", "x:y:z", int64(1), int64(-1), uint8(3))
	f.Add(strings.Repeat("L", 70000), strings.Repeat("o", 5000), int64(1<<40), int64(1<<40), uint8(4))
	f.Add("\x00\xff\n", "\x00", int64(-1<<62), int64(0), uint8(5))
	// One Client for all the inputs a fuzzing process tries: the target is
	// the inputs, not client set-up.
	shared := sync.OnceValues(func() (*rlock.Client, error) {
		return rlock.NewClient(redis.NewClient(&redis.Options{Addr: redisAddr}))
	})
	f.Fuzz(func(t *testing.T, name, owner string, leaseMs, waitMs int64, kind uint8) {
		c, err := shared()
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
		defer rdb.Close()
		ctx := ctxowner.WithID(context.Background(), owner)
		var lock rlock.Locker
		switch kind % 5 {
		case 0:
			lock = c.NewLock(name)
		case 1:
			lock = c.NewFairLock(name)
		case 2:
			lock = c.NewSpinLock(name)
		case 3:
			lock = c.NewFencedLock(name)
		default:
			lock = c.NewReadWriteLock(name).WriteLock()
		}
		lease := time.Duration(leaseMs%3_600_000) * time.Millisecond // at most an hour either way
		wait := time.Duration(waitMs%20) * time.Millisecond          // a fresh lock: never waits long
		ok, err := lock.TryLock(ctx, wait, lease)
		switch {
		case name == "":
			if !errors.Is(err, rlock.ErrInvalidArgument) {
				t.Fatalf("empty name: %v, want ErrInvalidArgument", err)
			}
			return
		case err != nil && errors.Is(err, rlock.ErrInvalidArgument):
			return // a bad lease or wait, said clearly
		case err != nil && errors.Is(err, rlock.ErrLockLost) && lease > 0 && lease < 10*time.Second:
			// Its reply came past the lease, less the clock allowance (a
			// 1 or 2 ms lease's always does): the hold was given back.
			if n := rdb.Exists(context.Background(), name).Val(); n != 0 {
				t.Fatalf("TryLock(%q, lease %v) confirmed late (%v), but the lock is still there", name, lease, err)
			}
			return
		case err != nil:
			t.Fatalf("TryLock(%q, wait %v, lease %v): %v", name, wait, lease, err)
		case !ok:
			t.Fatalf("TryLock(%q) of a free lock: not acquired", name)
		}
		defer func() { _, _ = lock.ForceUnlock(context.Background()) }()
		if lease > 0 && lease < 10*time.Second {
			// A fixed lease this short may run out between the calls below
			// on a loaded machine (a 1 ms one always does): what it must do
			// is end by itself, leaving nothing behind.
			deadline := time.Now().Add(lease + 5*time.Second)
			for rdb.Exists(context.Background(), name).Val() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("lock %q with a %v lease still there", name, lease)
				}
				time.Sleep(10 * time.Millisecond)
			}
			return
		}
		if ok, err := lock.TryLock(ctx, 0, lease); err != nil || !ok {
			t.Fatalf("re-entry: %v %v", ok, err)
		}
		if n, err := lock.HoldCount(ctx); err != nil || n != 2 {
			t.Fatalf("HoldCount = %d, %v; want 2", n, err)
		}
		for range 2 {
			if err := lock.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
		}
		if err := lock.Unlock(ctx); !errors.Is(err, rlock.ErrNotHeld) {
			t.Fatalf("third Unlock: %v, want ErrNotHeld", err)
		}
		if n := rdb.Exists(context.Background(), name).Val(); n != 0 {
			t.Fatalf("lock %q left behind", name)
		}
	})
}

func FuzzOptions(f *testing.F) {
	skipSeedsIfShort(f)
	f.Add(int64(30_000), int64(5_000), int64(10), int64(1_000), int64(1_000), int64(10_000), "client-1")
	f.Add(int64(0), int64(0), int64(0), int64(0), int64(0), int64(0), "")
	f.Add(int64(-1), int64(-1), int64(-1), int64(-1), int64(-1), int64(-1), "x")
	f.Add(int64(1), int64(29), int64(5), int64(1), int64(0), int64(1), strings.Repeat("c", 10000))
	f.Fuzz(func(t *testing.T, watchdogMs, waitMs, spinMs, spinMaxMs, replicas, syncMs int64, clientID string) {
		ms := func(v int64) time.Duration { return time.Duration(v%86_400_000) * time.Millisecond }
		opts := []rlock.Option{rlock.WithWatchdogTimeout(ms(watchdogMs)), rlock.WithFairLockWaitTimeout(ms(waitMs)),
			rlock.WithSpinBackoff(ms(spinMs), ms(spinMaxMs)), rlock.WithClientID(clientID)}
		// WithReplicaSync(0, 0) turns replica sync off.
		synced := replicas != 0 && (replicas%4 != 0 || ms(syncMs%100) != 0)
		if replicas != 0 {
			// The test server has no replica: a valid setting other than
			// off must refuse every lock with ErrReplicaSync, which is
			// checked below.
			opts = append(opts, rlock.WithReplicaSync(int(replicas%4), ms(syncMs%100)))
		}
		c, _, err := fuzzClient(t, opts...)
		if err != nil {
			if !errors.Is(err, rlock.ErrInvalidArgument) {
				t.Fatalf("NewClient: %v, want ErrInvalidArgument", err)
			}
			return
		}
		// A name of its own: fuzzing processes may pick the same client id,
		// and the same client id with the same owner is the same owner.
		lock := c.NewLock("fuzz:options:" + uuid.NewString())
		ctx, cancel := context.WithTimeout(ctxowner.New(context.Background()), 5*time.Second)
		defer cancel()
		ok, err := lock.TryLock(ctx, 0, 0)
		if synced {
			if !errors.Is(err, rlock.ErrReplicaSync) || ok {
				t.Fatalf("TryLock without replicas: %v %v, want ErrReplicaSync", ok, err)
			}
			return
		}
		if err != nil || !ok {
			t.Fatalf("TryLock with accepted options: %v %v", ok, err)
		}
		if err := lock.Unlock(ctx); err != nil {
			t.Fatalf("Unlock with accepted options: %v", err)
		}
	})
}
