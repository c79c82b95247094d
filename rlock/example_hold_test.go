package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// Acquire returns a hold that ports a Java LockHandle wrapper in one line:
// Release works from any goroutine (the owner is pinned), runs once, and
// tells a lost hold (ErrNotHeld) from a closed Client (ErrClosed).
func ExampleAcquire() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := context.Background()

	h, err := rlock.Acquire(ctx, client.NewLock("example:hold"), time.Second, 0) // tryLock(1 s), watchdog lease
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = rlock.Acquire(ctxowner.New(ctx), client.NewLock("example:hold"), 0, 0) // another owner: one attempt
	fmt.Println(errors.Is(err, rlock.ErrBusy))

	done := make(chan error)
	go func() { done <- h.Release(ctx) }() // released on another goroutine
	fmt.Println(<-done, h.Release(ctx), h.Context().Err())

	p, _ := rlock.AcquirePermit(ctx, client.NewPermitExpirableSemaphore("example:seats"), 0, time.Minute)
	fmt.Println(p == nil) // no permits set: ErrBusy
	// Output:
	// true
	// <nil> <nil> context canceled
	// true
}
