package rlock_test

import (
	"context"
	"testing"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// The loss signal is read in tight loops (ctx.Err() before each write): a
// look at a live LostContext asks the hold's local deadline (two atomic
// loads and a monotonic clock reading) on top of a context.WithCancelCause's
// Err.
//
//	go test -run '^$' -bench LostContext -count 5 ./rlock
func BenchmarkLostContextErr(b *testing.B) {
	b.Run("context.WithCancel (baseline)", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for b.Loop() {
			if ctx.Err() != nil {
				b.Fatal("ended")
			}
		}
	})
	c, _ := newBenchClient(b, 0)
	owner := ctxowner.New(context.Background())
	lock := c.NewLock("bench:lostctx")
	if err := lock.Lock(owner); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = lock.Unlock(owner) }()
	b.Run("LostContext of a Lock", func(b *testing.B) {
		held, stop := rlock.LostContext(owner, lock)
		defer stop()
		for b.Loop() {
			if held.Err() != nil {
				b.Fatal("ended")
			}
		}
	})
	b.Run("Done of a LostContext", func(b *testing.B) {
		held, stop := rlock.LostContext(owner, lock)
		defer stop()
		for b.Loop() {
			select {
			case <-held.Done():
				b.Fatal("ended")
			default:
			}
		}
	})
	locks := make([]rlock.Locker, 3)
	for i := range locks {
		locks[i] = c.NewLock("bench:lostctx:" + string(rune('a'+i)))
	}
	red, err := rlock.NewRedLock(locks...)
	if err != nil {
		b.Fatal(err)
	}
	if err := red.Lock(owner); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = red.Unlock(owner) }()
	b.Run("LostContext of a RedLock of 3", func(b *testing.B) {
		held, stop := rlock.LostContext(owner, red)
		defer stop()
		for b.Loop() {
			if held.Err() != nil {
				b.Fatal("ended")
			}
		}
	})
}
