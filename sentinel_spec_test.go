package goredisson_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// Each spec gets a fresh primary, replica and 3 Sentinels: a failover uses
// the topology up.
var _ = Describe("with Sentinel (1 primary, 1 replica, 3 sentinels)", Label("sentinel"), func() {
	var (
		topo *redistest.Sentinels
		ctx  context.Context
	)
	BeforeEach(func() {
		ctx = context.Background()
		before := gleak.Goroutines()
		var err error
		topo, err = redistest.StartSentinels(1, 3)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			Expect(topo.Close()).To(Succeed())
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
	})
	failoverClient := func(opts ...rlock.Option) *rlock.Client {
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: topo.MasterName, SentinelAddrs: topo.SentinelAddrs(),
			DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second,
		})
		DeferCleanup(rdb.Close)
		c, err := rlock.NewClient(rdb, opts...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close() })
		return c
	}
	failover := func() string {
		old, err := topo.CurrentPrimary(ctx)
		Expect(err).NotTo(HaveOccurred())
		sc := redis.NewSentinelClient(&redis.Options{Addr: topo.Sentinels[0].Addr})
		defer sc.Close()
		Expect(sc.Failover(ctx, topo.MasterName).Err()).To(Succeed())
		var now string
		Eventually(func() string { now, _ = topo.CurrentPrimary(ctx); return now }).
			WithTimeout(20 * time.Second).ShouldNot(Equal(old))
		return now
	}

	It("keeps the holder's watchdog renewing on the new primary and a waiter waiting, then hands over", func() {
		holder := failoverClient(rlock.WithWatchdogTimeout(5 * time.Second)).NewLock("failover")
		Expect(holder.Lock(ctx)).To(Succeed())
		lost, stop := rlock.LostContext(ctx, holder)
		DeferCleanup(stop)
		owner := ctxowner.New(ctx)
		done := make(chan error, 1)
		go func() { done <- failoverClient().NewLock("failover").Lock(owner) }()

		// A coordinated failover (the replica is in sync): the lock survives.
		primary := failover()
		raw := redis.NewClient(&redis.Options{Addr: primary})
		defer raw.Close()
		// Longer than a watchdog lease later the lock is still there, renewed
		// on the new primary, and the waiter still waits.
		Consistently(func() int64 { return raw.Exists(ctx, "failover").Val() }).
			WithTimeout(6 * time.Second).WithPolling(100 * time.Millisecond).Should(BeEquivalentTo(1))
		Expect(done).NotTo(Receive())
		Expect(lost.Done()).NotTo(BeClosed())
		Expect(holder.Unlock(ctx)).To(Succeed())
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
	})

	It("loses a lock the lagging replica never saw without replica sync, and refuses it with replica sync", func() {
		plain := failoverClient().NewLock("sync")
		synced := failoverClient(rlock.WithReplicaSync(1, 200*time.Millisecond)).NewLock("sync")
		replica := topo.Replicas[0]

		// The replica lags (stopped): with replica sync the acquisition is
		// refused and given back; without, it is granted by the primary
		// alone.
		Expect(replica.Pause()).To(Succeed())
		err := synced.Lock(ctxowner.New(ctx))
		Expect(err).To(MatchError(rlock.ErrReplicaSync))
		Expect(plain.IsLocked(ctx)).To(BeFalse(), "the refused hold was given back")
		// Cut the replication link too, so that not even the socket
		// buffers carry the next write to the stopped replica.
		primaryRaw := topo.Primary.Client()
		defer primaryRaw.Close()
		Expect(primaryRaw.ClientKillByFilter(ctx, "TYPE", "replica").Err()).To(Succeed())
		owner := ctxowner.New(ctx)
		Expect(plain.Lock(owner)).To(Succeed())

		// The primary dies before the replica catches up; the replica is
		// promoted without the lock.
		Expect(topo.Primary.Kill()).To(Succeed())
		Expect(replica.Resume()).To(Succeed())
		Eventually(func() string { p, _ := topo.CurrentPrimary(ctx); return p }).
			WithTimeout(30 * time.Second).Should(Equal(replica.Addr))
		raw := redis.NewClient(&redis.Options{Addr: replica.Addr})
		defer raw.Close()
		Eventually(func() string { return raw.Info(ctx, "replication").Val() }).
			WithTimeout(10 * time.Second).Should(ContainSubstring("role:master"))
		Expect(raw.Exists(ctx, "sync").Val()).To(BeZero(), "the lock granted without replica sync was lost")
		ok, err := failoverClient().NewLock("sync").TryLock(ctxowner.New(ctx), 0, 0)
		Expect(ok, err).To(BeTrue(), "so another owner gets it while the first believes it holds it")
	})
})
