package rlock_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

var _ = Describe("ReadWriteLock", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("keeps a counter exact under the write lock across 2 Clients x 8 owners", func() {
		n := guardCounter(e, 15, func(c *rlock.Client) rlock.Locker { return c.NewReadWriteLock("rw-counter").WriteLock() })
		Expect(n).To(Equal(240))
	})

	It("lets many readers hold at once and keeps the writer out until the last leaves", func() {
		c1, c2 := e.Client(), e.Client()
		readers := make([]context.Context, 6)
		for i := range readers {
			readers[i] = ctxowner.New(ctx)
			c := c1
			if i%2 == 1 {
				c = c2
			}
			Expect(c.NewReadWriteLock("rw").ReadLock().Lock(readers[i])).To(Succeed())
		}
		Expect(e.Raw.HGet(ctx, "rw", "mode").Val()).To(Equal("read"))
		Expect(e.Raw.HLen(ctx, "rw").Val()).To(BeEquivalentTo(7))

		writer := ctxowner.New(ctx)
		wl := e.Client().NewReadWriteLock("rw").WriteLock()
		done := make(chan error, 1)
		go func() { done <- wl.Lock(writer) }()
		for i, r := range readers {
			Consistently(done).WithTimeout(50 * time.Millisecond).ShouldNot(Receive())
			c := c1
			if i%2 == 1 {
				c = c2
			}
			Expect(c.NewReadWriteLock("rw").ReadLock().Unlock(r)).To(Succeed())
		}
		Eventually(done).WithTimeout(time.Second).Should(Receive(BeNil()))
		Expect(e.Raw.HGet(ctx, "rw", "mode").Val()).To(Equal("write"))

		ok, err := c1.NewReadWriteLock("rw").ReadLock().TryLock(ctxowner.New(ctx), 100*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse(), "a reader waits for the writer")
		Expect(wl.Unlock(writer)).To(Succeed())
		Expect(e.Raw.Exists(ctx, "rw").Val()).To(BeZero())
	})

	It("stores Redisson's layout and lets the writer downgrade", func() {
		c := e.Client()
		rw := c.NewReadWriteLock("doc")
		owner := ctxowner.WithID(ctx, "5")
		field := c.ID() + ":ctx:5"

		sub := e.Raw.Subscribe(ctx, "redisson_rwlock:{doc}")
		DeferCleanup(sub.Close)
		_, err := sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())

		Expect(rw.WriteLock().Lock(owner)).To(Succeed())
		Expect(rw.WriteLock().Lock(owner)).To(Succeed())
		Expect(e.Raw.HGetAll(ctx, "doc").Val()).To(Equal(map[string]string{"mode": "write", field + ":write": "2"}))
		Expect(rw.ReadLock().Lock(owner)).To(Succeed(), "the writer may read")
		Expect(e.Raw.HGet(ctx, "doc", field).Val()).To(Equal("1"))
		Expect(e.Raw.PTTL(ctx, "{doc}:"+field+":rwlock_timeout:1").Val()).To(BeNumerically(">", 29*time.Second))

		Expect(rw.WriteLock().Unlock(owner)).To(Succeed())
		Expect(rw.WriteLock().Unlock(owner)).To(Succeed())
		Expect(e.Raw.HGetAll(ctx, "doc").Val()).To(Equal(map[string]string{"mode": "read", field: "1"}), "downgraded")
		Consistently(sub.Channel()).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "a downgrade publishes nothing, as Redisson's")
		Expect(rw.ReadLock()).To(rlocktest.BeLocked())
		Expect(rw.ReadLock()).To(rlocktest.HaveTotalHoldCount(1))
		Expect(rw.WriteLock()).NotTo(rlocktest.BeLocked())

		Expect(rw.ReadLock().Unlock(owner)).To(Succeed())
		var msg *redis.Message
		Eventually(sub.Channel()).Should(Receive(&msg))
		Expect(msg.Payload).To(Equal("0"), "the last read unlock wakes one waiter (a writer), as Redisson's")
		Expect(e.Raw.Exists(ctx, "doc").Val()).To(BeZero())
		Expect(rw.ReadLock().Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		Expect(rw.WriteLock().Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
	})

	It("publishes Redisson's messages: 1 (wake all) for a write unlock or force unlock, 0 (wake one) for a read unlock or force unlock", func() {
		rw := e.Client().NewReadWriteLock("rw-messages")
		sub := e.Raw.Subscribe(ctx, "redisson_rwlock:{rw-messages}")
		DeferCleanup(sub.Close)
		_, err := sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())
		next := func() string {
			GinkgoHelper()
			var msg *redis.Message
			Eventually(sub.Channel()).Should(Receive(&msg))
			return msg.Payload
		}
		Expect(rw.WriteLock().Lock(ctx)).To(Succeed())
		Expect(rw.WriteLock().Unlock(ctx)).To(Succeed())
		Expect(next()).To(Equal("1"), "write unlock")
		Expect(rw.WriteLock().Lock(ctx)).To(Succeed())
		Expect(rw.WriteLock().ForceUnlock(ctx)).To(BeTrue())
		Expect(next()).To(Equal("1"), "write force unlock")
		Expect(rw.ReadLock().Lock(ctx)).To(Succeed())
		Expect(rw.ReadLock().Unlock(ctx)).To(Succeed())
		Expect(next()).To(Equal("0"), "read unlock")
		Expect(rw.ReadLock().Lock(ctx)).To(Succeed())
		Expect(rw.ReadLock().ForceUnlock(ctx)).To(BeTrue())
		Expect(next()).To(Equal("0"), "read force unlock")
	})

	It("lets every waiting reader in at once when the writer unlocks", func() {
		writer := ctxowner.New(ctx)
		wl := e.Client().NewReadWriteLock("rw-wake-all").WriteLock()
		Expect(wl.Lock(writer)).To(Succeed())
		clients := []*rlock.Client{e.Client(), e.Client()}
		got := make(chan time.Time, 6)
		for i := range 6 {
			reader := ctxowner.New(ctx)
			rl := clients[i%2].NewReadWriteLock("rw-wake-all").ReadLock()
			go func() {
				defer GinkgoRecover()
				Expect(rl.Lock(reader)).To(Succeed())
				got <- time.Now()
			}()
		}
		Eventually(func() int64 { return e.NumSub("redisson_rwlock:{rw-wake-all}") }).Should(BeEquivalentTo(2))
		// Let every reader make its attempt and block.
		Consistently(got).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		unlocked := time.Now()
		Expect(wl.Unlock(writer)).To(Succeed())
		for range 6 {
			var at time.Time
			Eventually(got).WithTimeout(2 * time.Second).Should(Receive(&at))
			Expect(at.Sub(unlocked)).To(BeNumerically("<", 500*time.Millisecond), "not after a TTL")
		}
		Expect(e.Raw.HLen(ctx, "rw-wake-all").Val()).To(BeEquivalentTo(7), "mode and six readers")
	})

	It("lets the same Client's waiting readers in at once on a downgrade, without a message", func() {
		c := e.Client()
		rw := c.NewReadWriteLock("rw-downgrade")
		writer := ctxowner.New(ctx)
		Expect(rw.WriteLock().Lock(writer)).To(Succeed())
		Expect(rw.ReadLock().Lock(writer)).To(Succeed())
		got := make(chan time.Time, 2)
		for range 2 {
			reader := ctxowner.New(ctx)
			go func() {
				defer GinkgoRecover()
				Expect(rw.ReadLock().Lock(reader)).To(Succeed())
				got <- time.Now()
				Expect(rw.ReadLock().Unlock(reader)).To(Succeed())
			}()
		}
		Consistently(got).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		downgraded := time.Now()
		Expect(rw.WriteLock().Unlock(writer)).To(Succeed())
		for range 2 {
			var at time.Time
			Eventually(got).WithTimeout(2 * time.Second).Should(Receive(&at))
			Expect(at.Sub(downgraded)).To(BeNumerically("<", 500*time.Millisecond), "not after the hash's TTL (30 s)")
		}
		Expect(rw.ReadLock().Unlock(writer)).To(Succeed())
	})

	It("extends the lease on a write re-entry to the remaining TTL plus the lease, as Redisson does", func() {
		wl := e.Client().NewReadWriteLock("rw-reenter").WriteLock()
		Expect(wl.TryLock(ctx, 0, 10*time.Second)).To(BeTrue())
		Expect(wl.TryLock(ctx, 0, time.Second)).To(BeTrue())
		Expect(e.Raw.PTTL(ctx, "rw-reenter").Val()).To(And(BeNumerically(">", 10*time.Second), BeNumerically("<=", 11*time.Second)))
		Expect(wl.Unlock(ctx)).To(Succeed())
		Expect(wl.Unlock(ctx)).To(Succeed())
	})

	It("reports the read side locked while the writer also holds a read lock, as Redisson does", func() {
		rw := e.Client().NewReadWriteLock("rw-both")
		Expect(rw.WriteLock().Lock(ctx)).To(Succeed())
		Expect(rw.ReadLock().IsLocked(ctx)).To(BeFalse(), "a writer alone")
		Expect(rw.ReadLock().Lock(ctx)).To(Succeed())
		Expect(rw.ReadLock().IsLocked(ctx)).To(BeTrue())
		Expect(rw.WriteLock().IsLocked(ctx)).To(BeTrue())
		Expect(rw.ReadLock().Unlock(ctx)).To(Succeed())
		Expect(rw.WriteLock().Unlock(ctx)).To(Succeed())
	})

	It("lets a stuck reader's lease expire on its own while another keeps reading", Label("slow"), func() {
		rw := e.Client().NewReadWriteLock("stuck")
		stuck, live := ctxowner.New(ctx), ctxowner.New(ctx)
		Expect(rw.ReadLock().LockLease(stuck, 1500*time.Millisecond)).To(Succeed()) // never unlocks
		Expect(rw.ReadLock().Lock(live)).To(Succeed())
		Expect(rw.ReadLock().Unlock(live)).To(Succeed())
		// The live reader's unlock keeps the hash only as long as the stuck
		// reader's own lease, and then the lock is free for a writer.
		Expect(e.Raw.PTTL(ctx, "stuck").Val()).To(BeNumerically("<=", 1500*time.Millisecond))
		writer := ctxowner.New(ctx)
		Expect(rw.WriteLock().TryLock(writer, 6*time.Second, 0)).To(BeTrue())
		Expect(rw.WriteLock().Unlock(writer)).To(Succeed())
	})

	It("renews a reader's watchdog lease and signals a writer's loss", Label("slow"), func() {
		rw := e.Client(rlock.WithWatchdogTimeout(time.Second)).NewReadWriteLock("rw-watch")
		reader := ctxowner.New(ctx)
		Expect(rw.ReadLock().Lock(reader)).To(Succeed())
		Consistently(func() int64 { return e.Raw.Exists(ctx, "rw-watch").Val() }).
			WithTimeout(1500 * time.Millisecond).Should(BeEquivalentTo(1))
		Expect(rw.ReadLock().Unlock(reader)).To(Succeed())

		writer := ctxowner.New(ctx)
		wl := rw.WriteLock()
		Expect(wl.Lock(writer)).To(Succeed())
		lctx, stop := rlock.LostContext(writer, wl)
		DeferCleanup(stop)
		Expect(rw.ReadLock().ForceUnlock(ctx)).To(BeFalse(), "not in read mode")
		Expect(wl.ForceUnlock(ctx)).To(BeTrue())
		Eventually(lctx.Done()).WithTimeout(2 * time.Second).Should(BeClosed())
		Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
	})

	It("rejects an empty name", func() {
		Expect(e.Client().NewReadWriteLock("").ReadLock().Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.Client().NewReadWriteLock("").WriteLock().Unlock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.Raw.DBSize(ctx).Val()).To(BeZero())
	})
})
