package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/internal/layout"
)

// notForceUnlocked is what unlock --force says of a synchronizer, which it
// leaves alone: what the key is, with its permits or count.
func notForceUnlocked(name string, info *inspect.Info) error {
	var what string
	switch info.Kind {
	case inspect.KindSemaphore:
		what = fmt.Sprintf("a semaphore (%s available; a Semaphore's permits come back by Release, or are set with SetPermits)", permits(info.Counter))
	case inspect.KindPermitSemaphore:
		what = fmt.Sprintf("a permit-expirable semaphore (%s available, %d taken; a permit comes back by Release with its id, or at its lease)", permits(info.Counter), info.Taken)
	case inspect.KindLatch:
		what = fmt.Sprintf("a count-down latch (count %d)", info.Counter)
	default: // inspect.KindSemaphoreOrLatch
		what = fmt.Sprintf("a semaphore or a count-down latch (value %d; Redis's data does not tell which)", info.Counter)
	}
	return fail(exitFailure, "%s is %s: force unlock applies to locks; left alone", name, what)
}

// semaphoreWaiters counts the connections subscribed to the semaphore
// channel of name (plain and sharded): waiters of a semaphore whose key
// does not exist (its permits never set, or its key deleted), which is
// neither locked nor a lock. Errors count as none.
func semaphoreWaiters(ctx context.Context, rdb *redis.Client, name string) int64 {
	ch := layout.SemaphoreChannel(name)
	n := rdb.PubSubNumSub(ctx, ch).Val()[ch]
	n += rdb.PubSubShardNumSub(ctx, ch).Val()[ch] // Redis 7+; an older server has none
	return n
}

// permits renders a number of permits: "1 permit", "3 permits".
func permits(n int64) string {
	if n == 1 {
		return "1 permit"
	}
	return fmt.Sprintf("%d permits", n)
}
