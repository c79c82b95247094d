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

// The single-key lock kinds, made by name on a Client.
var singleKeyKinds = map[string]func(c *rlock.Client, name string) rlock.Locker{
	"Lock":       func(c *rlock.Client, n string) rlock.Locker { return c.NewLock(n) },
	"FencedLock": func(c *rlock.Client, n string) rlock.Locker { return c.NewFencedLock(n) },
	"FairLock":   func(c *rlock.Client, n string) rlock.Locker { return c.NewFairLock(n) },
	"SpinLock":   func(c *rlock.Client, n string) rlock.Locker { return c.NewSpinLock(n) },
	"ReadLock":   func(c *rlock.Client, n string) rlock.Locker { return c.NewReadWriteLock(n).ReadLock() },
	"WriteLock":  func(c *rlock.Client, n string) rlock.Locker { return c.NewReadWriteLock(n).WriteLock() },
}

// otherKind is the kind another owner takes the lock with: the same kind,
// but the write side for a read lock (another reader would share it).
func otherKind(kind string) string {
	if kind == "ReadLock" {
		return "WriteLock"
	}
	return kind
}

var _ = Describe("holds and their leases", func() {
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
			// stillHeld checks, for longer than the fixed lease of 1 s that
			// once was part of A's hold, that nobody else can take the lock
			// and A's LostContext stays live.
			stillHeld := func(a rlock.Locker, owner context.Context, other rlock.Locker) {
				GinkgoHelper()
				lctx, stop := rlock.LostContext(owner, a)
				defer stop()
				Consistently(func() bool {
					ok, err := other.TryLock(ctxowner.New(ctx), 0, 0)
					Expect(err).NotTo(HaveOccurred())
					return ok
				}).WithTimeout(2500*time.Millisecond).WithPolling(100*time.Millisecond).Should(BeFalse(), "another client took the lock A still holds")
				Expect(lctx.Err()).NotTo(HaveOccurred(), "A's LostContext ended while A holds the lock")
				Expect(a.HoldCount(owner)).To(Equal(1))
			}

			It("keeps a hold that became watchdog-managed renewed until its last Unlock (fixed, then watchdog re-entry, one Unlock)", Label("slow"), func() {
				a := newLock(e.Client(), "mixed-fw")
				owner := ctxowner.New(ctx)
				Expect(a.LockLease(owner, time.Second)).To(Succeed())
				Expect(a.Lock(owner)).To(Succeed())
				Expect(a.Unlock(owner)).To(Succeed())
				Expect(a.RemainTTL(owner)).To(BeNumerically(">", 20*time.Second), "the watchdog lease, not the first hold's 1 s")
				stillHeld(a, owner, singleKeyKinds[otherKind(kind)](e.Client(), "mixed-fw"))
				Expect(a.Unlock(owner)).To(Succeed())
				Expect(a.IsLocked(ctx)).To(BeFalse())
			})

			It("does not let a fixed re-entry shorten a watchdog-managed hold", Label("slow"), func() {
				a := newLock(e.Client(), "mixed-wf")
				owner := ctxowner.New(ctx)
				Expect(a.Lock(owner)).To(Succeed())
				ok, err := a.TryLock(owner, 0, time.Second)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				Expect(a.Unlock(owner)).To(Succeed())
				stillHeld(a, owner, singleKeyKinds[otherKind(kind)](e.Client(), "mixed-wf"))
				Expect(a.Unlock(owner)).To(Succeed())
			})

			It("does not let a shorter fixed re-entry cut the lease an outer fixed hold asked for", Label("slow"), func() {
				a := newLock(e.Client(), "fixed-fixed")
				owner := ctxowner.New(ctx)
				Expect(a.LockLease(owner, 20*time.Second)).To(Succeed())
				Expect(a.LockLease(owner, time.Second)).To(Succeed())
				Expect(a.Unlock(owner)).To(Succeed())
				stillHeld(a, owner, singleKeyKinds[otherKind(kind)](e.Client(), "fixed-fixed"))
				Expect(a.Unlock(owner)).To(Succeed())
			})
		})
	}
})

var _ = Describe("a hold lost behind its holder's back", func() {
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
			var (
				// a is A's lock; forcer force-unlocks it from another
				// Client; other is how another owner takes it.
				a, forcer, other rlock.Locker
				owner            context.Context
				lctx             context.Context
			)
			BeforeEach(func() {
				a = newLock(e.Client(), "unseen")
				forcer = newLock(e.Client(), "unseen")
				other = singleKeyKinds[otherKind(kind)](e.Client(), "unseen")
				owner = ctxowner.New(ctx)
				Expect(a.Lock(owner)).To(Succeed())
				var stop context.CancelFunc
				lctx, stop = rlock.LostContext(owner, a)
				DeferCleanup(stop)
			})
			expectLostSignalled := func() {
				GinkgoHelper()
				Eventually(lctx.Done()).Should(BeClosed(), "A's LostContext must end")
				Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
			}

			It("fails the re-entry with ErrLockLost when the lock was force-unlocked and taken and released by another owner meanwhile", func() {
				Expect(forcer.ForceUnlock(ctx)).To(BeTrue())
				b := ctxowner.New(ctx)
				Expect(other.Lock(b)).To(Succeed())
				Expect(other.Unlock(b)).To(Succeed())

				err := a.Lock(owner)
				Expect(err).To(MatchError(rlock.ErrLockLost), "the re-entry shows A's earlier hold is gone")
				expectLostSignalled()
				Expect(a.HoldCount(owner)).To(BeZero(), "the fresh hold the re-entry took was given back")
				Expect(a.IsLocked(ctx)).To(BeFalse())
				Expect(a.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))

				Expect(a.Lock(owner)).To(Succeed(), "a new acquisition after the loss is a fresh hold")
				Expect(a.HoldCount(owner)).To(Equal(1))
				Expect(a.Unlock(owner)).To(Succeed())
			})

			It("fails the re-entry with ErrLockLost after FLUSHALL", func() {
				Expect(e.Raw.FlushAll(ctx).Err()).To(Succeed())
				ok, err := a.TryLock(owner, 0, 0)
				Expect(ok).To(BeFalse())
				Expect(err).To(MatchError(rlock.ErrLockLost))
				expectLostSignalled()
				Expect(a.IsLocked(ctx)).To(BeFalse())
			})

			It("fails the re-entry at once with ErrLockLost, without waiting, when another owner holds the lock now", func() {
				Expect(forcer.ForceUnlock(ctx)).To(BeTrue())
				b := ctxowner.New(ctx)
				Expect(other.Lock(b)).To(Succeed())
				done := make(chan error, 1)
				go func() { done <- a.Lock(owner) }()
				var err error
				Eventually(done).WithTimeout(5 * time.Second).Should(Receive(&err))
				Expect(err).To(MatchError(rlock.ErrLockLost))
				expectLostSignalled()
				Expect(other.HoldCount(b)).To(Equal(1), "the other owner's hold is untouched")
				Expect(other.Unlock(b)).To(Succeed())
			})

			It("ends the LostContext when an Unlock finds the hold gone", func() {
				Expect(forcer.ForceUnlock(ctx)).To(BeTrue())
				Expect(a.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
				expectLostSignalled()
			})

			It("ends the LostContext when HoldCount finds fewer holds than the Client counted", func() {
				Expect(forcer.ForceUnlock(ctx)).To(BeTrue())
				Expect(a.HoldCount(owner)).To(BeZero())
				expectLostSignalled()
			})
		})
	}

	It("keeps the error usable with errors.Is and names the lock", func() {
		a := e.Client().NewLock("named")
		owner := ctxowner.New(ctx)
		Expect(a.Lock(owner)).To(Succeed())
		Expect(e.Raw.Del(ctx, "named").Err()).To(Succeed())
		err := a.Lock(owner)
		Expect(errors.Is(err, rlock.ErrLockLost)).To(BeTrue())
		Expect(err).To(MatchError(ContainSubstring(`lock "named"`)))
	})
})
