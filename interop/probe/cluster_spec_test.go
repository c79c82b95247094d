package probe_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/interop/probe"
	"github.com/goredisson/goredisson/interop/probe/probetest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("the proof kit on a Redis Cluster", Label("redisson", "cluster"), Ordered, func() {
	var addrs []string
	BeforeAll(func() {
		cl, err := redistest.StartCluster(3, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cl.Close)
		addrs = cl.Addrs()
	})

	DescribeTable("sets Redisson's sharded subscription mode and goredisson's pub/sub alike: wake-ups both ways",
		func(sctx SpecContext, mode string) {
			java := probetest.Start(probe.Config{Addrs: addrs, ShardedSubscription: mode})
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
			DeferCleanup(rdb.Close)
			client := probetest.NewClient(java, rdb)
			ctx := ctxowner.WithID(sctx, "go")
			name := "{orders}:" + mode
			jl, gl := java.Thread("t").NewLock(name), client.NewLock(name)
			Expect(jl.Lock(ctx)).To(Succeed())
			probetest.ExpectRefused(ctx, gl)
			probetest.JavaWakesGo(ctx, 2*time.Second, gl.Lock, jl.Unlock)
			probetest.GoWakesJava(ctx, 2*time.Second, jl.Thread(), jl.Lock, gl.Unlock)
			Expect(jl.Unlock(ctx)).To(Succeed())

			latch := "latch:" + mode // its channel is redisson_countdownlatch__channel__{latch:...}: no hash tag of its own
			jc, gc := java.Thread("t").NewCountDownLatch(latch), client.NewCountDownLatch(latch)
			Expect(gc.TrySetCount(ctx, 1)).To(BeTrue())
			probetest.GoWakesJava(ctx, 2*time.Second, jc.Thread(), jc.Await, gc.CountDown)
		},
		Entry("Redisson's default (3.29 on: sharded on Redis 7; 3.22-3.28: decided by one node at start, see docs/redisson.md)", ""),
		Entry("on", "on"),
		Entry("off (classic PUBLISH/SUBSCRIBE)", "off"),
	)

	It("fails the wake-up check when goredisson's pub/sub differs from Redisson's", func(sctx SpecContext) {
		java := probetest.Start(probe.Config{Addrs: addrs, ShardedSubscription: "off"})
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		DeferCleanup(rdb.Close)
		client := probetest.NewClient(java, rdb, rlock.WithShardedPubSub(true)) // after the probe's: wins
		ctx := ctxowner.WithID(sctx, "go")
		jl, gl := java.Thread("t").NewLock("{orders}:mismatch"), client.NewLock("{orders}:mismatch")
		Expect(jl.Lock(ctx)).To(Succeed())
		failure := InterceptGomegaFailure(func() { probetest.JavaWakesGo(ctx, 2*time.Second, gl.Lock, jl.Unlock) })
		Expect(failure).To(MatchError(ContainSubstring("not woken within 2s")))
	})
})
