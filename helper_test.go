package goredisson_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

func TestMain(m *testing.M) {
	spectest.RunHelper(helpers)
	os.Exit(m.Run())
}

// helpers are the helper processes of this suite (see spectest.RunHelper).
var helpers = map[string]spectest.HelperFunc{}

// fencedStore is the storage a fenced lock guards: it takes a write only
// with a token at least as new as every token it has seen (KEYS[1] the
// highest token, KEYS[2] the data; ARGV[1] token, ARGV[2] value). It
// returns 1 when the write was taken, 0 when it was refused as stale.
var fencedStore = redis.NewScript(`
local last = tonumber(redis.call('get', KEYS[1]) or '0')
local token = tonumber(ARGV[1])
if token < last then return 0 end
redis.call('set', KEYS[1], token)
redis.call('rpush', KEYS[2], ARGV[2])
return 1`)

func init() {
	// fenced-worker takes the fenced lock HELPER_LOCK again and again (a
	// watchdog lease of HELPER_WATCHDOG_MS), holds it HELPER_HOLD_MS,
	// then writes through fencedStore, and logs every critical section
	// to the file HELPER_LOG as "enter <owner> <token> <ns>" and
	// "exit <owner> <token> <ns> <write taken 1|0>" lines. It prints
	// "acquired <token>" when it enters.
	helpers["fenced-worker"] = func(ctx context.Context, c *rlock.Client) error {
		hold, _ := strconv.Atoi(os.Getenv("HELPER_HOLD_MS"))
		f, err := os.OpenFile(os.Getenv("HELPER_LOG"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		lock := c.NewFencedLock(os.Getenv("HELPER_LOCK"))
		me := strconv.Itoa(os.Getpid())
		rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("HELPER_STORE")})
		for {
			token, err := lock.LockToken(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, "helper lock:", err)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			fmt.Fprintf(f, "enter %s %d %d\n", me, token, time.Now().UnixNano())
			fmt.Println("acquired", token)
			time.Sleep(time.Duration(hold) * time.Millisecond)
			taken, err := fencedStore.Run(context.Background(), rdb, []string{"fence:last", "fence:data"}, token, me).Int()
			if err != nil {
				return err
			}
			fmt.Fprintf(f, "exit %s %d %d %d\n", me, token, time.Now().UnixNano(), taken)
			_ = lock.Unlock(ctx) // ErrNotHeld after a lost lease: nothing to give back
			time.Sleep(5 * time.Millisecond)
		}
	}
}
