package rlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// IsHeldByOwner is Redisson's isHeldByThread(threadId): the owner id is
// what ctxowner.Of reports on the owner's side, a goroutine's number or
// "ctx:" and a context owner's id.
func ExampleLock_IsHeldByOwner() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	lock := client.NewLock("example:held-by-owner")

	worker := ctxowner.WithID(context.Background(), "worker-1")
	_ = lock.Lock(worker)
	defer lock.Unlock(worker)

	ctx := context.Background()
	held, _ := lock.IsHeldByOwner(ctx, ctxowner.Of(worker))
	fmt.Println(ctxowner.Of(worker), held)
	held, _ = lock.IsHeldByOwner(ctx, "15") // goroutine 15
	fmt.Println("15", held)
	// Output:
	// ctx:worker-1 true
	// 15 false
}

// LockTokenLease is lockAndGetToken(leaseTime): a fixed lease, never
// renewed, and the fencing token of this acquisition.
func ExampleFencedLock_LockTokenLease() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := ctxowner.New(context.Background())
	lock := client.NewFencedLock("example:fenced-lease")

	first, _ := lock.LockTokenLease(ctx, 10*time.Second)
	_ = lock.Unlock(ctx)
	second, _ := lock.LockTokenLease(ctx, 10*time.Second)
	defer lock.Unlock(ctx)
	ttl, _ := lock.RemainTTL(ctx)
	fmt.Println(second > first, ttl <= 10*time.Second)
	// Output: true true
}

// ExpireIf is expireIfGreater and its siblings (Redis 7.0+): here a
// semaphore's expiry only ever moves later.
func ExampleObject_ExpireIf() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := context.Background()
	sem := client.NewSemaphore("example:expire-if")
	_, _ = sem.TrySetPermits(ctx, 3)
	defer sem.Delete(ctx)

	in1h, in2h := time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)
	set, _ := sem.ExpireIf(ctx, rlock.IfNotSet, in2h)
	fmt.Println("not set:", set)
	set, _ = sem.ExpireIf(ctx, rlock.IfGreater, in1h)
	fmt.Println("greater:", set)
	at, _ := sem.ExpireTime(ctx)
	fmt.Println(at.Equal(in2h.Truncate(time.Millisecond)))
	// Output:
	// not set: true
	// greater: false
	// true
}

// Listen is addListener(DeletedObjectListener / ExpiredObjectListener): it
// needs the server's notify-keyspace-events to include "Egx".
func ExampleLock_Listen() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	ctx := ctxowner.New(context.Background())
	was := rdb.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]
	rdb.ConfigSet(ctx, "notify-keyspace-events", "Egx")
	defer rdb.ConfigSet(ctx, "notify-keyspace-events", was)
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	lock := client.NewLock("example:listen")

	events := make(chan rlock.KeyEvent, 1)
	stop, err := lock.Listen(ctx, func(ev rlock.KeyEvent) { events <- ev })
	if err != nil {
		panic(err)
	}
	defer stop()

	_ = lock.Lock(ctx)
	_ = lock.Unlock(ctx) // the last unlock deletes the key
	ev := <-events
	fmt.Println(ev.Name, "expired:", ev.Expired)
	// Output: example:listen expired: false
}
