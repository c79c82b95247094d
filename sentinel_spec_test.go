package goredisson_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
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

	// A waiter on one Client, the holder on another (as two processes): the
	// waiter sends nothing while it waits, and its subscription must still
	// move to the new primary, or only the 15 s lease wakes it.
	//
	// Replica sync is off here: what is specified is where the waiter
	// listens (right after a failover the default replica sync may refuse
	// an acquisition or two while the old primary resyncs, and retries).
	wakeAcross := func(move func()) time.Duration {
		GinkgoHelper()
		const lease = 15 * time.Second
		off := rlock.WithReplicaSync(0, 0)
		holderRDB := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: topo.MasterName, SentinelAddrs: topo.SentinelAddrs(),
			DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second,
		})
		DeferCleanup(holderRDB.Close)
		holderC, err := rlock.NewClient(holderRDB, off)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = holderC.Close() })
		holder := holderC.NewLock("follow")
		Expect(holder.LockLease(ctx, lease)).To(Succeed())
		woke := make(chan time.Time, 1)
		done := make(chan error, 1)
		waiter := failoverClient(off).NewLock("follow")
		go func() {
			owner := ctxowner.New(ctx)
			err := waiter.Lock(owner)
			woke <- time.Now()
			if err == nil {
				err = waiter.Unlock(owner)
			}
			done <- err
		}()
		primary := redis.NewClient(&redis.Options{Addr: topo.Primary.Addr})
		defer primary.Close()
		channel := spectest.LockChannel("follow")
		Eventually(func() int64 { return primary.PubSubNumSub(ctx, channel).Val()[channel] }).Should(BeEquivalentTo(1))
		move()
		// The unlock goes to the new primary as soon as the holder's client
		// reaches it, before the old one (when alive) rejoins as its
		// replica: only a subscription on the new primary hears the
		// message.
		primaryNow, err := topo.CurrentPrimary(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, port, _ := strings.Cut(primaryNow, ":")
		Eventually(func() string { return holderRDB.Info(ctx, "server").Val() }).WithTimeout(10*time.Second).
			Should(ContainSubstring("tcp_port:"+port+"\r"), "the holder's client moved to the new primary")
		var start time.Time
		Eventually(func() error { start = time.Now(); return holder.Unlock(ctx) }).WithTimeout(10 * time.Second).Should(Succeed())
		var at time.Time
		Eventually(woke).WithTimeout(4*time.Second).Should(Receive(&at), "woken by the unlock message, not the %v lease", lease)
		Eventually(done).Should(Receive(BeNil()))
		return at.Sub(start)
	}

	It("moves the subscription to the new primary after a coordinated failover (SENTINEL FAILOVER): waiters are woken by messages", func() {
		d := wakeAcross(func() { failover() })
		AddReportEntry("wake after unlock, after SENTINEL FAILOVER", d.String())
	})

	It("moves the subscription to the new primary when the old one stays a primary, cut off from the new one (split brain): waiters are woken by messages", func() {
		// The old primary refuses to be made a replica (as when a
		// partition hides it from the Sentinels and the new primary, not
		// from this client): messages published on the new primary never
		// reach a subscription left on the old one.
		Expect(topo.Close()).To(Succeed())
		var err error
		topo, err = redistest.StartSentinels(1, 3, redistest.WithArgs("--rename-command", "SLAVEOF", "", "--rename-command", "REPLICAOF", ""))
		Expect(err).NotTo(HaveOccurred())
		d := wakeAcross(func() { failover() })
		AddReportEntry("wake after unlock, after SENTINEL FAILOVER, old primary cut off", d.String())
	})

	It("moves the subscription to the new primary after the primary was killed: waiters are woken by messages", func() {
		d := wakeAcross(func() {
			old := topo.Primary.Addr
			Expect(topo.Primary.Kill()).To(Succeed())
			Eventually(func() string { p, _ := topo.CurrentPrimary(ctx); return p }).
				WithTimeout(30 * time.Second).ShouldNot(Equal(old))
		})
		AddReportEntry("wake after unlock, after the primary was killed", d.String())
	})

	It("confirms acquisitions and releases on the replicas by default, as Redisson's checkLockSyncedSlaves, and fails as Redisson when none confirmed", func() {
		primary := topo.Primary.Client()
		defer primary.Close()
		Expect(primary.ConfigResetStat(ctx).Err()).To(Succeed())
		lock := failoverClient().NewLock("synced")
		owner := ctxowner.New(ctx)
		for range 3 {
			Expect(lock.Lock(owner)).To(Succeed())
			Expect(lock.Unlock(owner)).To(Succeed())
		}
		stats := primary.Info(ctx, "commandstats").Val()
		Expect(stats).To(MatchRegexp(`cmdstat_wait:calls=[1-9]`), "WAIT after the scripts")
		// Off with WithReplicaSync(0, 0): no WAIT.
		Expect(primary.ConfigResetStat(ctx).Err()).To(Succeed())
		off := failoverClient(rlock.WithReplicaSync(0, 0)).NewLock("synced")
		Expect(off.Lock(owner)).To(Succeed())
		Expect(off.Unlock(owner)).To(Succeed())
		Expect(primary.Info(ctx, "commandstats").Val()).NotTo(ContainSubstring("cmdstat_wait"))

		// The replica lags (stopped): no replica confirms within Redisson's
		// 1 s; the acquisition is given back and the call fails.
		Expect(topo.Replicas[0].Pause()).To(Succeed())
		DeferCleanup(topo.Replicas[0].Resume)
		start := time.Now()
		err := lock.Lock(ctxowner.New(ctx))
		Expect(err).To(MatchError(rlock.ErrReplicaSync))
		Expect(err.Error()).To(ContainSubstring("None of slaves were synced"))
		Expect(time.Since(start)).To(BeNumerically(">=", 900*time.Millisecond), "slavesSyncTimeout 1 s")
		Expect(lock.IsLocked(ctx)).To(BeFalse(), "given back")
	})

	It("loses a lock the lagging replica never saw without replica sync, and refuses it with replica sync", func() {
		plain := failoverClient(rlock.WithReplicaSync(0, 0)).NewLock("sync")
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

var _ = Describe("replica sync off Sentinel", Label("sentinel"), func() {
	ctx := context.Background()

	It("sends no WAIT on a single server by default, as Redisson's single-server config", func() {
		e := spectest.NewEnv()
		lock := e.Client().NewLock("single")
		owner := ctxowner.New(ctx)
		for range 5 {
			Expect(lock.Lock(owner)).To(Succeed())
			Expect(lock.Unlock(owner)).To(Succeed())
		}
		calls := e.CommandCalls()
		Expect(calls).NotTo(HaveKey("wait"))
		Expect(calls).NotTo(HaveKey("info"))
	})

	It("stops sending WAIT to a server that answers it with unknown command, as Redisson", func() {
		// WAIT renamed away, as some proxies and managed services do.
		srv, err := redistest.Start(redistest.WithArgs("--rename-command", "WAIT", ""))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		// No CLIENT SETINFO (Redis 7.2+), whose refusal by 7.0 would count
		// as errors too.
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true})
		DeferCleanup(rdb.Close)
		c, err := rlock.NewClient(rdb, rlock.WithReplicaSync(1, 100*time.Millisecond))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close() })
		Expect(rdb.ConfigResetStat(ctx).Err()).To(Succeed())
		lock := c.NewLock("nowait")
		owner := ctxowner.New(ctx)
		for range 5 {
			Expect(lock.Lock(owner)).To(Succeed())
			Expect(lock.Unlock(owner)).To(Succeed())
		}
		errs := rdb.Info(ctx, "errorstats").Val()
		// The first batch's WAIT, and its resend with the script's source
		// (the server had not cached it): none after.
		Expect(errs).To(ContainSubstring("errorstat_ERR:count=2\r"), "WAIT refused in the first batch, never sent after it")
	})
})
