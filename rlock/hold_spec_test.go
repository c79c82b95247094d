package rlock_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("Acquire's holds: a Java LockHandle or PermitHandle in one line", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	for kind, newLock := range holdKinds {
		Context("on a "+kind, func() {
			It("holds for the acquiring owner, is released from another goroutine once, and ends its context", func() {
				c := e.Client()
				lock := newLock(c, "hold-"+kind)
				h, err := rlock.Acquire(ctx, lock, 0, 0)
				Expect(err).NotTo(HaveOccurred())
				Expect(h.Locker()).To(BeIdenticalTo(lock))
				Expect(h.Held(ctx)).To(BeTrue())
				Expect(h.Context().Err()).NotTo(HaveOccurred())

				_, err = rlock.Acquire(ctxowner.New(ctx), holdRival(kind, c, "hold-"+kind), 0, 0)
				Expect(err).To(MatchError(rlock.ErrBusy), "another owner's one attempt")

				released := make(chan error, 1)
				go func() { released <- h.Release(context.Background()) }()
				Expect(<-released).To(Succeed())
				Expect(lock.IsLocked(ctx)).To(BeFalse())
				Expect(h.Context().Err()).To(MatchError(context.Canceled))
				Expect(h.Lost()).To(BeFalse())
				Expect(h.Held(ctx)).To(BeFalse())

				By("a second Release or Close returns the first's result and unlocks nothing")
				again, err := rlock.Acquire(ctx, lock, 0, 0) // the same owner takes it anew
				Expect(err).NotTo(HaveOccurred())
				Expect(h.Release(ctx)).To(Succeed())
				Expect(h.Close()).To(Succeed())
				Expect(again.Held(ctx)).To(BeTrue(), "the earlier hold's Release must not give back the new one")
				Expect(again.Close()).To(Succeed())
			})
		})
	}

	It("waits until held with AcquireWait, and a FencedLock's hold carries its token", func() {
		c := e.Client()
		first, err := rlock.Acquire(ctx, c.NewFencedLock("hold-fenced"), 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(first.Token()).To(BeNumerically(">", 0))
		got := make(chan *rlock.Hold, 1)
		go func() {
			defer GinkgoRecover()
			h, err := rlock.AcquireWait(ctxowner.New(ctx), c.NewFencedLock("hold-fenced"), 0)
			Expect(err).NotTo(HaveOccurred())
			got <- h
		}()
		Consistently(got).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		Expect(first.Close()).To(Succeed())
		var second *rlock.Hold
		Eventually(got).WithTimeout(5 * time.Second).Should(Receive(&second))
		Expect(second.Token()).To(BeNumerically(">", first.Token()))
		Expect(second.Close()).To(Succeed())
	})

	It("tells a lost hold (ErrNotHeld, ErrLockLost) from a closed Client (ErrClosed)", Label("slow"), func() {
		c := e.Client(rlock.WithWatchdogTimeout(time.Second))
		h, err := rlock.Acquire(ctx, c.NewLock("hold-lost"), 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.NewLock("hold-lost").ForceUnlock(ctx)).To(BeTrue())
		Eventually(h.Context().Done()).WithTimeout(10 * time.Second).Should(BeClosed())
		Expect(context.Cause(h.Context())).To(MatchError(rlock.ErrLockLost))
		Expect(h.Lost()).To(BeTrue())
		err = h.Release(ctx)
		Expect(err).To(MatchError(rlock.ErrNotHeld))
		Expect(errors.Is(err, rlock.ErrClosed)).To(BeFalse())
		Expect(h.Release(ctx)).To(MatchError(rlock.ErrNotHeld), "the same result again")

		closing := e.Client()
		h, err = rlock.Acquire(ctx, closing.NewLock("hold-closed"), 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(closing.Close()).To(Succeed())
		err = h.Close()
		Expect(err).To(MatchError(rlock.ErrClosed))
		Expect(errors.Is(err, rlock.ErrNotHeld)).To(BeFalse())
		Expect(h.Close()).To(MatchError(rlock.ErrClosed))
	})

	It("never panics on a nil hold", func() {
		var h *rlock.Hold
		Expect(h.Release(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(h.Close()).To(MatchError(rlock.ErrInvalidArgument))
		Expect(h.Held(ctx)).Error().To(MatchError(rlock.ErrInvalidArgument))
		Expect(h.Context().Err()).To(HaveOccurred())
		Expect(h.Lost()).To(BeFalse())
		Expect(h.Locker()).To(BeNil())
		var p *rlock.PermitHold
		Expect(p.Release(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(p.Close()).To(MatchError(rlock.ErrInvalidArgument))
		Expect(p.ID()).To(BeEmpty())
		_, err := rlock.Acquire(ctx, nil, 0, 0)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = rlock.AcquirePermit(ctx, nil, 0, 0)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})

	It("holds a permit by id, released once from any goroutine", func() {
		c := e.Client()
		s := c.NewPermitExpirableSemaphore("hold-permits")
		_, err := rlock.AcquirePermit(ctx, s, 0, time.Minute)
		Expect(err).To(MatchError(rlock.ErrBusy), "no permits set")
		Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
		p, err := rlock.AcquirePermit(ctx, s, 0, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.ID()).NotTo(BeEmpty())
		Expect(p.Held(ctx)).To(BeTrue())
		_, err = rlock.AcquirePermit(ctx, s, 0, time.Minute)
		Expect(err).To(MatchError(rlock.ErrBusy))
		released := make(chan error, 1)
		go func() { released <- p.Release(context.Background()) }()
		Expect(<-released).To(Succeed())
		Expect(p.Context().Err()).To(MatchError(context.Canceled))
		Expect(p.Held(ctx)).To(BeFalse())
		Expect(p.Close()).To(Succeed(), "the first result again")
		Expect(s.AvailablePermits(ctx)).To(Equal(1), "released once")
	})

	It("ends a permit's context when its lease runs out, and its Release says ErrNotHeld", Label("slow"), func() {
		c := e.Client()
		s := c.NewPermitExpirableSemaphore("hold-permit-lease")
		Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
		p, err := rlock.AcquirePermit(ctx, s, 0, time.Second)
		Expect(err).NotTo(HaveOccurred())
		Eventually(p.Context().Done()).WithTimeout(5 * time.Second).Should(BeClosed())
		Expect(p.Lost()).To(BeTrue())
		Eventually(func() (bool, error) { return p.Held(ctx) }).WithTimeout(5 * time.Second).Should(BeFalse())
		Expect(p.Release(ctx)).To(MatchError(rlock.ErrNotHeld))
		Expect(p.Release(ctx)).To(MatchError(rlock.ErrNotHeld))
	})

	// A permit hold's context is its permit's loss signal (as a kept
	// permit's LostContext): a fixed-lease watchdog entry from the send of
	// the attempt that took the permit, less the drift allowance, moved by
	// the hold's UpdateLeaseTime, checked at every look.
	Describe("a permit hold's context", func() {
		It("follows a lease shortened through the hold: it has ended once another client can take the only permit", Label("slow"), func() {
			c, other := e.Client(), e.Client()
			name := spectest.UniqueName("hold-permit-shorter")
			s := c.NewPermitExpirableSemaphore(name)
			Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
			p, err := rlock.AcquirePermit(ctx, s, 0, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.UpdateLeaseTime(ctx, time.Second)).To(BeTrue())
			rival := other.NewPermitExpirableSemaphore(name)
			var id string
			Eventually(func() bool {
				var ok bool
				id, ok, err = rival.TryAcquire(ctx, 0, time.Minute)
				Expect(err).NotTo(HaveOccurred())
				return ok
			}).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(BeTrue())
			Expect(p.Context().Err()).To(MatchError(context.Canceled), "another client holds the only permit (%s)", id)
			Expect(p.Lost()).To(BeTrue())
			Expect(context.Cause(p.Context())).To(And(MatchError(rlock.ErrLockLost),
				MatchError(ContainSubstring("permit "+p.ID()+" lost"))), "the permit's words, not a lock's")
			Expect(p.Release(ctx)).To(MatchError(rlock.ErrNotHeld))
			Expect(rival.Release(ctx, id)).To(Succeed())
		})

		It("follows a lease lengthened through the hold, and ends at once when Redis no longer has the permit", Label("slow"), func() {
			c := e.Client()
			s := c.NewPermitExpirableSemaphore(spectest.UniqueName("hold-permit-longer"))
			Expect(s.TrySetPermits(ctx, 2)).To(BeTrue())
			p, err := rlock.AcquirePermit(ctx, s, 0, time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.UpdateLeaseTime(ctx, 4*time.Second)).To(BeTrue())
			Consistently(p.Context().Err).WithTimeout(1500*time.Millisecond).ShouldNot(HaveOccurred(), "past the first lease")
			Expect(p.Held(ctx)).To(BeTrue())
			Expect(p.UpdateLeaseTime(ctx, 0)).To(BeTrue(), "a permit that never expires")
			Expect(s.LeaseTime(ctx, p.ID())).To(Equal(rlock.NoExpiry))
			Expect(p.Context().Err()).NotTo(HaveOccurred())

			gone, err := rlock.AcquirePermit(ctx, s, 0, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Release(ctx, gone.ID())).To(Succeed()) // released behind the hold's back
			Expect(gone.UpdateLeaseTime(ctx, time.Minute)).To(BeFalse())
			Expect(gone.Context().Err()).To(HaveOccurred())
			Expect(gone.Lost()).To(BeTrue())
			Expect(p.Close()).To(Succeed())
			Expect(p.Lost()).To(BeFalse())
			Expect(p.Context().Err()).To(MatchError(context.Canceled))
			var nilHold *rlock.PermitHold
			Expect(nilHold.UpdateLeaseTime(ctx, time.Second)).Error().To(MatchError(rlock.ErrInvalidArgument))
		})

		It("counts the lease from the attempt that took the permit, not from the start of the wait: live after a wait longer than the lease", Label("slow"), func() {
			const lease = 2 * time.Second
			c, other := e.Client(), e.Client()
			name := spectest.UniqueName("hold-permit-wait")
			rival := other.NewPermitExpirableSemaphore(name)
			Expect(rival.TrySetPermits(ctx, 1)).To(BeTrue())
			_, err := rival.Acquire(ctx, lease+time.Second) // the wait below outlasts the lease it asks for
			Expect(err).NotTo(HaveOccurred())
			began := time.Now()
			p, err := rlock.AcquirePermitWait(ctx, c.NewPermitExpirableSemaphore(name), lease)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.Context().Err()).NotTo(HaveOccurred(), "the hold waited %v", time.Since(began))
			Expect(p.Lost()).To(BeFalse())
			Expect(p.Held(ctx)).To(BeTrue())
			Expect(time.Since(began)).To(BeNumerically(">", lease), "the wait outlasted the lease")
			Expect(p.Close()).To(Succeed())
		})
	})
})

// holdKinds makes a lock of every kind a hold can be of (the wait specs use
// them too).
var holdKinds = map[string]func(c *rlock.Client, name string) rlock.Locker{
	"Lock":            func(c *rlock.Client, n string) rlock.Locker { return c.NewLock(n) },
	"FencedLock":      func(c *rlock.Client, n string) rlock.Locker { return c.NewFencedLock(n) },
	"FairLock":        func(c *rlock.Client, n string) rlock.Locker { return c.NewFairLock(n) },
	"SpinLock":        func(c *rlock.Client, n string) rlock.Locker { return c.NewSpinLock(n) },
	"ReadLock":        func(c *rlock.Client, n string) rlock.Locker { return c.NewReadWriteLock(n).ReadLock() },
	"WriteLock":       func(c *rlock.Client, n string) rlock.Locker { return c.NewReadWriteLock(n).WriteLock() },
	"NonReentrant":    func(c *rlock.Client, n string) rlock.Locker { return c.NewNonReentrantLock(n) },
	"FasterMultiLock": func(c *rlock.Client, n string) rlock.Locker { return c.NewFasterMultiLock(n, "a", "b") },
	"MultiLock": func(c *rlock.Client, n string) rlock.Locker {
		m, err := rlock.NewMultiLock(c.NewLock(n+":a"), c.NewLock(n+":b"))
		Expect(err).NotTo(HaveOccurred())
		return m
	},
	"RedLock": func(c *rlock.Client, n string) rlock.Locker {
		r, err := rlock.NewRedLock(c.NewLock(n+":a"), c.NewLock(n+":b"), c.NewLock(n+":c"))
		Expect(err).NotTo(HaveOccurred())
		return r
	},
}

// holdRival is the lock of kind's name another owner's attempt must be
// refused on while kind's lock is held (readers share: a writer).
func holdRival(kind string, c *rlock.Client, n string) rlock.Locker {
	if kind == "ReadLock" {
		return c.NewReadWriteLock(n).WriteLock()
	}
	return holdKinds[kind](c, n)
}
