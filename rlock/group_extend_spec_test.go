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

var _ = Describe("Extend on MultiLock and RedLock", func() {
	var ctx context.Context
	BeforeEach(func() {
		spectest.NewEnv()
		ctx = ctxowner.New(context.Background())
	})

	It("moves every lock's fixed lease of a MultiLock, and fails when one is not held", func() {
		c := spectest.ClientOn(spectest.Server().Addr)
		a, b := c.NewLock(spectest.UniqueName("mx-a")), c.NewLock(spectest.UniqueName("mx-b"))
		m, err := rlock.NewMultiLock(a, b)
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Extend(ctx, time.Minute)).To(MatchError(rlock.ErrNotHeld), "nothing held")
		Expect(m.LockLease(ctx, 2*time.Second)).To(Succeed())
		Expect(m.Extend(ctx, time.Minute)).To(Succeed())
		for _, l := range []*rlock.Lock{a, b} {
			Expect(l.RemainTTL(ctx)).To(BeNumerically(">", 50*time.Second))
		}
		Expect(m.Extend(ctx, 0)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(b.ForceUnlock(ctx)).To(BeTrue())
		Expect(m.Extend(ctx, time.Minute)).To(MatchError(rlock.ErrNotHeld), "one lock lost: the group is not held")
		Expect(a.Unlock(ctx)).To(Succeed())
	})

	It("refuses a watchdog-managed hold", func() {
		c := spectest.ClientOn(spectest.Server().Addr)
		m, err := rlock.NewMultiLock(c.NewLock(spectest.UniqueName("mw-a")), c.NewLock(spectest.UniqueName("mw-b")))
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Lock(ctx)).To(Succeed())
		Expect(m.Extend(ctx, time.Minute)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(m.Unlock(ctx)).To(Succeed())
	})

	It("moves a RedLock's leases on a quorum of masters", func() {
		others := spectest.StartServers(2)
		name := spectest.UniqueName("rx")
		locks := []*rlock.Lock{spectest.ClientOn(spectest.Server().Addr).NewLock(name)}
		for _, s := range others {
			locks = append(locks, spectest.ClientOn(s.Addr).NewLock(name))
		}
		r, err := rlock.NewRedLock(locks[0], locks[1], locks[2])
		Expect(err).NotTo(HaveOccurred())
		Expect(r.LockLease(ctx, 2*time.Second)).To(Succeed())
		Expect(locks[2].ForceUnlock(ctx)).To(BeTrue(), "one master forgot it")
		Expect(r.Extend(ctx, time.Minute)).To(Succeed(), "2 of 3 is a quorum")
		Expect(locks[0].RemainTTL(ctx)).To(BeNumerically(">", 50*time.Second))
		Expect(locks[1].RemainTTL(ctx)).To(BeNumerically(">", 50*time.Second))
		Expect(locks[1].ForceUnlock(ctx)).To(BeTrue())
		Expect(r.Extend(ctx, time.Minute)).NotTo(Succeed(), "1 of 3 is not")
		Expect(r.Unlock(ctx)).To(Succeed())
	})
})
