package election_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/rlock"
)

// A scheduler runs its jobs on one instance at a time: each instance
// campaigns, the leader works until its leadership context ends, and
// resigns when it shuts down, handing over at once.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	// Every instance runs on a 1 s watchdog timeout, so WithMaxLease can
	// be 1 s: a first election (no leader record yet) waits that long.
	client, _ := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(time.Second))
	defer client.Close()
	ctx := context.Background()

	e, err := election.New(rdb, client.NewLock("example:scheduler"), election.WithMaxLease(time.Second))
	if err != nil {
		panic(err)
	}
	lead, err := e.Campaign(ctx, "pod-1") // blocks until this instance leads
	if err != nil {
		panic(err)
	}
	leader, _ := e.Leader(ctx)
	fmt.Println("leader:", leader, "leading:", lead.Err() == nil)
	// ... run the jobs with lead: it ends if leadership is lost.
	fmt.Println(e.Resign(ctx))
	fmt.Println(errors.Is(e.Resign(ctx), election.ErrNotLeader))
	_, _ = rdb.Del(ctx, "example:scheduler:leader").Result()
	// Output:
	// leader: pod-1 leading: true
	// <nil>
	// true
}
