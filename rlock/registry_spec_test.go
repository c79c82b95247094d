package rlock_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/faultproxy"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// A Client's registration (goredisson_client:{<id>}) is gone when Close
// returns: a program that closes its go-redis client right after (deferred
// calls do) must not leave it behind for a lease, where rlockctl would show
// a Client that no longer exists.
var _ = Describe("the Client's registration at Close", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// registered returns a Client with its registration on, through a
	// fault proxy, once its key is written, and the key.
	registered := func() (*rlock.Client, *redis.Client, string, *faultproxy.Proxy) {
		GinkgoHelper()
		p := spectest.StartProxy()
		rdb := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
		DeferCleanup(func() { _ = rdb.Close() }) // the spec may close it first
		c, err := rlock.NewClient(rdb, rlock.WithClientRegistry(true))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		key := "goredisson_client:{" + c.ID() + "}"
		Eventually(func() int64 { return e.Raw.Exists(ctx, key).Val() }).Should(BeEquivalentTo(1), "registered")
		return c, rdb, key, p
	}

	It("is deleted when Close returns, even when the go-redis client is closed right after", func() {
		c, rdb, key, p := registered()
		p.SetLatency(200 * time.Millisecond) // a delete that takes a while
		Expect(c.Close()).To(Succeed())
		Expect(rdb.Close()).To(Succeed())
		Expect(e.Raw.Exists(ctx, key).Val()).To(BeZero(), "the registration is gone when Close returns")
	})

	It("does not hold Close past its bound when Redis does not answer: the key then ends at its TTL", Label("slow"), func() {
		c, _, key, p := registered()
		p.Partition(true)
		start := time.Now()
		Expect(c.Close()).To(Succeed())
		Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second), "Close's bound: 1 s for the delete, and scheduling noise")
		Expect(e.Raw.PTTL(ctx, key).Val()).To(BeNumerically(">", 0), "left to its TTL")
	})
})
