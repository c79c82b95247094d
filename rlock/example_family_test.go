package rlock_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// Every acquisition of a FencedLock returns a larger token; a storage that
// remembers the highest token it saw refuses writes of stale holders.
func ExampleFencedLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	lock := client.NewFencedLock("example:fenced")
	ctx := ctxowner.New(context.Background())

	first, _ := lock.LockToken(ctx)
	_ = lock.Unlock(ctx)
	second, _ := lock.LockToken(ctx)
	_ = lock.Unlock(ctx)
	fmt.Println(second > first)
	// Output: true
}

// Readers share a ReadWriteLock; a writer excludes them.
func ExampleReadWriteLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	rw := client.NewReadWriteLock("example:catalog")
	a, b := ctxowner.New(context.Background()), ctxowner.New(context.Background())

	_ = rw.ReadLock().Lock(a)
	okB, _ := rw.ReadLock().TryLock(b, 0, 0)
	okW, _ := rw.WriteLock().TryLock(ctxowner.New(context.Background()), 0, 0)
	fmt.Println("second reader:", okB, "writer:", okW)
	_ = rw.ReadLock().Unlock(a)
	_ = rw.ReadLock().Unlock(b)
	// Output: second reader: true writer: false
}
