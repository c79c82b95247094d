package rlock_test

import (
	"context"
	"errors"
	"math"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Lua numbers are doubles: integers beyond 2^53 are not carried exactly.
// Counts and permits the scripts add up are limited to the safe integers,
// ±(2^53-1); the latch's count, only ever counted down by Redis's DECR, is
// carried exactly up to math.MaxInt64.
const maxSafe = 1<<53 - 1

var _ = Describe("counts past 2^53", func() {
	var (
		e   *spectest.Env
		c   *rlock.Client
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		c = e.Client()
		ctx = context.Background()
	})
	unsafe := []int{1 << 53, 1<<53 + 1, math.MaxInt64, math.MinInt64, -(1 << 53)}
	invalid := func(err error) {
		GinkgoHelper()
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, rlock.ErrInvalidArgument)).To(BeTrue(), err.Error())
	}

	It("refuses them in a Semaphore's TrySetPermits, AddPermits, Release and Acquire before sending anything, and stays readable", func() {
		sem := c.NewSemaphore("big:sem")
		for _, n := range unsafe {
			_, err := sem.TrySetPermits(ctx, n)
			invalid(err)
			_, err = sem.TrySetPermitsTTL(ctx, n, time.Minute)
			invalid(err)
			invalid(sem.AddPermits(ctx, n))
			if n > 0 {
				invalid(sem.Release(ctx, n))
				_, err = sem.ReleaseIfExists(ctx, n)
				invalid(err)
				invalid(sem.Acquire(ctx, n))
				_, err = sem.TryAcquire(ctx, n, 0)
				invalid(err)
			}
		}
		Expect(e.Raw.Exists(ctx, "big:sem").Val()).To(BeZero())
		Expect(sem.TrySetPermits(ctx, maxSafe)).To(BeTrue())
		Expect(sem.AvailablePermits(ctx)).To(Equal(maxSafe))
		Expect(sem.Acquire(ctx, maxSafe)).To(Succeed())
		Expect(sem.Release(ctx, maxSafe)).To(Succeed())
		Expect(sem.AvailablePermits(ctx)).To(Equal(maxSafe))
	})

	It("refuses a Semaphore's sum that would cross 2^53 in the script, without writing", func() {
		sem := c.NewSemaphore("big:sum")
		Expect(sem.TrySetPermits(ctx, maxSafe)).To(BeTrue())
		invalid(sem.Release(ctx, 1))
		invalid(sem.AddPermits(ctx, 1))
		_, err := sem.ReleaseIfExists(ctx, 1)
		invalid(err)
		Expect(e.Raw.Get(ctx, "big:sum").Val()).To(Equal("9007199254740991"))
		Expect(sem.AvailablePermits(ctx)).To(Equal(maxSafe))
		Expect(sem.Acquire(ctx, 1)).To(Succeed())
		Expect(sem.Release(ctx, 1)).To(Succeed())
		Expect(sem.AvailablePermits(ctx)).To(Equal(maxSafe))

		neg := c.NewSemaphore("big:neg")
		Expect(neg.TrySetPermits(ctx, -maxSafe)).To(BeTrue())
		invalid(neg.AddPermits(ctx, -1))
		Expect(neg.AvailablePermits(ctx)).To(Equal(-maxSafe))
		Expect(neg.AddPermits(ctx, maxSafe)).To(Succeed())
		Expect(neg.AvailablePermits(ctx)).To(BeZero())
	})

	It("refuses them in a PermitExpirableSemaphore, and sums that would cross 2^53, and stays readable", func() {
		pes := c.NewPermitExpirableSemaphore("big:pes")
		for _, n := range unsafe {
			_, err := pes.TrySetPermits(ctx, n)
			invalid(err)
			invalid(pes.SetPermits(ctx, n))
			invalid(pes.AddPermits(ctx, n))
			if n > 0 {
				_, err = pes.AcquireN(ctx, n, time.Minute)
				invalid(err)
			}
		}
		Expect(e.Raw.Exists(ctx, "big:pes").Val()).To(BeZero())
		Expect(pes.TrySetPermits(ctx, maxSafe)).To(BeTrue())
		Expect(pes.AvailablePermits(ctx)).To(Equal(maxSafe))
		invalid(pes.AddPermits(ctx, 1))
		id, err := pes.Acquire(ctx, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(pes.Permits(ctx)).To(Equal(maxSafe))
		invalid(pes.SetPermits(ctx, maxSafe+1))
		Expect(pes.Release(ctx, id)).To(Succeed())
		Expect(pes.AvailablePermits(ctx)).To(Equal(maxSafe))
		Expect(pes.Permits(ctx)).To(Equal(maxSafe))
	})

	It("carries a CountDownLatch's count exactly up to MaxInt64 and refuses MinInt64", func() {
		for _, n := range []int64{1 << 53, 1<<53 + 1, math.MaxInt64} {
			l := c.NewCountDownLatch("big:latch")
			Expect(l.TrySetCount(ctx, n)).To(BeTrue())
			Expect(l.Count(ctx)).To(Equal(n))
			Expect(l.CountDown(ctx)).To(Succeed())
			Expect(l.Count(ctx)).To(Equal(n - 1))
			Expect(l.CountDown(ctx)).To(Succeed())
			Expect(l.Count(ctx)).To(Equal(n - 2))
			Expect(l.Delete(ctx)).To(BeTrue())
		}
		l := c.NewCountDownLatch("big:latch")
		_, err := l.TrySetCount(ctx, math.MinInt64)
		invalid(err)
	})
})
