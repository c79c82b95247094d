package rlock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/rlock"
)

// A Client registers its id with its host, pid, start time and name, so
// that rlockctl status and list can tell which process holds a lock; the
// key lives while the Client does.
func ExampleWithClientName() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, err := rlock.NewClient(rdb, rlock.WithClientName("billing-worker"))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	key := "goredisson_client:{" + client.ID() + "}"
	var rec struct {
		Name string `json:"name"`
		Lib  string `json:"lib"`
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if v, err := rdb.Get(ctx, key).Result(); err == nil {
			_ = json.Unmarshal([]byte(v), &rec)
			break
		}
	}
	fmt.Println("registered:", rec.Name, rec.Lib)

	_ = client.Close()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && rdb.Exists(ctx, key).Val() == 1; {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("after Close:", rdb.Exists(ctx, key).Val())
	// Output:
	// registered: billing-worker goredisson
	// after Close: 0
}
