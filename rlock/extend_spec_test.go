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

// extender is a lock with Extend: *Lock and *FencedLock.
type extender interface {
	rlock.Locker
	Extend(ctx context.Context, lease time.Duration) error
}

var _ = Describe("Extend", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	for kind, newLock := range singleKeyKinds {
		Context("on a "+kind, func() {
			It("moves a fixed lease further, and LostContext with it", Label("slow"), func() {
				a := newLock(e.Client(), "extend").(extender)
				owner := ctxowner.New(ctx)
				Expect(a.LockLease(owner, time.Second)).To(Succeed())
				lctx, stop := rlock.LostContext(owner, a)
				DeferCleanup(stop)
				Expect(a.Extend(owner, 20*time.Second)).To(Succeed())
				Expect(a.RemainTTL(owner)).To(BeNumerically(">", 15*time.Second))
				other := singleKeyKinds[otherKind(kind)](e.Client(), "extend")
				Consistently(func() bool {
					ok, err := other.TryLock(ctxowner.New(ctx), 0, 0)
					Expect(err).NotTo(HaveOccurred())
					return ok
				}).WithTimeout(2 * time.Second).WithPolling(100 * time.Millisecond).Should(BeFalse())
				Expect(lctx.Err()).NotTo(HaveOccurred(), "LostContext's deadline moved with the lease")
				Expect(a.Unlock(owner)).To(Succeed())
			})

			It("shortens a fixed lease, ending LostContext before anyone else can take the lock", Label("slow"), func() {
				a := newLock(e.Client(), "shorten").(extender)
				owner := ctxowner.New(ctx)
				Expect(a.LockLease(owner, 20*time.Second)).To(Succeed())
				lctx, stop := rlock.LostContext(owner, a)
				DeferCleanup(stop)
				Expect(a.Extend(owner, 1500*time.Millisecond)).To(Succeed())
				other := singleKeyKinds[otherKind(kind)](e.Client(), "shorten")
				b := ctxowner.New(ctx)
				Eventually(func() bool {
					ok, err := other.TryLock(b, 0, 0)
					Expect(err).NotTo(HaveOccurred())
					if ok {
						Expect(lctx.Err()).To(HaveOccurred(), "another owner got in while A's LostContext was live")
					}
					return ok
				}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
				Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
				Expect(other.Unlock(b)).To(Succeed())
			})

			It("refuses a watchdog-managed hold, a lease below 1 ms, and an owner that holds nothing", func() {
				a := newLock(e.Client(), "extend-refused").(extender)
				owner := ctxowner.New(ctx)
				Expect(a.Extend(owner, time.Second)).To(MatchError(rlock.ErrNotHeld))
				Expect(a.Lock(owner)).To(Succeed())
				Expect(a.Extend(owner, time.Second)).To(MatchError(rlock.ErrInvalidArgument))
				Expect(a.Unlock(owner)).To(Succeed())

				Expect(a.LockLease(owner, 5*time.Second)).To(Succeed())
				Expect(a.Extend(owner, 0)).To(MatchError(rlock.ErrInvalidArgument))
				Expect(a.Extend(owner, 500*time.Microsecond)).To(MatchError(rlock.ErrInvalidArgument))
				Expect(a.Lock(owner)).To(Succeed(), "a watchdog re-entry makes the hold watchdog-managed")
				Expect(a.Extend(owner, 10*time.Second)).To(MatchError(ContainSubstring("watchdog-managed")))
				Expect(a.Unlock(owner)).To(Succeed())
				Expect(a.Unlock(owner)).To(Succeed())
			})

			It("says ErrNotHeld and ends LostContext when the hold is gone", func() {
				a := newLock(e.Client(), "extend-gone").(extender)
				owner := ctxowner.New(ctx)
				Expect(a.LockLease(owner, 20*time.Second)).To(Succeed())
				lctx, stop := rlock.LostContext(owner, a)
				DeferCleanup(stop)
				Expect(newLock(e.Client(), "extend-gone").ForceUnlock(ctx)).To(BeTrue())
				Expect(a.Extend(owner, time.Minute)).To(MatchError(rlock.ErrNotHeld))
				Eventually(lctx.Done()).Should(BeClosed())
				Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
			})
		})
	}

	It("works on a FencedLock, keeping its token", func() {
		f := e.Client().NewFencedLock("fenced-extend")
		owner := ctxowner.New(ctx)
		token, ok, err := f.TryLockToken(owner, 0, time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(f.Extend(owner, 30*time.Second)).To(Succeed())
		Expect(f.RemainTTL(owner)).To(BeNumerically(">", 25*time.Second))
		Expect(f.Token(ctx)).To(Equal(token))
		Expect(f.Unlock(owner)).To(Succeed())
	})

	It("keeps a read lock alive while another reader's longer hold lasts", func() {
		rwA := e.Client().NewReadWriteLock("rw-extend")
		rwB := e.Client().NewReadWriteLock("rw-extend")
		a, b := ctxowner.New(ctx), ctxowner.New(ctx)
		Expect(rwA.ReadLock().LockLease(a, 20*time.Second)).To(Succeed())
		Expect(rwB.ReadLock().LockLease(b, 20*time.Second)).To(Succeed())
		Expect(rwA.ReadLock().Extend(a, time.Second)).To(Succeed())
		Expect(rwA.ReadLock().RemainTTL(a)).To(BeNumerically(">", 15*time.Second), "B's read hold still needs the lock")
		Expect(rwB.ReadLock().Extend(b, 2*time.Second)).To(Succeed())
		Expect(rwB.ReadLock().RemainTTL(b)).To(BeNumerically("<=", 2*time.Second))
	})
})
