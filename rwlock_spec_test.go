package goredisson_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

var _ = Describe("ReadWriteLock", func() {
	var (
		e   *env
		ctx context.Context
	)
	BeforeEach(func() {
		e = newEnv()
		ctx = context.Background()
	})

	It("keeps a counter exact under the write lock across 2 Clients x 8 owners", func() {
		n := guardCounter(e, 15, func(c *rlock.Client) rlock.Locker { return c.NewReadWriteLock("rw-counter").WriteLock() })
		Expect(n).To(Equal(240))
	})

	It("lets many readers hold at once and keeps the writer out until the last leaves", func() {
		c1, c2 := e.client(), e.client()
		readers := make([]context.Context, 6)
		for i := range readers {
			readers[i] = ctxowner.New(ctx)
			c := c1
			if i%2 == 1 {
				c = c2
			}
			Expect(c.NewReadWriteLock("rw").ReadLock().Lock(readers[i])).To(Succeed())
		}
		Expect(e.raw.HGet(ctx, "rw", "mode").Val()).To(Equal("read"))
		Expect(e.raw.HLen(ctx, "rw").Val()).To(BeEquivalentTo(7))

		writer := ctxowner.New(ctx)
		wl := e.client().NewReadWriteLock("rw").WriteLock()
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
		Expect(e.raw.HGet(ctx, "rw", "mode").Val()).To(Equal("write"))

		ok, err := c1.NewReadWriteLock("rw").ReadLock().TryLock(ctxowner.New(ctx), 100*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse(), "a reader waits for the writer")
		Expect(wl.Unlock(writer)).To(Succeed())
		Expect(e.raw.Exists(ctx, "rw").Val()).To(BeZero())
	})

	It("stores Redisson's layout and lets the writer downgrade", func() {
		c := e.client()
		rw := c.NewReadWriteLock("doc")
		owner := ctxowner.WithID(ctx, "5")
		field := c.ID() + ":ctx:5"

		sub := e.raw.Subscribe(ctx, "redisson_rwlock:{doc}")
		DeferCleanup(sub.Close)
		_, err := sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())

		Expect(rw.WriteLock().Lock(owner)).To(Succeed())
		Expect(rw.WriteLock().Lock(owner)).To(Succeed())
		Expect(e.raw.HGetAll(ctx, "doc").Val()).To(Equal(map[string]string{"mode": "write", field + ":write": "2"}))
		Expect(rw.ReadLock().Lock(owner)).To(Succeed(), "the writer may read")
		Expect(e.raw.HGet(ctx, "doc", field).Val()).To(Equal("1"))
		Expect(e.raw.PTTL(ctx, "{doc}:"+field+":rwlock_timeout:1").Val()).To(BeNumerically(">", 29*time.Second))

		Expect(rw.WriteLock().Unlock(owner)).To(Succeed())
		Expect(rw.WriteLock().Unlock(owner)).To(Succeed())
		Expect(e.raw.HGetAll(ctx, "doc").Val()).To(Equal(map[string]string{"mode": "read", field: "1"}), "downgraded")
		msg, err := sub.ReceiveMessage(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(msg.Payload).To(Equal("1"), "readers are let in")
		Expect(rw.ReadLock()).To(rlocktest.BeLocked())
		Expect(rw.ReadLock()).To(rlocktest.HaveHoldCount(1))
		Expect(rw.WriteLock()).NotTo(rlocktest.BeLocked())

		Expect(rw.ReadLock().Unlock(owner)).To(Succeed())
		msg, err = sub.ReceiveMessage(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(msg.Payload).To(Equal("1"), "a read unlock publishes the read-unlock message")
		Expect(e.raw.Exists(ctx, "doc").Val()).To(BeZero())
		Expect(rw.ReadLock().Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		Expect(rw.WriteLock().Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
	})

	It("lets a stuck reader's lease expire on its own while another keeps reading", func() {
		rw := e.client().NewReadWriteLock("stuck")
		stuck, live := ctxowner.New(ctx), ctxowner.New(ctx)
		Expect(rw.ReadLock().LockLease(stuck, 300*time.Millisecond)).To(Succeed()) // never unlocks
		Expect(rw.ReadLock().Lock(live)).To(Succeed())
		Expect(rw.ReadLock().Unlock(live)).To(Succeed())
		// The live reader's unlock keeps the hash only as long as the stuck
		// reader's own lease, and then the lock is free for a writer.
		Expect(e.raw.PTTL(ctx, "stuck").Val()).To(BeNumerically("<=", 300*time.Millisecond))
		writer := ctxowner.New(ctx)
		Expect(rw.WriteLock().TryLock(writer, 2*time.Second, 0)).To(BeTrue())
		Expect(rw.WriteLock().Unlock(writer)).To(Succeed())
	})

	It("renews a reader's watchdog lease and signals a writer's loss", func() {
		rw := e.client(rlock.WithWatchdogTimeout(600 * time.Millisecond)).NewReadWriteLock("rw-watch")
		reader := ctxowner.New(ctx)
		Expect(rw.ReadLock().Lock(reader)).To(Succeed())
		Consistently(func() int64 { return e.raw.Exists(ctx, "rw-watch").Val() }).
			WithTimeout(1500 * time.Millisecond).Should(BeEquivalentTo(1))
		Expect(rw.ReadLock().Unlock(reader)).To(Succeed())

		writer := ctxowner.New(ctx)
		wl := rw.WriteLock().(*rlock.RWSide)
		Expect(wl.Lock(writer)).To(Succeed())
		lctx, stop := wl.LostContext(writer)
		DeferCleanup(stop)
		Expect(rw.ReadLock().ForceUnlock(ctx)).To(BeFalse(), "not in read mode")
		Expect(wl.ForceUnlock(ctx)).To(BeTrue())
		Eventually(lctx.Done()).Should(BeClosed())
		Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
	})

	It("rejects an empty name", func() {
		Expect(e.client().NewReadWriteLock("").ReadLock().Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.client().NewReadWriteLock("").WriteLock().Unlock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.raw.DBSize(ctx).Val()).To(BeZero())
	})
})
