package rlockotel_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlockotel"
)

// The gauges (UpDownCounters) of waiting and holding, on real locks: they
// count what is going on now, and return to zero after every path.
var _ = Describe("Observer's gauges", func() {
	var (
		w  *world
		bg context.Context
	)
	BeforeEach(func() {
		w = newWorld()
		bg = context.Background()
	})

	// gauge is the value of a gauge over the points that match.
	gauge := func(name string, match m) func() int64 {
		return func() int64 { return w.total(name, match) }
	}
	waiting := func(kind string) func() int64 { return gauge(rlockotel.WaitCountName, m{"goredisson.lock.kind": kind}) }
	holding := func(kind string) func() int64 { return gauge(rlockotel.HoldCountName, m{"goredisson.lock.kind": kind}) }
	// allZero checks that every point of both gauges is back at zero.
	allZero := func() {
		GinkgoHelper()
		for _, name := range []string{rlockotel.WaitCountName, rlockotel.HoldCountName} {
			for _, p := range w.points(name) {
				Expect(p.Value).To(BeZero(), "%s %v", name, p.Attrs)
			}
		}
	}
	// blocked starts lock.Lock(ctx) on a goroutine and waits until the
	// wait gauge of kind shows it; the returned channel gets its result.
	blocked := func(kind string, before int64, lockFn func() error) chan error {
		GinkgoHelper()
		done := make(chan error, 1)
		go func() { done <- lockFn() }()
		Eventually(waiting(kind)).WithTimeout(5 * time.Second).Should(Equal(before + 1))
		return done
	}

	It("has the instruments' names, units and kinds", func() {
		client := w.client()
		owner := ctxowner.New(bg)
		lock := client.NewLock("gauge:names")
		Expect(lock.Lock(owner)).To(Succeed())
		got := w.collect()
		Expect(got).To(HaveKey(rlockotel.WaitCountName))
		Expect(got).To(HaveKey(rlockotel.HoldCountName))
		Expect(got[rlockotel.WaitCountName].Unit).To(Equal("{wait}"))
		Expect(got[rlockotel.HoldCountName].Unit).To(Equal("{hold}"))
		Expect(got[rlockotel.HoldCountName].Data).To(HaveField("IsMonotonic", false), "an UpDownCounter")
		Expect(lock.Unlock(owner)).To(Succeed())
	})

	It("counts a waiter while it waits and a holder while it holds, one per owner whatever the re-entries", func() {
		client := w.client()
		holder, waiter := ctxowner.New(bg), ctxowner.New(bg)
		lock := client.NewLock("gauge:orders:1")
		Expect(lock.Lock(holder)).To(Succeed())
		Expect(lock.Lock(holder)).To(Succeed(), "a re-entry")
		Expect(holding("lock")()).To(BeEquivalentTo(1))
		Expect(waiting("lock")()).To(BeZero())

		done := blocked("lock", 0, func() error { return lock.Lock(waiter) })
		Consistently(waiting("lock")).WithTimeout(200 * time.Millisecond).Should(BeEquivalentTo(1))
		Expect(lock.Unlock(holder)).To(Succeed())
		Expect(holding("lock")()).To(BeEquivalentTo(1), "one hold is left")
		Expect(lock.Unlock(holder)).To(Succeed())
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(Succeed()))
		Expect(waiting("lock")()).To(BeZero())
		Expect(holding("lock")()).To(BeEquivalentTo(1), "the waiter holds it now")
		Expect(lock.Unlock(waiter)).To(Succeed())
		allZero()
	})

	It("counts every owner of a shared read lock, by kind", func() {
		client := w.client()
		rw := client.NewReadWriteLock("gauge:rw")
		a, b, c := ctxowner.New(bg), ctxowner.New(bg), ctxowner.New(bg)
		Expect(rw.ReadLock().Lock(a)).To(Succeed())
		Expect(rw.ReadLock().Lock(b)).To(Succeed())
		Expect(holding("readlock")()).To(BeEquivalentTo(2))
		done := blocked("writelock", 0, func() error { return rw.WriteLock().Lock(c) })
		Expect(rw.ReadLock().Unlock(b)).To(Succeed())
		Expect(holding("readlock")()).To(BeEquivalentTo(1))
		Expect(rw.ReadLock().Unlock(a)).To(Succeed())
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(Succeed()))
		Expect(holding("writelock")()).To(BeEquivalentTo(1))
		Expect(waiting("writelock")()).To(BeZero())

		By("a downgrade: the writer takes the read lock too, then gives the write lock back")
		Expect(rw.ReadLock().Lock(c)).To(Succeed())
		Expect(holding("readlock")()).To(BeEquivalentTo(1))
		Expect(rw.WriteLock().Unlock(c)).To(Succeed())
		Expect(holding("writelock")()).To(BeZero())
		Expect(rw.ReadLock().Unlock(c)).To(Succeed())
		allZero()
	})

	It("returns to zero when the hold is lost, and the owner's late unlock takes nothing away", func() {
		client := w.client(rlock.WithWatchdogTimeout(time.Second))
		owner := ctxowner.New(bg)
		lock := client.NewFencedLock("gauge:fenced")
		_, err := lock.LockToken(owner)
		Expect(err).NotTo(HaveOccurred())
		Expect(holding("fencedlock")()).To(BeEquivalentTo(1))
		Expect(lock.ForceUnlock(bg)).To(BeTrue())
		Eventually(holding("fencedlock")).WithTimeout(5 * time.Second).Should(BeZero())
		Expect(w.total(rlockotel.LostName, nil)).To(BeEquivalentTo(1))
		Expect(lock.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		allZero()

		By("a fixed lease that runs out")
		fixed := client.NewLock("gauge:fixed")
		Expect(fixed.LockLease(owner, 1500*time.Millisecond)).To(Succeed())
		Expect(holding("lock")()).To(BeEquivalentTo(1))
		Eventually(holding("lock")).WithTimeout(5 * time.Second).Should(BeZero())
		// The Client counts the lease lost a little before Redis expires it
		// (its clock-drift allowance), so this unlock may still find the
		// hash and succeed, or fail with ErrNotHeld: either way the hold
		// ended at the loss, and nothing more is taken away.
		_ = fixed.Unlock(owner)
		allZero()

		By("a hold lost and taken again by the same owner")
		Expect(fixed.Lock(owner)).To(Succeed())
		Expect(fixed.ForceUnlock(bg)).To(BeTrue())
		Eventually(holding("lock")).WithTimeout(5 * time.Second).Should(BeZero())
		Expect(fixed.Lock(owner)).To(Succeed())
		Expect(holding("lock")()).To(BeEquivalentTo(1))
		Expect(fixed.Unlock(owner)).To(Succeed())
		allZero()
	})

	It("returns to zero when a wait is cancelled, runs out or fails", func() {
		client := w.client()
		holder := ctxowner.New(bg)
		lock := client.NewFairLock("gauge:fair")
		Expect(lock.Lock(holder)).To(Succeed())

		By("a context cancelled during the wait")
		ctx, cancel := context.WithCancel(ctxowner.New(bg))
		done := blocked("fairlock", 0, func() error { return lock.Lock(ctx) })
		cancel()
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(MatchError(context.Canceled)))
		Expect(waiting("fairlock")()).To(BeZero())

		By("a TryLock whose wait runs out")
		Expect(lock.TryLock(ctxowner.New(bg), 100*time.Millisecond, 0)).To(BeFalse())
		Expect(waiting("fairlock")()).To(BeZero())

		By("invalid arguments")
		Expect(lock.TryLock(ctxowner.New(bg), 0, 10)).Error().To(MatchError(rlock.ErrInvalidArgument)) // a 10 ns lease
		Expect(waiting("fairlock")()).To(BeZero())

		By("an error reply of Redis")
		Expect(w.raw.Set(bg, "gauge:string", "not a lock", 0).Err()).To(Succeed())
		Expect(client.NewLock("gauge:string").Lock(holder)).To(MatchError(ContainSubstring("WRONGTYPE")))

		Expect(lock.Unlock(holder)).To(Succeed())
		allZero()
		Expect(w.total(rlockotel.WaitCountName, nil)).To(BeZero())
		Expect(w.matching(rlockotel.WaitCountName, m{"goredisson.lock.kind": "lock"})).NotTo(BeEmpty(), "the failed Lock was counted, then taken away")
	})

	It("returns to zero when the Client closes under waiters and holders", func() {
		client := w.client()
		other := w.client()
		holder, owner := ctxowner.New(bg), ctxowner.New(bg)
		Expect(other.NewLock("gauge:closed").Lock(holder)).To(Succeed())
		Expect(client.NewSpinLock("gauge:spin").Lock(owner)).To(Succeed())
		Expect(client.NewLock("gauge:held").Lock(owner)).To(Succeed())
		done := blocked("lock", 0, func() error { return client.NewLock("gauge:closed").Lock(ctxowner.New(bg)) })
		Expect(holding("lock")()).To(BeEquivalentTo(2))
		Expect(holding("spinlock")()).To(BeEquivalentTo(1))

		Expect(client.Close()).To(Succeed())
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(MatchError(rlock.ErrClosed)))
		Expect(waiting("lock")()).To(BeZero())
		Eventually(holding("spinlock")).WithTimeout(5 * time.Second).Should(BeZero())
		Expect(holding("lock")()).To(BeEquivalentTo(1), "the other Client's hold")
		Expect(other.NewLock("gauge:closed").Unlock(holder)).To(Succeed())
		allZero()

		By("an acquisition on the closed Client")
		Expect(client.NewLock("gauge:after").Lock(owner)).To(MatchError(rlock.ErrClosed))
		allZero()
	})

	It("counts the waiters of semaphores and latches (their permits are not holds)", func() {
		client := w.client()
		sem := client.NewSemaphore("gauge:sem")
		Expect(sem.TrySetPermits(bg, 1)).To(BeTrue())
		Expect(sem.Acquire(bg, 1)).To(Succeed())
		done := blocked("semaphore", 0, func() error { return sem.Acquire(bg, 1) })
		Expect(sem.Release(bg, 1)).To(Succeed())
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(Succeed()))
		Expect(sem.Release(bg, 1)).To(Succeed())

		latch := client.NewCountDownLatch("gauge:latch")
		Expect(latch.TrySetCount(bg, 1)).To(BeTrue())
		done = blocked("countdownlatch", 0, func() error { return latch.Await(bg) })
		Expect(latch.CountDown(bg)).To(Succeed())
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(Succeed()))

		pes := client.NewPermitExpirableSemaphore("gauge:pes")
		Expect(pes.TrySetPermits(bg, 1)).To(BeTrue())
		id, err := pes.Acquire(bg, 0)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(bg)
		done = blocked("permitsemaphore", 0, func() error { _, err := pes.Acquire(ctx, 0); return err })
		cancel()
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(MatchError(context.Canceled)))
		Expect(pes.Release(bg, id)).To(Succeed())

		Expect(w.points(rlockotel.HoldCountName)).To(BeEmpty())
		allZero()
	})

	It("puts no lock name on the gauges unless asked", func() {
		client := w.client()
		owner := ctxowner.New(bg)
		Expect(client.NewLock("gauge:secret:1").Lock(owner)).To(Succeed())
		for _, name := range []string{rlockotel.WaitCountName, rlockotel.HoldCountName} {
			for _, p := range w.points(name) {
				Expect(p.Attrs).To(Equal(m{"goredisson.lock.kind": "lock"}), name)
			}
		}
		Expect(client.NewLock("gauge:secret:1").Unlock(owner)).To(Succeed())
	})
})

var _ = Describe("Observer with WithLockName", func() {
	bg := context.Background()

	It("puts the normalised name on every metric, and the gauges return to zero under it", func() {
		w := newWorld(rlockotel.WithLockName(nil))
		client := w.client(rlock.WithWatchdogTimeout(time.Second))
		owner := ctxowner.New(bg)
		for _, id := range []string{"17", "18", "550e8400-e29b-41d4-a716-446655440000"} {
			l := client.NewLock("orders:" + id)
			Expect(l.Lock(owner)).To(Succeed())
			Expect(l.TryLock(ctxowner.New(bg), 0, 0)).To(BeFalse())
			Expect(l.Unlock(owner)).To(Succeed())
			Expect(l.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		}
		fenced := client.NewFencedLock("orders:19")
		_, err := fenced.LockToken(owner)
		Expect(err).NotTo(HaveOccurred())
		Expect(w.total(rlockotel.HoldCountName, m{"goredisson.lock.name": "orders:*"})).To(BeEquivalentTo(1))
		Expect(fenced.ForceUnlock(bg)).To(BeTrue())
		// The hold gauge is taken down last of a loss's measurements.
		Eventually(func() []int64 {
			return []int64{w.total(rlockotel.LostName, nil), w.total(rlockotel.HoldCountName, nil)}
		}).
			WithTimeout(5 * time.Second).Should(Equal([]int64{1, 0}))

		metrics := w.collect()
		Expect(metrics).To(HaveLen(8), "every instrument recorded")
		for name := range metrics {
			for _, p := range w.points(name) {
				Expect(p.Attrs).To(HaveKeyWithValue("goredisson.lock.name", "orders:*"), name)
			}
		}
		Expect(w.total(rlockotel.AcquisitionsName, m{"goredisson.lock.name": "orders:*", "goredisson.lock.operation": "lock"})).To(BeEquivalentTo(3))
		for _, name := range []string{rlockotel.WaitCountName, rlockotel.HoldCountName} {
			for _, p := range w.points(name) {
				Expect(p.Value).To(BeZero(), "%s %v", name, p.Attrs)
			}
		}
		Expect(spanAttrs(w.ended("goredisson locktoken")[0])).To(HaveKeyWithValue("goredisson.lock.name", "orders:19"), "spans keep the name as it is")
	})

	It("uses the function it is given", func() {
		w := newWorld(rlockotel.WithLockName(func(name string) string { return "tenant-" + name[:1] }))
		client := w.client()
		owner := ctxowner.New(bg)
		Expect(client.NewLock("alice-report").Lock(owner)).To(Succeed())
		Expect(w.total(rlockotel.HoldCountName, m{"goredisson.lock.name": "tenant-a"})).To(BeEquivalentTo(1))
		Expect(client.NewLock("alice-report").Unlock(owner)).To(Succeed())
	})
})

var _ = DescribeTable("NormalizeLockName folds ids and numbers to *",
	func(name, want string) {
		Expect(rlockotel.NormalizeLockName(name)).To(Equal(want))
	},
	Entry("a number", "orders:42", "orders:*"),
	Entry("several", "tenant:7:order:1234", "tenant:*:order:*"),
	Entry("a UUID, whole", "{cart:550e8400-e29b-41d4-a716-446655440000}:lock", "{cart:*}:lock"),
	Entry("an upper-case UUID", "job/550E8400-E29B-41D4-A716-446655440000", "job/*"),
	Entry("a date", "job-2026-11-24", "job-*-*-*"),
	Entry("words with digits", "user42:v2:a1b2c3", "*:*:*"),
	Entry("a hash without digits", "blob:deadbeefcafebabe", "blob:*"),
	Entry("a short hex word is a word", "cache:beef", "cache:beef"),
	Entry("an object id", "doc:507f1f77bcf86cd799439011", "doc:*"),
	Entry("no ids", "inventory.reindex", "inventory.reindex"),
	Entry("letters of any script", "заказ:15", "заказ:*"),
	Entry("a UUID followed by letters is one word", "550e8400-e29b-41d4-a716-446655440000x", "*-*-*-*-*"),
	Entry("empty", "", ""),
)

var _ = It("cuts a long normalised name", func() {
	long := ""
	for range 40 {
		long += "segment:"
	}
	out := rlockotel.NormalizeLockName(long)
	Expect(len(out)).To(BeNumerically("<=", 128+len("…")))
	Expect(out).To(HaveSuffix("…"))
	Expect(rlockotel.NormalizeLockName(long)).To(Equal(out), "deterministic")
})
