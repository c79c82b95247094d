package rlocktest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

func TestRlocktest(t *testing.T) {
	suite.Run(t, "rlocktest")
}

var _ = Describe("rlocktest", func() {
	var (
		srv    *rlocktest.Server
		client *rlock.Client
		ctx    = context.Background()
	)
	BeforeEach(func() {
		srv = rlocktest.StartForSpec()
		rdb := srv.Client()
		DeferCleanup(rdb.Close)
		var err error
		client, err = rlock.NewClient(rdb)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(client.Close)
	})

	It("starts a private redis-server and stops it by pid at cleanup", Label("slow"), func() {
		Expect(srv.Pid()).To(BeNumerically(">", 0))
		rdb := srv.Client()
		defer rdb.Close()
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		Expect(srv.Close()).To(Succeed())
		Expect(srv.Pid()).To(BeZero())
		Expect(rdb.Ping(ctx).Err()).To(HaveOccurred())
	})

	It("matches a held, reentered lock and shows its fields and TTL when a matcher fails", func() {
		lock := client.NewLock("orders:42")
		Expect(lock).NotTo(rlocktest.BeLocked())
		Expect(lock).To(rlocktest.HaveTotalHoldCount(0))

		owner := ctxowner.WithID(ctx, "worker-1")
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock).To(rlocktest.BeLocked())
		Expect(lock).To(rlocktest.BeHeldBy(owner))
		Expect(lock).NotTo(rlocktest.BeHeldBy(ctxowner.WithID(ctx, "worker-2")))
		Expect(lock).To(rlocktest.HaveTotalHoldCount(2))
		Expect(lock).To(rlocktest.HaveTTLWithin(30 * time.Second))
		Expect(lock).NotTo(rlocktest.HaveTTLWithin(time.Second))

		m := rlocktest.HaveTotalHoldCount(3)
		Expect(m.Match(lock)).To(BeFalse())
		msg := m.FailureMessage(lock)
		Expect(msg).To(ContainSubstring(`Expected lock "orders:42" to have a total hold count (all holders) of 3, but all holders hold it 2 times`))
		Expect(msg).To(ContainSubstring(`"` + client.ID() + `:ctx:worker-1": 2`))
		Expect(msg).To(MatchRegexp(`TTL (29(\.\d+)?|30)s`), "a TTL read at once rounds to 30s exactly")

		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(Succeed())
		m = rlocktest.HaveTTLWithin(time.Minute)
		Expect(m.Match(lock)).To(BeFalse())
		Expect(m.FailureMessage(lock)).To(ContainSubstring("it is not held"))
		Expect(m.FailureMessage(lock)).To(ContainSubstring("state in Redis: none, hash fields {}, no key"))
	})

	It("counts the holds of every reader of a read-write lock", func() {
		rw := client.NewReadWriteLock("catalog")
		for _, id := range []string{"r1", "r2", "r3"} {
			Expect(rw.ReadLock().Lock(ctxowner.WithID(ctx, id))).To(Succeed())
		}
		Expect(rw.ReadLock()).To(rlocktest.HaveTotalHoldCount(3))
		Expect(rw.WriteLock()).NotTo(rlocktest.BeLocked(), "the write side is locked only in write mode")
		m := rlocktest.BeLocked()
		Expect(m.Match(rw.ReadLock())).To(BeTrue())
		Expect(m.NegatedFailureMessage(rw.ReadLock())).To(ContainSubstring("read-write, mode read"))
	})

	It("shows a fenced lock's last token", func() {
		fenced := client.NewFencedLock("ledger")
		token, err := fenced.LockToken(ctx)
		Expect(err).NotTo(HaveOccurred())
		info, err := rlock.Inspect(ctx, fenced)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Kind).To(Equal(inspect.KindFenced))
		Expect(info.Token).To(Equal(token))
		Expect(info.String()).To(ContainSubstring(fmt.Sprintf("token %d", token)))
	})

	It("names the hash field it expected when BeHeldBy fails, next to the fields that hold the lock", func() {
		lock := client.NewLock("orders:43")
		holder, other := ctxowner.WithID(ctx, "worker-1"), ctxowner.WithID(ctx, "worker-2")
		Expect(lock.Lock(holder)).To(Succeed())
		m := rlocktest.BeHeldBy(other)
		Expect(m.Match(lock)).To(BeFalse())
		msg := m.FailureMessage(lock)
		Expect(msg).To(ContainSubstring(`Expected lock "orders:43" to be held by field "` + client.ID() + `:ctx:worker-2", but IsHeldByCurrent returned false`))
		Expect(msg).To(ContainSubstring(`hash fields {"` + client.ID() + `:ctx:worker-1": 1}`))
		m = rlocktest.BeHeldBy(holder)
		Expect(m.Match(lock)).To(BeTrue())
		Expect(m.NegatedFailureMessage(lock)).To(ContainSubstring(`not to be held by field "` + client.ID() + `:ctx:worker-1"`))

		w := client.NewReadWriteLock("orders:44").WriteLock()
		Expect(w.Lock(holder)).To(Succeed())
		m = rlocktest.BeHeldBy(other)
		Expect(m.Match(w)).To(BeFalse())
		Expect(m.FailureMessage(w)).To(ContainSubstring(`to be held by field "` + client.ID() + `:ctx:worker-2:write"`))

		multi, err := rlock.NewMultiLock(client.NewLock("a"), client.NewLock("b"))
		Expect(err).NotTo(HaveOccurred())
		m = rlocktest.BeHeldBy(other)
		Expect(m.Match(multi)).To(BeFalse())
		Expect(m.FailureMessage(multi)).To(ContainSubstring(`to be held by owner "ctx:worker-2"`))
	})

	It("matches a semaphore's available permits, a permit-expirable semaphore's available and acquired permits, and a latch's count", Label("slow"), func() {
		sem := client.NewSemaphore("jobs")
		Expect(sem.TrySetPermits(ctx, 3)).To(BeTrue())
		Expect(sem.Acquire(ctx, 2)).To(Succeed())
		Expect(sem).To(rlocktest.HaveAvailablePermits(1))
		m := rlocktest.HaveAvailablePermits(3)
		Expect(m.Match(sem)).To(BeFalse())
		Expect(m.FailureMessage(sem)).To(Equal(`Expected semaphore "jobs" to have 3 available permits, but it has 1`))

		psem := client.NewPermitExpirableSemaphore("leases")
		Expect(psem.TrySetPermits(ctx, 3)).To(BeTrue())
		// A lease of 2 s, not less: a loaded machine must still see both
		// permits acquired before it runs out.
		_, err := psem.Acquire(ctx, 2*time.Second)
		Expect(err).NotTo(HaveOccurred())
		_, err = psem.Acquire(ctx, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(psem).To(rlocktest.HaveAvailablePermits(1))
		Expect(psem).To(rlocktest.HaveAcquiredPermits(2))
		Eventually(psem).WithTimeout(10*time.Second).Should(rlocktest.HaveAcquiredPermits(1), "a lease ran out")
		m = rlocktest.HaveAcquiredPermits(2)
		Expect(m.Match(psem)).To(BeFalse())
		Expect(m.FailureMessage(psem)).To(Equal(`Expected permit-expirable semaphore "leases" to have 2 acquired permits, but it has 1 (2 available, 3 permits in all)`))
		Expect(m.NegatedFailureMessage(psem)).To(HavePrefix(`Expected permit-expirable semaphore "leases" not to have 2 acquired permits`))

		latch := client.NewCountDownLatch("batch")
		Expect(latch).To(rlocktest.HaveCount(0))
		Expect(latch.TrySetCount(ctx, 2)).To(BeTrue())
		Expect(latch.CountDown(ctx)).To(Succeed())
		Expect(latch).To(rlocktest.HaveCount(1))
		m = rlocktest.HaveCount(0)
		Expect(m.Match(latch)).To(BeFalse())
		Expect(m.FailureMessage(latch)).To(Equal(`Expected count-down latch "batch" to have count 0, but it has 1`))

		_, err = rlocktest.HaveCount(0).Match(sem)
		Expect(err).To(MatchError(ContainSubstring("expected an *rlock.CountDownLatch, got *rlock.Semaphore")))
		_, err = rlocktest.HaveAcquiredPermits(0).Match(sem)
		Expect(err).To(MatchError(ContainSubstring("expected an *rlock.PermitExpirableSemaphore")))
		_, err = rlocktest.HaveAvailablePermits(0).Match(client.NewLock("x"))
		Expect(err).To(MatchError(ContainSubstring("expected an *rlock.Semaphore or *rlock.PermitExpirableSemaphore, got *rlock.Lock")))
	})

	It("rejects what is not a lock with a clear error", func() {
		_, err := rlocktest.BeLocked().Match("orders:42")
		Expect(err).To(MatchError(ContainSubstring("expected an rlock.Locker, got string")))
		multi, err := rlock.NewMultiLock(client.NewLock("a"), client.NewLock("b"))
		Expect(err).NotTo(HaveOccurred())
		_, err = rlocktest.HaveTotalHoldCount(1).Match(multi)
		Expect(err).To(MatchError(ContainSubstring("needs a single-key lock")))
	})
})
