package rlock_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/goredisson/goredisson/internal/redistest"
)

// redisAddr is the address of the redis-server that TestMain starts for the
// package's examples and benchmarks (the specs live in the root suite).
var redisAddr string

func TestMain(m *testing.M) {
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
