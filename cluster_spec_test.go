package goredisson_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/rlock"
)

// sharedCluster starts a Cluster of 3 masters with a replica each for an
// Ordered container (*c), and checks every spec for leaked goroutines.
func sharedCluster(c **redistest.Cluster) {
	BeforeAll(func() {
		var err error
		*c, err = redistest.StartCluster(3, 1)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup((*c).Close)
	})
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
	})
}

var _ = Describe("on Redis Cluster (3 masters, 3 replicas)", Ordered, Label("cluster"), func() {
	var cluster *redistest.Cluster
	ctx := context.Background()
	sharedCluster(&cluster)
	clusterClient := func(opts ...rlock.Option) *rlock.Client {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		c, err := rlock.NewClient(cc, opts...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close() })
		return c
	}

	// Every lock type: a holder on one Client, a waiter on another (its
	// subscription on whatever node go-redis picked); the unlock wakes the
	// waiter at once, not after the 30 s lease.
	type maker func(c *rlock.Client, name string) rlock.Locker
	types := map[string]maker{
		"Lock":       func(c *rlock.Client, n string) rlock.Locker { return c.NewLock(n) },
		"FairLock":   func(c *rlock.Client, n string) rlock.Locker { return c.NewFairLock(n) },
		"FencedLock": func(c *rlock.Client, n string) rlock.Locker { return c.NewFencedLock(n) },
		"WriteLock":  func(c *rlock.Client, n string) rlock.Locker { return c.NewReadWriteLock(n).WriteLock() },
		"ReadLock after WriteLock": func(c *rlock.Client, n string) rlock.Locker {
			return c.NewReadWriteLock(n).ReadLock()
		},
	}
	handoff := func(opts ...rlock.Option) {
		holderC, waiterC := clusterClient(opts...), clusterClient(opts...)
		for kind, newLock := range types {
			for i := range 4 { // names spread over the slots of all masters
				name := kind + ":" + strconv.Itoa(i)
				holder := newLock(holderC, name)
				if kind == "ReadLock after WriteLock" {
					holder = holderC.NewReadWriteLock(name).WriteLock()
				}
				Expect(holder.Lock(ctx)).To(Succeed(), name)
				owner := ctxowner.New(ctx)
				done := make(chan error, 1)
				go func() { done <- newLock(waiterC, name).Lock(owner) }()
				Consistently(done).WithTimeout(100*time.Millisecond).ShouldNot(Receive(), name)
				Expect(holder.Unlock(ctx)).To(Succeed(), name)
				Eventually(done).WithTimeout(2*time.Second).Should(Receive(BeNil()), name)
				Expect(newLock(waiterC, name).Unlock(owner)).To(Succeed(), name)
			}
		}
	}

	It("wakes waiters connected to any node for every lock type (PUBLISH)", func() {
		handoff()
	})

	It("wakes waiters with sharded pub/sub (SPUBLISH, SSUBSCRIBE)", func() {
		handoff(rlock.WithShardedPubSub(true))
	})

	It("keeps a counter exact across 2 Clients x 4 owners and keeps each lock's keys in one slot", func() {
		c1, c2 := clusterClient(), clusterClient()
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		for _, name := range []string{"cluster-counter", "{user}:1"} {
			var lockers []rlock.Locker
			for _, c := range []*rlock.Client{c1, c2, c1, c2, c1, c2, c1, c2} {
				lockers = append(lockers, c.NewFairLock(name))
			}
			Expect(spectest.CountInside(lockers, 10)).To(Equal(80))
		}
		// pubsub.Slot, which picks a sharded subscription's node, agrees
		// with the cluster.
		for _, k := range []string{"a", "order:42", "{user}:1", "redisson_lock__channel:{x}", "foo{}{bar}"} {
			Expect(pubsub.Slot(k)).To(BeEquivalentTo(cc.ClusterKeySlot(ctx, k).Val()), k)
		}
		// Every auxiliary key shares its lock's slot (Redisson's names).
		for name, keys := range map[string][]string{
			"cluster-counter": {"redisson_lock_queue:{cluster-counter}", "redisson_lock_timeout:{cluster-counter}",
				"redisson_lock_token:{cluster-counter}", "redisson_lock__channel:{cluster-counter}", "goredisson_cancel:{cluster-counter}"},
			"{user}:1": {"redisson_lock_queue:{user}:1", "redisson_lock_timeout:{user}:1", "redisson_lock_token:{user}:1",
				"redisson_lock__channel:{user}:1", "{user}:1:c:7:rwlock_timeout:1", "goredisson_cancel:{user}:1"},
		} {
			slot := cc.ClusterKeySlot(ctx, name).Val()
			for _, k := range keys {
				Expect(cc.ClusterKeySlot(ctx, k).Val()).To(Equal(slot), k)
			}
		}
	})
})

// tagInSlot returns a hash tag ("{...}") whose names all hash to slot.
func tagInSlot(slot int) string {
	for i := 0; ; i++ {
		tag := "t" + strconv.Itoa(i)
		if pubsub.Slot(tag) == slot {
			return "{" + tag + "}"
		}
	}
}

// plainNameInSlot returns a name without braces in slot: a CountDownLatch's
// channel is redisson_countdownlatch__channel__{<name>} whatever the name
// holds (as Redisson's), so only a name without braces keeps both in one
// slot.
func plainNameInSlot(slot int, prefix string) string {
	for i := 0; ; i++ {
		name := prefix + strconv.Itoa(i)
		if pubsub.Slot(name) == slot {
			return name
		}
	}
}

// clusterClients makes goredisson clients on go-redis cluster clients of
// their own; each has loaded its slot map (it made a call) before it is
// returned, so a later topology change leaves it with a stale map (go-redis
// reloads it every 60 s, or when it sees a redirection itself).
func clusterClients(cluster *redistest.Cluster, n int, opts ...rlock.Option) []*rlock.Client {
	GinkgoHelper()
	var out []*rlock.Client
	for range n {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		c, err := rlock.NewClient(cc, opts...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close() })
		_, err = c.NewLock("warm-up").IsLocked(context.Background())
		Expect(err).NotTo(HaveOccurred())
		out = append(out, c)
	}
	return out
}

// movedReplies returns how many MOVED and ASK replies the node at addr has
// sent (INFO errorstats).
func movedReplies(addr string) (moved, ask int) {
	GinkgoHelper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "errorstats").Result()
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":count=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(rest)
		switch name {
		case "errorstat_MOVED":
			moved = n
		case "errorstat_ASK":
			ask = n
		}
	}
	return moved, ask
}

// pubsubConns counts the subscription connections on every running node.
func pubsubConns(cluster *redistest.Cluster) int {
	GinkgoHelper()
	total := 0
	for _, s := range cluster.Nodes {
		if s.Pid() == 0 {
			continue
		}
		n, err := redistest.ClientCount(context.Background(), s.Addr, "pubsub")
		Expect(err).NotTo(HaveOccurred())
		total += n
	}
	return total
}

// otherMaster returns the address of a master that does not serve slot.
func otherMaster(cluster *redistest.Cluster, slot int) string {
	GinkgoHelper()
	masters, err := cluster.Masters(context.Background())
	Expect(err).NotTo(HaveOccurred())
	for _, m := range masters {
		if !m.Serves(slot) {
			return m.Addr
		}
	}
	Fail("no other master")
	return ""
}

// noRedirection fails when err is a redirection that reached the caller.
func noRedirection(err error, what string) {
	GinkgoHelper()
	if err != nil {
		Expect(err.Error()).NotTo(MatchRegexp(`MOVED|ASK|TRYAGAIN|CLUSTERDOWN`), what)
	}
}

var _ = Describe("on a Redis Cluster whose slots move (3 masters, 3 replicas)", Ordered, Label("cluster", "topology"), func() {
	var cluster *redistest.Cluster
	ctx := context.Background()
	sharedCluster(&cluster)

	It("uses sharded pub/sub by default on Redis 7, as Redisson's AUTO: SPUBLISH wakes its waiters, PUBLISH does not", func() {
		tag := tagInSlot(100)
		holder, waiter := clusterClients(cluster, 1)[0], clusterClients(cluster, 1)[0]
		lock := holder.NewLock(tag + ":auto")
		Expect(lock.LockLease(ctx, 30*time.Second)).To(Succeed())
		done := make(chan error, 1)
		lockUnlock := func(c *rlock.Client) {
			owner := ctxowner.New(ctx)
			l := c.NewLock(tag + ":auto")
			err := l.Lock(owner)
			if err == nil {
				err = l.Unlock(owner)
			}
			done <- err
		}
		go lockUnlock(waiter)
		owner, err := cluster.Owner(ctx, 100)
		Expect(err).NotTo(HaveOccurred())
		raw := redis.NewClient(&redis.Options{Addr: owner.Addr})
		DeferCleanup(raw.Close)
		channel := "redisson_lock__channel:" + tag + ":auto"
		// The waiter listens with SSUBSCRIBE on the slot's master.
		Eventually(func() int64 { return raw.PubSubShardNumSub(ctx, channel).Val()[channel] }).Should(BeEquivalentTo(1))
		Expect(raw.PubSubNumSub(ctx, channel).Val()[channel]).To(BeZero())
		// A classic PUBLISH (what goredisson sent before) does not reach it.
		raw.Publish(ctx, channel, "0")
		Consistently(done).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		// The unlock publishes with SPUBLISH, as Redisson's scripts do.
		Expect(raw.ConfigResetStat(ctx).Err()).To(Succeed())
		start := time.Now()
		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(done).WithTimeout(2 * time.Second).Should(Receive(BeNil()))
		AddReportEntry("wake after unlock (sharded default)", time.Since(start).String())
		Expect(raw.Info(ctx, "commandstats").Val()).To(MatchRegexp(`cmdstat_spublish:calls=[1-9]`))
		Expect(raw.Info(ctx, "commandstats").Val()).NotTo(ContainSubstring("cmdstat_publish:"))

		// WithShardedPubSub(false) forces classic pub/sub.
		classic := clusterClients(cluster, 1, rlock.WithShardedPubSub(false))[0]
		Expect(classic.NewLock(tag+":auto").LockLease(ctx, 30*time.Second)).To(Succeed())
		go lockUnlock(clusterClients(cluster, 1, rlock.WithShardedPubSub(false))[0])
		Eventually(func() int64 {
			var n int64
			for _, s := range cluster.Nodes {
				c := s.Client()
				n += c.PubSubNumSub(ctx, channel).Val()[channel]
				_ = c.Close()
			}
			return n
		}).Should(BeEquivalentTo(1))
		Expect(raw.ConfigResetStat(ctx).Err()).To(Succeed())
		Expect(classic.NewLock(tag + ":auto").Unlock(ctx)).To(Succeed())
		Eventually(done).WithTimeout(2 * time.Second).Should(Receive(BeNil()))
		Expect(raw.Info(ctx, "commandstats").Val()).To(MatchRegexp(`cmdstat_publish:calls=[1-9]`))
	})

	It("confirms acquisitions and releases on each master's replica by default (WAIT after the scripts, on their connection)", func() {
		c := clusterClients(cluster, 1)[0]
		for _, s := range cluster.Nodes {
			rdb := s.Client()
			Expect(rdb.ConfigResetStat(ctx).Err()).To(Succeed())
			_ = rdb.Close()
		}
		owner := ctxowner.New(ctx)
		for i := range 30 {
			l := c.NewLock("synced:" + strconv.Itoa(i))
			Expect(l.Lock(owner)).To(Succeed())
			Expect(l.Unlock(owner)).To(Succeed())
		}
		masters, err := cluster.Masters(ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, m := range masters {
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr})
			stats := rdb.Info(ctx, "commandstats").Val()
			_ = rdb.Close()
			Expect(stats).To(MatchRegexp(`cmdstat_wait:calls=[1-9]`), m.Addr)
		}
	})

	It("subscribes 300 waiters on 300 names over at most one connection per master, and gives connections and goroutines back once they left", func() {
		holder, waiter := clusterClients(cluster, 1)[0], clusterClients(cluster, 1)[0]
		baseConns := pubsubConns(cluster)
		baseGoroutines := runtime.NumGoroutine()
		const n = 300
		names := make([]string, n)
		for i := range names {
			names[i] = "bounded:" + strconv.Itoa(i)
			Expect(holder.NewLock(names[i]).LockLease(ctx, time.Minute)).To(Succeed())
		}
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				owner := ctxowner.New(ctx)
				l := waiter.NewLock(name)
				Expect(l.Lock(owner)).To(Succeed())
				Expect(l.Unlock(owner)).To(Succeed())
			}()
		}
		// All 300 wait, subscribed: on 3 connections, not one per slot.
		Eventually(func() int64 {
			var total int64
			for _, s := range cluster.Nodes {
				c := s.Client()
				for _, v := range c.PubSubShardNumSub(ctx, channelsOf(names)...).Val() {
					total += v
				}
				_ = c.Close()
			}
			return total
		}).WithTimeout(30 * time.Second).Should(BeEquivalentTo(n))
		during := pubsubConns(cluster) - baseConns
		AddReportEntry("subscription connections with 300 waiters on 300 names", during)
		Expect(during).To(BeNumerically("<=", 3))
		Expect(during).To(BeNumerically(">=", 1))
		for _, name := range names {
			Expect(holder.NewLock(name).Unlock(ctx)).To(Succeed())
		}
		spectest.WaitAll(&wg)
		// After the linger (1 s) every channel is unsubscribed and every
		// connection closed; the Hub's goroutines end with them.
		Eventually(func() int { return pubsubConns(cluster) }).WithTimeout(10 * time.Second).Should(Equal(baseConns))
		Eventually(runtime.NumGoroutine).WithTimeout(10 * time.Second).Should(BeNumerically("<=", baseGoroutines+2))
		AddReportEntry("goroutines before / after the waiters left", fmt.Sprintf("%d / %d", baseGoroutines, runtime.NumGoroutine()))
	})

	// Every call kind a user makes, each on a client of its own whose slot
	// map went stale with the move, so that each one meets a redirection
	// itself; none may reach the caller, and nothing may be lost.
	callKinds := func(move func(slot int, to string)) {
		GinkgoHelper()
		masters, err := cluster.Masters(ctx)
		Expect(err).NotTo(HaveOccurred())
		from := masters[0]
		slot := from.Slots[0][0] // redis-cli moves a master's lowest slots first
		tag := tagInSlot(slot)
		to := otherMaster(cluster, slot)
		setup := clusterClients(cluster, 1)[0]
		held := ctxowner.New(ctx)
		Expect(setup.NewLock(tag + ":unlock").Lock(held)).To(Succeed())
		Expect(setup.NewLock(tag + ":islocked").Lock(held)).To(Succeed())
		Expect(setup.NewSemaphore(tag+":sem").TrySetPermits(ctx, 5)).To(BeTrue())
		latch := plainNameInSlot(slot, "latch")
		Expect(setup.NewCountDownLatch(latch).TrySetCount(ctx, 2)).To(BeTrue())
		Expect(setup.NewPermitExpirableSemaphore(tag+":permits").TrySetPermits(ctx, 2)).To(BeTrue())
		// A holder whose watchdog renews every 333 ms through the move.
		renewer := clusterClients(cluster, 1, rlock.WithWatchdogTimeout(time.Second))[0]
		renewed := renewer.NewLock(tag + ":renewed")
		Expect(renewed.Lock(held)).To(Succeed())
		lost, stop := rlock.LostContext(held, renewed)
		DeferCleanup(stop)

		cs := clusterClients(cluster, 9)
		movedBefore, _ := movedReplies(from.Addr)
		move(slot, to)
		owner, err := cluster.Owner(ctx, slot)
		Expect(err).NotTo(HaveOccurred())
		Expect(owner.Addr).To(Equal(to))

		ok, err := cs[0].NewLock(tag+":trylock").TryLock(ctxowner.New(ctx), 0, 0)
		noRedirection(err, "TryLock")
		Expect(ok, err).To(BeTrue())
		locked, err := cs[1].NewLock(tag + ":islocked").IsLocked(ctx)
		noRedirection(err, "IsLocked")
		Expect(locked, err).To(BeTrue())
		// The owner's Unlock comes from the Client that holds it.
		err = setup.NewLock(tag + ":unlock").Unlock(held)
		noRedirection(err, "Unlock")
		Expect(err).NotTo(HaveOccurred())
		err = cs[2].NewSemaphore(tag+":sem").Release(ctx, 1)
		noRedirection(err, "Semaphore.Release")
		Expect(err).NotTo(HaveOccurred())
		ok, err = cs[3].NewSemaphore(tag+":sem").TryAcquire(ctx, 2, 0)
		noRedirection(err, "Semaphore.TryAcquire")
		Expect(ok, err).To(BeTrue())
		n, err := cs[4].NewSemaphore(tag + ":sem").AvailablePermits(ctx)
		noRedirection(err, "Semaphore.AvailablePermits")
		Expect(n, err).To(Equal(4), "5 + 1 released - 2 taken: no permit lost")
		err = cs[5].NewCountDownLatch(latch).CountDown(ctx)
		noRedirection(err, "CountDown")
		Expect(err).NotTo(HaveOccurred())
		Expect(cs[6].NewCountDownLatch(latch).Count(ctx)).To(BeEquivalentTo(1))
		id, ok, err := cs[7].NewPermitExpirableSemaphore(tag+":permits").TryAcquire(ctx, 0, time.Minute)
		noRedirection(err, "PermitExpirableSemaphore.TryAcquire")
		Expect(ok, err).To(BeTrue())
		Expect(cs[8].NewPermitExpirableSemaphore(tag+":permits").Release(ctx, id)).To(Succeed())
		// The watchdog kept renewing on the new owner: three leases later
		// the hold is alive.
		Consistently(lost.Done()).WithTimeout(3 * time.Second).ShouldNot(BeClosed())
		raw := redis.NewClient(&redis.Options{Addr: to})
		DeferCleanup(raw.Close)
		Expect(raw.PTTL(ctx, tag+":renewed").Val()).To(BeNumerically(">", 0))
		Expect(renewed.Unlock(held)).To(Succeed())

		movedAfter, _ := movedReplies(from.Addr)
		AddReportEntry("MOVED replies the old owner sent (followed, none reached a caller)", movedAfter-movedBefore)
		Expect(movedAfter-movedBefore).To(BeNumerically(">=", 9), "each stale client met a MOVED")
	}

	It("follows MOVED for every call kind after redis-cli --cluster reshard", func() {
		callKinds(func(slot int, to string) {
			from, err := cluster.Owner(ctx, slot)
			Expect(err).NotTo(HaveOccurred())
			Expect(cluster.Reshard(ctx, from.Addr, to, 2)).To(Succeed())
		})
	})

	It("follows MOVED for every call kind after a slot migration (SETSLOT, MIGRATE)", func() {
		callKinds(func(slot int, to string) {
			Expect(cluster.MigrateSlot(ctx, slot, to)).To(Succeed())
		})
	})

	It("follows ASK and rides out TRYAGAIN while a slot migrates: renewals keep the hold, calls wait for the move to end", func() {
		slot := pubsub.Slot("window")
		tag := tagInSlot(slot)
		holder := clusterClients(cluster, 1, rlock.WithWatchdogTimeout(time.Second))[0]
		other := clusterClients(cluster, 1)[0]
		owner := ctxowner.New(ctx)
		lock := holder.NewLock(tag + ":held")
		Expect(lock.Lock(owner)).To(Succeed())
		lost, stop := rlock.LostContext(owner, lock)
		DeferCleanup(stop)
		from, err := cluster.Owner(ctx, slot)
		Expect(err).NotTo(HaveOccurred())
		m, err := cluster.BeginMigration(ctx, slot, otherMaster(cluster, slot))
		Expect(err).NotTo(HaveOccurred())
		Expect(m.MoveKeys(ctx)).To(Succeed())
		_, askBefore := movedReplies(from.Addr)
		// The lock's key is on the target, the slot still the source's:
		// the source answers ASK. Renewals (one key) run on the target
		// after ASKING, for three leases.
		Consistently(lost.Done()).WithTimeout(3 * time.Second).ShouldNot(BeClosed())
		locked, err := other.NewLock(tag + ":held").IsLocked(ctx)
		noRedirection(err, "IsLocked")
		Expect(locked, err).To(BeTrue())
		_, askAfter := movedReplies(from.Addr)
		AddReportEntry("ASK replies followed during the migration", askAfter-askBefore)
		Expect(askAfter - askBefore).To(BeNumerically(">=", 3))
		// Scripts with more keys than exist on either side get TRYAGAIN
		// until the move ends: the calls wait for it, then succeed.
		tried := make(chan error, 1)
		go func() {
			ok, err := other.NewLock(tag+":held").TryLock(ctxowner.New(ctx), 0, 0)
			if err == nil && ok {
				err = fmt.Errorf("took a held lock")
			}
			tried <- err
		}()
		unlocked := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			Eventually(tried).WithTimeout(5 * time.Second).Should(Receive(&err))
			unlocked <- lock.Unlock(owner)
		}()
		Consistently(unlocked).WithTimeout(500 * time.Millisecond).ShouldNot(Receive())
		Expect(m.Finish(ctx)).To(Succeed())
		Eventually(unlocked).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
		Expect(err).NotTo(HaveOccurred())
		Expect(other.NewLock(tag + ":held").IsLocked(ctx)).To(BeFalse())
	})

	It("subscribes again on the slot's new owner when its slot moves (server sunsubscribe): waiters are woken by the unlock, not by the lease", func() {
		slot := pubsub.Slot("rehome")
		tag := tagInSlot(slot)
		// Sharded as by default on Redis 7, said explicitly: what is
		// specified is how sharded subscriptions survive a move.
		sharded := rlock.WithShardedPubSub(true)
		holder, waiter := clusterClients(cluster, 1, sharded)[0], clusterClients(cluster, 1, sharded)[0]
		const lease = 15 * time.Second
		locks := []string{tag + ":a", tag + ":b"}
		Expect(holder.NewLock(locks[0]).LockLease(ctx, lease)).To(Succeed())
		var wg sync.WaitGroup
		wait := func(name string) chan time.Time {
			woke := make(chan time.Time, 1)
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				owner := ctxowner.New(ctx)
				l := waiter.NewLock(name)
				Expect(l.Lock(owner)).To(Succeed())
				woke <- time.Now()
				Expect(l.Unlock(owner)).To(Succeed())
			}()
			return woke
		}
		woke := wait(locks[0])
		Eventually(func() int { return pubsubConns(cluster) }).Should(BeNumerically(">=", 1))
		time.Sleep(200 * time.Millisecond) // the waiter is subscribed and waiting
		Expect(cluster.MigrateSlot(ctx, slot, otherMaster(cluster, slot))).To(Succeed())
		// A waiter that comes after the move too (its SSUBSCRIBE goes to
		// the old owner first: MOVED).
		Expect(holder.NewLock(locks[1]).LockLease(ctx, lease)).To(Succeed())
		woke2 := wait(locks[1])
		time.Sleep(500 * time.Millisecond)
		for i, w := range []chan time.Time{woke, woke2} {
			start := time.Now()
			Expect(holder.NewLock(locks[i]).Unlock(ctx)).To(Succeed())
			var at time.Time
			Eventually(w).WithTimeout(3*time.Second).Should(Receive(&at), "woken by the message, not the %v lease", lease)
			AddReportEntry(fmt.Sprintf("wake after unlock once the slot moved (%s)", locks[i]), at.Sub(start).String())
		}
		spectest.WaitAll(&wg)
	})
})

// channelsOf returns the unlock channels of locks whose names have no '{'.
func channelsOf(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = spectest.LockChannel(n)
	}
	return out
}

var _ = Describe("on a Redis Cluster without replicas (3 masters)", Label("cluster"), func() {
	It("asks each master once for its replicas and sends nothing more per call (replica sync has nothing to wait for)", func() {
		cluster, err := redistest.StartCluster(3, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Close)
		ctx := context.Background()
		c := clusterClients(cluster, 1)[0]
		for _, s := range cluster.Nodes {
			rdb := s.Client()
			Expect(rdb.ConfigResetStat(ctx).Err()).To(Succeed())
			_ = rdb.Close()
		}
		owner := ctxowner.New(ctx)
		for i := range 30 {
			l := c.NewLock("noreplicas:" + strconv.Itoa(i))
			Expect(l.Lock(owner)).To(Succeed())
			Expect(l.Unlock(owner)).To(Succeed())
		}
		for _, s := range cluster.Nodes {
			rdb := s.Client()
			stats := rdb.Info(ctx, "commandstats").Val()
			_ = rdb.Close()
			Expect(stats).To(MatchRegexp(`cmdstat_evalsha:calls=[1-9]`), s.Addr)
			Expect(stats).NotTo(ContainSubstring("cmdstat_wait"), s.Addr)
			Expect(stats).To(MatchRegexp(`cmdstat_info:calls=1,`), s.Addr)
		}
	})
})

// clusterLoad is a workload of locks and a semaphore over several masters,
// checking in process that no two owners are ever inside one lock and that
// no more owners than permits are inside the semaphore.
type clusterLoad struct {
	stop       chan struct{}
	wg         sync.WaitGroup
	violations atomic.Int64
	acquired   atomic.Int64
	// uncertain counts semaphore calls whose outcome the caller could not
	// learn (the connection broke after the command was sent).
	uncertain atomic.Int64
	mu        sync.Mutex
	errs      []error
}

const loadPermits = 3

func startClusterLoad(clients []*rlock.Client, names []string, semaphore string) *clusterLoad {
	GinkgoHelper()
	ctx := context.Background()
	Expect(clients[0].NewSemaphore(semaphore).TrySetPermits(ctx, loadPermits)).To(BeTrue())
	l := &clusterLoad{stop: make(chan struct{})}
	record := func(err error) {
		if err != nil {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
	}
	stopped := func() bool {
		select {
		case <-l.stop:
			return true
		default:
			return false
		}
	}
	for _, name := range names {
		var inside atomic.Int64
		for i := range 3 {
			c := clients[i%len(clients)]
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				owner := ctxowner.New(ctx)
				lock := c.NewLock(name)
				for !stopped() {
					ok, err := lock.TryLock(owner, 2*time.Second, 0)
					record(err)
					if !ok {
						continue
					}
					if inside.Add(1) != 1 {
						l.violations.Add(1)
					}
					l.acquired.Add(1)
					time.Sleep(2 * time.Millisecond)
					inside.Add(-1)
					record(lock.Unlock(owner))
				}
			}()
		}
	}
	var inside atomic.Int64
	for i := range 4 {
		sem := clients[i%len(clients)].NewSemaphore(semaphore)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for !stopped() {
				ok, err := sem.TryAcquire(ctx, 1, 2*time.Second)
				record(err)
				if err != nil && !ok {
					l.uncertain.Add(1) // an acquire in flight may have taken its permit
				}
				if !ok {
					continue
				}
				if inside.Add(1) > loadPermits {
					l.violations.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				if err := sem.Release(ctx, 1); err != nil {
					record(err)
					l.uncertain.Add(1)
				}
			}
		}()
	}
	return l
}

// finish stops the load and checks what it saw: no violation, no
// redirection reaching a caller.
func (l *clusterLoad) finish() {
	GinkgoHelper()
	close(l.stop)
	spectest.WaitAll(&l.wg)
	Expect(l.violations.Load()).To(BeZero(), "exclusion violations")
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, err := range l.errs {
		noRedirection(err, "a call under load")
	}
	AddReportEntry("acquisitions / errors seen by callers (none a redirection)", fmt.Sprintf("%d / %d", l.acquired.Load(), len(l.errs)))
	seen := map[string]int{}
	for _, err := range l.errs {
		seen[err.Error()]++
	}
	AddReportEntry("errors seen by callers", seen)
}

var _ = Describe("on a Redis Cluster whose masters fail (3 masters, 3 replicas)", Label("cluster", "topology"), func() {
	var (
		cluster *redistest.Cluster
		ctx     context.Context
	)
	BeforeEach(func() {
		ctx = context.Background()
		before := gleak.Goroutines()
		var err error
		cluster, err = redistest.StartCluster(3, 1)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			Expect(cluster.Close()).To(Succeed())
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
	})

	// change runs a topology change under load, with a waiter (on another
	// Client than the holder) that must be woken by the unlock message once
	// the cluster settled, not by the 15 s lease.
	underLoad := func(change func(master redistest.NodeInfo)) (conserved bool) {
		GinkgoHelper()
		clients := clusterClients(cluster, 3)
		masters, err := cluster.Masters(ctx)
		Expect(err).NotTo(HaveOccurred())
		victim := masters[0]
		tag := tagInSlot(victim.Slots[0][0])
		names := []string{tag + ":load", "load:1", "load:2", "load:3"}
		load := startClusterLoad(clients, names, tag+":sem")

		const lease = 15 * time.Second
		holder := clients[0].NewLock(tag + ":wake")
		Expect(holder.LockLease(ctx, lease)).To(Succeed())
		type wake struct {
			at  time.Time
			err error
		}
		woke := make(chan wake, 1)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			owner := ctxowner.New(ctx)
			l := clients[1].NewLock(tag + ":wake")
			err := l.Lock(owner)
			woke <- wake{time.Now(), err}
			if err == nil {
				Expect(l.Unlock(owner)).To(Succeed())
			}
		}()
		before := load.acquired.Load()
		time.Sleep(time.Second)
		Expect(load.acquired.Load()).To(BeNumerically(">", before), "the load runs")

		change(victim)
		Expect(cluster.WaitReplicasSynced(30 * time.Second)).To(Succeed())
		// The load goes on once the cluster settled.
		settled := load.acquired.Load()
		Eventually(load.acquired.Load).WithTimeout(10 * time.Second).Should(BeNumerically(">", settled+20))

		var start time.Time
		Eventually(func() error { start = time.Now(); return holder.Unlock(ctx) }).WithTimeout(10 * time.Second).Should(Succeed())
		var w wake
		select {
		case w = <-woke:
		case <-time.After(4 * time.Second):
			Fail(fmt.Sprintf("woken by the unlock message, not the %v lease; where the waiter's channel is subscribed:\n%s",
				lease, shardSubscribers(cluster, "redisson_lock__channel:"+tag+":wake")))
		}
		Expect(w.err).NotTo(HaveOccurred(), "the waiter's Lock")
		AddReportEntry("wake after unlock, once settled", w.at.Sub(start).String())
		spectest.WaitAll(&wg)

		load.finish()
		n, err := clients[2].NewSemaphore(tag + ":sem").AvailablePermits(ctx)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("permits available / set / calls of unknown outcome", fmt.Sprintf("%d / %d / %d", n, loadPermits, load.uncertain.Load()))
		Expect(n).To(BeNumerically("<=", loadPermits))
		Expect(n).To(BeNumerically(">=", loadPermits-int(load.uncertain.Load())))
		return n == loadPermits
	}

	It("keeps exclusion, permits and wake-ups through CLUSTER FAILOVER on a replica", func() {
		conserved := underLoad(func(master redistest.NodeInfo) {
			replica, err := cluster.ReplicaOf(ctx, master.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(cluster.Failover(ctx, replica.Addr)).To(Succeed())
		})
		Expect(conserved).To(BeTrue(), "a coordinated failover breaks no connection: every permit is accounted for")
	})

	It("keeps exclusion and wake-ups when a master is killed, and permits but those of calls whose outcome was lost", func() {
		underLoad(func(master redistest.NodeInfo) {
			_, err := cluster.KillMaster(ctx, master.Addr)
			Expect(err).NotTo(HaveOccurred())
		})
	})
})

// shardSubscribers tells, for a failure message, each node's role and its
// sharded and classic subscribers of channel (a waiter subscribed on no
// master of its slot hears no unlock).
func shardSubscribers(cluster *redistest.Cluster, channel string) string {
	ctx := context.Background()
	var b strings.Builder
	for _, addr := range cluster.Addrs() {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		role, _ := rdb.Do(ctx, "ROLE").Slice()
		shard, _ := rdb.Do(ctx, "PUBSUB", "SHARDNUMSUB", channel).Slice()
		classic, _ := rdb.Do(ctx, "PUBSUB", "NUMSUB", channel).Slice()
		_ = rdb.Close()
		r := "?"
		if len(role) > 0 {
			r = fmt.Sprint(role[0])
		}
		if r == "slave" && len(role) > 2 {
			r = fmt.Sprintf("replica of %v:%v", role[1], role[2])
		}
		fmt.Fprintf(&b, "  %s (%s): SHARDNUMSUB %v, NUMSUB %v\n", addr, r, shard, classic)
	}
	return b.String()
}
