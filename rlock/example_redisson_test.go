package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// A Java side on Redisson 3.50.0 with a NameMapper that prefixes every name
// with its tenant: goredisson takes the same pair and the release, so the
// lock key is mapped and the fair queue stays where Redisson 3.50.0 keeps
// it (the unmapped name).
func ExampleWithNameMapper() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	const tenant = "example-tenant:"
	client, err := rlock.NewClient(rdb,
		rlock.WithRedissonVersion("3.50.0"),
		rlock.WithNameMapper(
			func(n string) string { return tenant + n },
			func(n string) string { return strings.TrimPrefix(n, tenant) }))
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := ctxowner.New(context.Background())
	lock := client.NewFairLock("{example:invoices}")
	if err := lock.Lock(ctx); err != nil {
		panic(err)
	}
	defer lock.Unlock(ctx)
	fmt.Println(lock.Name(), rdb.Exists(ctx, tenant+"{example:invoices}").Val())
	// Output: {example:invoices} 1
}

// An unknown release is refused at NewClient.
func ExampleWithRedissonVersion() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	_, err := rlock.NewClient(rdb, rlock.WithRedissonVersion("3.17"))
	fmt.Println(errors.Is(err, rlock.ErrInvalidArgument))
	client, err := rlock.NewClient(rdb, rlock.WithRedissonVersion("3.21.3")) // classic pub/sub on a Cluster
	fmt.Println(err)
	client.Close()
	// Output:
	// true
	// <nil>
}

// KeyOf is the Redis key of a lock: its name as the NameMapper maps it.
func ExampleKeyOf() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, err := rlock.NewClient(rdb, rlock.WithNameMapper(
		func(n string) string { return "t1:" + n },
		func(n string) string { return strings.TrimPrefix(n, "t1:") }))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	lock := client.NewLock("sched")
	fmt.Println(lock.Name(), rlock.KeyOf(lock))
	// Output: sched t1:sched
}
