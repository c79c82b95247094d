package engine

import (
	"context"
	"testing"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/suite"
)

// The engine's specs that need to see inside a Client's engine (its
// transport, its ledger), against a redis-server the suite starts on a free
// loopback port. What a Client does is specified in package rlock's suite.

func TestEngine(t *testing.T) {
	suite.Run(t, "engine")
}

// specServerAddr is the address of the suite's redis-server.
var specServerAddr string

var _ = BeforeSuite(func() {
	srv, err := redistest.Start()
	if err != nil {
		Fail(err.Error()) // one line, saying how to install redis-server when it is missing
	}
	specServerAddr = srv.Addr
	DeferCleanup(func() { Expect(srv.Close()).To(Succeed()) })
})

// testConfig is the Config of a Client made with no options.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.ClientID = uuid.NewString()
	return cfg
}

// internalCore returns an engine on a go-redis client of its own; both are
// closed at cleanup.
func internalCore() *Core {
	GinkgoHelper()
	rdb := redis.NewClient(&redis.Options{Addr: specServerAddr})
	c := New(rdb, testConfig())
	DeferCleanup(func() {
		Expect(c.Close()).To(Succeed())
		Expect(rdb.Close()).To(Succeed())
	})
	return c
}

// lock is Lock: it waits until ctx's owner holds h, with a watchdog lease.
func lock(h *Handle, ctx context.Context) error {
	_, err := h.Acquire(ctx, -1, 0)
	return err
}

// unlock is Unlock: it gives back one hold of ctx's owner.
func unlock(h *Handle, ctx context.Context) error {
	_, err := h.Unlock(ctx)
	return err
}
