package rlock_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Redisson calls that take an owner or a lease explicitly:
// isHeldByThread(threadId) and lockAndGetToken(leaseTime).

var _ = Describe("IsHeldByOwner, Redisson's isHeldByThread(threadId)", func() {
	var (
		e   *spectest.Env
		ctx context.Context
		c   *rlock.Client
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
		c = e.Client()
	})

	// holdOnGoroutine takes lock on a goroutine of its own (the goroutine is
	// the owner) and returns that owner's id; the goroutine unlocks and ends
	// when release is closed.
	holdOnGoroutine := func(lock *rlock.Lock) (owner string, release chan struct{}) {
		GinkgoHelper()
		ids, release, done := make(chan string, 1), make(chan struct{}), make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(lock.Lock(ctx)).To(Succeed())
			ids <- ctxowner.Of(ctx)
			<-release
			Expect(lock.Unlock(ctx)).To(Succeed())
		}()
		DeferCleanup(func() { Eventually(done).Should(BeClosed()) })
		return <-ids, release
	}

	It("is true for a goroutine owner given its number, where the old README mapping said false", func() {
		lock := c.NewLock("owner-goroutine")
		owner, release := holdOnGoroutine(lock)
		Expect(owner).To(MatchRegexp(`^[0-9]+$`))
		Expect(e.Raw.HExists(ctx, "owner-goroutine", c.ID()+":"+owner).Val()).To(BeTrue(), "Redisson's field <client id>:<thread id>")

		Expect(lock.IsHeldByOwner(ctx, owner)).To(BeTrue())
		Expect(lock.IsHeldByCurrent(ctxowner.WithID(ctx, owner))).To(BeFalse(), "WithID makes a context owner: another field")
		Expect(lock.IsHeldByOwner(ctx, ctxowner.ContextPrefix+owner)).To(BeFalse())
		Expect(lock.IsHeldByCurrent(ctx)).To(BeFalse(), "this goroutine is another owner")

		close(release)
		Eventually(func() (bool, error) { return lock.IsHeldByOwner(ctx, owner) }).Should(BeFalse())
	})

	It("is true for a context owner given ctxowner.Of's id, on a Lock and a FencedLock", func() {
		job := ctxowner.WithID(ctx, "job-7")
		lock, fenced := c.NewLock("owner-ctx"), c.NewFencedLock("owner-ctx-fenced")
		Expect(lock.Lock(job)).To(Succeed())
		Expect(fenced.Lock(job)).To(Succeed())

		owner := ctxowner.Of(job)
		Expect(owner).To(Equal("ctx:job-7"))
		Expect(lock.IsHeldByOwner(ctx, owner)).To(BeTrue())
		Expect(fenced.IsHeldByOwner(ctx, owner)).To(BeTrue())
		Expect(lock.IsHeldByOwner(ctx, "job-7")).To(BeFalse(), "the bare id is a goroutine-style field")

		Expect(lock.Unlock(job)).To(Succeed())
		Expect(fenced.Unlock(job)).To(Succeed())
		Expect(lock.IsHeldByOwner(ctx, owner)).To(BeFalse())
		Expect(fenced.IsHeldByOwner(ctx, owner)).To(BeFalse())
	})

	It("is false for a non-holder: a free lock, another owner, the same owner id on another client", func() {
		lock := c.NewLock("owner-none")
		Expect(lock.IsHeldByOwner(ctx, "15")).To(BeFalse(), "free")

		job := ctxowner.WithID(ctx, "job-8")
		Expect(lock.Lock(job)).To(Succeed())
		DeferCleanup(func() { _ = lock.Unlock(job) })
		Expect(lock.IsHeldByOwner(ctx, "ctx:job-9")).To(BeFalse())
		Expect(lock.IsHeldByOwner(ctx, "15")).To(BeFalse())
		Expect(e.Client().NewLock("owner-none").IsHeldByOwner(ctx, "ctx:job-8")).To(BeFalse(),
			"Redisson asks for its own client id's field")
	})

	It("reads exactly the field Redisson writes for a thread, and a write lock's :write field", func() {
		const javaID = "7a3b1c2d-0000-4000-8000-00000000abcd"
		java := e.Client(rlock.WithClientID(javaID))
		Expect(e.Raw.HSet(ctx, "owner-java", javaID+":15", 1).Err()).To(Succeed())
		Expect(java.NewLock("owner-java").IsHeldByOwner(ctx, "15")).To(BeTrue())
		Expect(java.NewLock("owner-java").IsHeldByOwner(ctx, "16")).To(BeFalse())

		rw := c.NewReadWriteLock("owner-rw")
		job := ctxowner.WithID(ctx, "writer")
		Expect(rw.WriteLock().Lock(job)).To(Succeed())
		DeferCleanup(func() { _ = rw.WriteLock().Unlock(job) })
		Expect(rw.WriteLock().IsHeldByOwner(ctx, "ctx:writer")).To(BeTrue())
		Expect(rw.ReadLock().IsHeldByOwner(ctx, "ctx:writer")).To(BeFalse(), "Redisson's read lock asks for <id>:<thread>, not :write")
	})

	It("is true on a MultiLock when the owner holds every lock, as RedissonMultiLock's", func() {
		a, b := c.NewLock("owner-multi-a"), c.NewFencedLock("owner-multi-b")
		m, err := rlock.NewMultiLock(a, b)
		Expect(err).NotTo(HaveOccurred())
		job := ctxowner.WithID(ctx, "multi")
		Expect(m.Lock(job)).To(Succeed())
		Expect(m.IsHeldByOwner(ctx, "ctx:multi")).To(BeTrue())
		Expect(b.Unlock(job)).To(Succeed())
		Expect(m.IsHeldByOwner(ctx, "ctx:multi")).To(BeFalse(), "one of the locks is no longer held")
		Expect(a.Unlock(job)).To(Succeed())
	})

	It("refuses an empty owner id", func() {
		_, err := c.NewLock("owner-empty").IsHeldByOwner(ctx, "")
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})
})

var _ = Describe("FencedLock.LockTokenLease, Redisson's lockAndGetToken(leaseTime)", func() {
	var (
		e   *spectest.Env
		ctx context.Context
		c   *rlock.Client
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = ctxowner.New(context.Background())
		c = e.Client()
	})

	It("takes the lock with the fixed lease and returns a token above every earlier one", Label("slow"), func() {
		f := c.NewFencedLock("token-lease")
		first, err := f.LockToken(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Unlock(ctx)).To(Succeed())

		t, err := f.LockTokenLease(ctx, 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(t).To(BeNumerically(">", first))
		Expect(f.Token(ctx)).To(Equal(t))
		Expect(e.Raw.PTTL(ctx, "token-lease").Val()).To(And(BeNumerically(">", 0), BeNumerically("<=", 5*time.Second)), "the fixed lease, not the 30 s watchdog's")

		again, err := f.LockTokenLease(ctx, 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(BeNumerically(">", t), "a re-entry gets a token of its own")
		Expect(f.HoldCount(ctx)).To(Equal(2))

		// Nothing renews it: the key expires at the end of the lease.
		Eventually(func() int64 { return e.Raw.Exists(ctx, "token-lease").Val() }).WithTimeout(20 * time.Second).Should(BeZero())
	})

	It("takes a watchdog lease for lease <= 0, and refuses one below 1 ms", func() {
		f := c.NewFencedLock("token-watchdog")
		_, err := f.LockTokenLease(ctx, -1)
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Raw.PTTL(ctx, "token-watchdog").Val()).To(BeNumerically(">", 20*time.Second))
		Expect(f.Unlock(ctx)).To(Succeed())

		_, err = f.LockTokenLease(ctx, time.Microsecond)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})

	It("waits for the lock as lockAndGetToken does, and ends with ctx", func() {
		f := c.NewFencedLock("token-wait")
		other := ctxowner.New(context.Background())
		Expect(f.LockLease(other, 5*time.Second)).To(Succeed())

		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err := f.LockTokenLease(short, time.Second)
		Expect(err).To(MatchError(context.DeadlineExceeded))

		got := make(chan int64, 1)
		go func() {
			defer GinkgoRecover()
			t, err := f.LockTokenLease(ctx, 5*time.Second)
			Expect(err).NotTo(HaveOccurred())
			got <- t
		}()
		Expect(f.Unlock(other)).To(Succeed())
		Eventually(got).WithTimeout(10 * time.Second).Should(Receive(BeNumerically(">", 1)))
		Expect(f.Unlock(ctx)).To(Succeed())
	})
})
