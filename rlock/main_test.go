package rlock_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// redisAddr is the address of the redis-server that TestMain starts for the
// package's examples and benchmarks (the specs have their suite's own, see
// suite_test.go).
var redisAddr string

func TestMain(m *testing.M) {
	spectest.RunHelper(helpers)
	srv, err := redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rlock tests need redis-server:", err)
		os.Exit(1)
	}
	redisAddr = srv.Addr
	code := m.Run()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping redis-server:", err)
	}
	os.Exit(code)
}

// helpers are the helper processes of this package's specs (see
// spectest.RunHelper).
var helpers = map[string]spectest.HelperFunc{
	// fair-waiter waits for the fair lock HELPER_LOCK and, once it holds
	// it, prints "acquired" and keeps it until killed.
	"fair-waiter": func(ctx context.Context, c *rlock.Client) error {
		if err := c.NewFairLock(os.Getenv("HELPER_LOCK")).Lock(ctx); err != nil {
			return err
		}
		fmt.Println("acquired")
		select {}
	},
}
