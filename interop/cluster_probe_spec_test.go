package interop_test

// The real Redisson on a Redis Cluster (3 masters, a replica each), with
// Redisson's cluster defaults (shardedSubscriptionMode AUTO, so sharded
// pub/sub on Redis 7; checkLockSyncedSlaves) and goredisson's defaults on a
// *redis.ClusterClient: every lock type and synchronizer hands over in both
// directions, each waiter woken by the other client's message. A side that
// published or listened the other way (PUBLISH against SSUBSCRIBE) would
// sleep out the holder's 30 s lease. Label "redisson"; skipped (one line)
// when REDISSON_PROBE is not set.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/rlock"
)

// clusterWakeBound is how soon after the release a waiter of the other
// client must hold the lock (or the permits, or pass the latch) on the
// cluster: far below the 30 s lease it would otherwise sleep out, above a
// loaded machine's scheduling noise.
const clusterWakeBound = time.Second

// clusterHold is the lease of a holder: a waiter that missed the message
// would sleep this long.
const clusterHold = 30 * time.Second

var _ = Describe("goredisson and the real Redisson on a Redis Cluster", Ordered, Label("redisson", "cluster"), func() {
	var (
		cluster  *redistest.Cluster
		lockJava *probe
		syncJ    *probe
		g        *rlock.Client
		ctx      context.Context
	)
	BeforeAll(func() {
		path := os.Getenv(probeEnv)
		Expect(path).NotTo(BeEmpty())
		var err error
		cluster, err = redistest.StartCluster(3, 1)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Close)
		var uris []string
		for _, a := range cluster.Addrs() {
			uris = append(uris, "redis://"+a)
		}
		nodes := strings.Join(uris, ",")
		lockJava, err = runProbe(exec.Command(path, nodes, strconv.Itoa(javaWatchdog)))
		Expect(err).NotTo(HaveOccurred(), "starting the Redisson probe on the cluster")
		DeferCleanup(func() { Expect(lockJava.close()).To(Succeed()) })
		warmUpProbe(lockJava)
		// startTestdataProbe puts redis:// before the first address.
		var skip string
		syncJ, skip, err = startTestdataProbe(path, strings.TrimPrefix(nodes, "redis://"), "SyncProbe")
		Expect(err).NotTo(HaveOccurred(), "starting SyncProbe on the cluster")
		if skip == "" {
			DeferCleanup(func() { Expect(syncJ.close()).To(Succeed()) })
			warmUpSync(syncJ)
		}
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		// go-redis makes a client (and its goroutines) per node on first
		// use: make them all now, not inside a spec's goroutine count.
		Expect(cc.ForEachShard(context.Background(), func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		})).To(Succeed())
		g, err = rlock.NewClient(cc) // goredisson's defaults
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = g.Close() })
	})
	BeforeEach(func() {
		ctx = context.Background()
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
	})

	// shardSubscribed waits until a connection SSUBSCRIBEs channel on the
	// master of its slot (both clients listen sharded by default on
	// Redis 7), then lets a Java thread fall asleep.
	shardSubscribed := func(channel string) {
		GinkgoHelper()
		owner, err := cluster.Owner(ctx, pubsub.Slot(channel))
		Expect(err).NotTo(HaveOccurred())
		rdb := redis.NewClient(&redis.Options{Addr: owner.Addr})
		defer rdb.Close()
		Eventually(func() int64 { return rdb.PubSubShardNumSub(ctx, channel).Val()[channel] }).
			WithTimeout(10*time.Second).Should(BeNumerically(">=", 1), "nobody SSUBSCRIBEd to %s on %s", channel, owner.Addr)
		time.Sleep(500 * time.Millisecond)
	}
	expectWoken := func(what string, d time.Duration) {
		GinkgoHelper()
		recordWake("redisson-cluster", what, d)
		Expect(d).To(BeNumerically("<", clusterWakeBound), "%s: woken after %v (the lease is %v)", what, d, clusterHold)
	}

	type lockKind struct {
		title, cmd string // probe command prefix: "", "fair", "fenced", "spin", "read", "write"
		goLock     func(name string) rlock.Locker
		channel    func(name, waiterField string) string // where the waiter listens; "" for none (spin)
		waiterCmd  string                                // the waiter's kind when it differs (read-write)
		goWaiter   func(name string) rlock.Locker
	}
	lockChannel := func(n string) string { return "redisson_lock__channel:{" + n + "}" }
	rwChannel := func(n string) string { return "redisson_rwlock:{" + n + "}" }
	kinds := []lockKind{
		{title: "Lock", cmd: "", goLock: func(n string) rlock.Locker { return g.NewLock(n) },
			channel: func(n, _ string) string { return lockChannel(n) }},
		{title: "FairLock", cmd: "fair", goLock: func(n string) rlock.Locker { return g.NewFairLock(n) },
			channel: func(n, f string) string { return lockChannel(n) + ":" + f }}, // each waiter on its own channel
		{title: "FencedLock", cmd: "fenced", goLock: func(n string) rlock.Locker { return g.NewFencedLock(n) },
			channel: func(n, _ string) string { return lockChannel(n) }},
		{title: "SpinLock (no messages: backoff)", cmd: "spin", goLock: func(n string) rlock.Locker { return g.NewSpinLock(n) },
			channel: func(string, string) string { return "" }},
		{title: "ReadWriteLock, a reader's unlock wakes a writer", cmd: "read", waiterCmd: "write",
			goLock:   func(n string) rlock.Locker { return g.NewReadWriteLock(n).ReadLock() },
			goWaiter: func(n string) rlock.Locker { return g.NewReadWriteLock(n).WriteLock() },
			channel:  func(n, _ string) string { return rwChannel(n) }},
		{title: "ReadWriteLock, a writer's unlock wakes a reader", cmd: "write", waiterCmd: "read",
			goLock:   func(n string) rlock.Locker { return g.NewReadWriteLock(n).WriteLock() },
			goWaiter: func(n string) rlock.Locker { return g.NewReadWriteLock(n).ReadLock() },
			channel:  func(n, _ string) string { return rwChannel(n) }},
	}
	for i, k := range kinds {
		waiterCmd := k.cmd
		if k.waiterCmd != "" {
			waiterCmd = k.waiterCmd
		}
		goWaiter := k.goLock
		if k.goWaiter != nil {
			goWaiter = k.goWaiter
		}
		// Names over the slots of all three masters.
		names := func(dir string) []string {
			var out []string
			for m := range 3 {
				out = append(out, fmt.Sprintf("cluster:%d:%s:%d", i, dir, m))
			}
			return out
		}
		It(k.title+": Redisson unlocks, goredisson's waiter takes the lock", func() {
			for _, name := range names("j2g") {
				tid := lockJava.newTid()
				Expect(lockJava.do(fmt.Sprintf("%slock %s %s %d", k.cmd, name, tid, clusterHold.Milliseconds()))).To(Or(Equal("ok"), HavePrefix("token ")))
				owner := ctxowner.New(ctx)
				got := bg(func() error { return goWaiter(name).Lock(owner) })
				if ch := k.channel(name, g.ID()+":"+ctxowner.Of(owner)); ch != "" {
					shardSubscribed(ch)
				}
				Consistently(got).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
				unlock := lockJava.send(k.cmd + "unlock " + name + " " + tid)
				start := time.Now()
				Expect(unlock.wait(10 * time.Second)).To(Equal("ok"))
				var err error
				Eventually(got).WithTimeout(clusterHold).Should(Receive(&err))
				Expect(err).NotTo(HaveOccurred())
				expectWoken(k.title+": Redisson unlocks, goredisson waits", time.Since(start))
				Expect(goWaiter(name).Unlock(owner)).To(Succeed())
			}
		})
		It(k.title+": goredisson unlocks, Redisson's waiter takes the lock", func() {
			for _, name := range names("g2j") {
				owner := ctxowner.New(ctx)
				holder := k.goLock(name)
				Expect(holder.LockLease(owner, clusterHold)).To(Succeed())
				tid := lockJava.newTid()
				wait := lockJava.send(waiterCmd + "lock " + name + " " + tid)
				if ch := k.channel(name, lockJava.field(tid)); ch != "" {
					shardSubscribed(ch)
				} else {
					time.Sleep(500 * time.Millisecond)
				}
				Expect(wait.answered()).To(BeFalse(), "Redisson's waiter waits")
				start := time.Now()
				Expect(holder.Unlock(owner)).To(Succeed())
				out, err := wait.wait(clusterHold + 10*time.Second)
				Expect(err).NotTo(HaveOccurred())
				Expect(out).To(Or(Equal("ok"), HavePrefix("token ")))
				expectWoken(k.title+": goredisson unlocks, Redisson waits", wait.at().Sub(start))
				lockJava.ok(waiterCmd + "unlock " + name + " " + tid)
			}
		})
	}

	syncOK := func() {
		GinkgoHelper()
		if syncJ == nil {
			Skip("SyncProbe cannot run here (javac missing)")
		}
	}

	It("Semaphore: each client's release wakes the other's waiter for 2 permits", func() {
		syncOK()
		for m := range 3 {
			name := fmt.Sprintf("cluster:sem:%d", m)
			Expect(syncJ.do("sem.trysetpermits " + name + " 0")).To(Equal("true"))
			// Redisson releases, goredisson acquires.
			got := bg(func() error { return g.NewSemaphore(name).Acquire(ctx, 2) })
			shardSubscribed("redisson_sc:{" + name + "}")
			start := time.Now()
			syncJ.ok("sem.release " + name + " 2")
			var err error
			Eventually(got).WithTimeout(clusterHold).Should(Receive(&err))
			Expect(err).NotTo(HaveOccurred())
			expectWoken("Semaphore: Redisson releases, goredisson acquires", time.Since(start))
			// goredisson releases, Redisson acquires.
			wait := syncJ.send("sem.acquire " + name + " " + syncJ.newTid() + " 2")
			shardSubscribed("redisson_sc:{" + name + "}")
			start = time.Now()
			Expect(g.NewSemaphore(name).Release(ctx, 2)).To(Succeed())
			Expect(wait.wait(clusterHold + 10*time.Second)).To(Equal("ok"))
			expectWoken("Semaphore: goredisson releases, Redisson acquires", wait.at().Sub(start))
		}
	})

	It("PermitExpirableSemaphore: each client's release of a permit wakes the other's waiter", func() {
		syncOK()
		for m := range 3 {
			name := fmt.Sprintf("cluster:psem:%d", m)
			Expect(syncJ.do("psem.trysetpermits " + name + " 1")).To(Equal("true"))
			// Redisson holds the permit; goredisson waits.
			id := strings.TrimPrefix(syncJ.do("psem.acquire "+name+" "+syncJ.newTid()+" -1"), "id ")
			ids := make(chan string, 1)
			got := bg(func() error {
				id, err := g.NewPermitExpirableSemaphore(name).Acquire(ctx, 0)
				ids <- id
				return err
			})
			shardSubscribed("redisson_sc:{" + name + "}")
			start := time.Now()
			syncJ.ok("psem.release " + name + " " + id)
			var err error
			Eventually(got).WithTimeout(clusterHold).Should(Receive(&err))
			Expect(err).NotTo(HaveOccurred())
			expectWoken("PermitExpirableSemaphore: Redisson releases, goredisson acquires", time.Since(start))
			goID := <-ids
			// goredisson holds it; Redisson waits.
			wait := syncJ.send("psem.acquire " + name + " " + syncJ.newTid() + " -1")
			shardSubscribed("redisson_sc:{" + name + "}")
			start = time.Now()
			Expect(g.NewPermitExpirableSemaphore(name).Release(ctx, goID)).To(Succeed())
			out, err := wait.wait(clusterHold + 10*time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(out).To(HavePrefix("id "))
			expectWoken("PermitExpirableSemaphore: goredisson releases, Redisson acquires", wait.at().Sub(start))
			syncJ.ok("psem.release " + name + " " + strings.TrimPrefix(out, "id "))
		}
	})

	It("CountDownLatch: each client's last countDown wakes the other's waiter", func() {
		syncOK()
		for m := range 3 {
			name := fmt.Sprintf("cluster-latch-%d", m) // no braces: the latch's channel braces the name
			// Redisson counts down, goredisson awaits.
			Expect(g.NewCountDownLatch(name).TrySetCount(ctx, 1)).To(BeTrue())
			got := bg(func() error { return g.NewCountDownLatch(name).Await(ctx) })
			shardSubscribed("redisson_countdownlatch__channel__{" + name + "}")
			start := time.Now()
			syncJ.ok("latch.countdown " + name)
			var err error
			Eventually(got).WithTimeout(clusterHold).Should(Receive(&err))
			Expect(err).NotTo(HaveOccurred())
			expectWoken("CountDownLatch: Redisson counts down, goredisson awaits", time.Since(start))
			// goredisson counts down, Redisson awaits.
			Expect(syncJ.do("latch.trysetcount " + name + " 1")).To(Equal("true"))
			wait := syncJ.send("latch.await " + name + " " + syncJ.newTid())
			shardSubscribed("redisson_countdownlatch__channel__{" + name + "}")
			start = time.Now()
			Expect(g.NewCountDownLatch(name).CountDown(ctx)).To(Succeed())
			Expect(wait.wait(clusterHold + 10*time.Second)).To(Equal("ok"))
			expectWoken("CountDownLatch: goredisson counts down, Redisson awaits", wait.at().Sub(start))
		}
	})
})
