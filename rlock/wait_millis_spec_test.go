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

// Redisson converts a wait with TimeUnit.toMillis (and Duration.toMillis):
// a wait in (0, 1ms) is 0, one attempt. A computed wait (a deadline's
// remainder) lands there now and then; it is one attempt here too.
var _ = Describe("a wait below 1ms, truncated to whole milliseconds as Redisson's TimeUnit conversion does", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})
	subMillis := []time.Duration{1, 10 * time.Nanosecond, 500 * time.Microsecond, 999 * time.Microsecond}

	for kind, newLock := range holdKinds {
		It("makes TryLock on a "+kind+" one attempt: taken when free, false when held, never ErrInvalidArgument", func() {
			c := e.Client()
			for _, wait := range subMillis {
				lock := newLock(c, "wait-millis-"+kind)
				owner := ctxowner.New(ctx)
				ok, err := lock.TryLock(owner, wait, 0)
				Expect(err).NotTo(HaveOccurred(), "wait %v", wait)
				Expect(ok).To(BeTrue(), "a free lock, wait %v", wait)
				start := time.Now()
				ok, err = holdRival(kind, c, "wait-millis-"+kind).TryLock(ctxowner.New(ctx), wait, 0)
				Expect(err).NotTo(HaveOccurred(), "wait %v", wait)
				Expect(ok).To(BeFalse(), "a held lock, wait %v", wait)
				Expect(time.Since(start)).To(BeNumerically("<", 500*time.Millisecond), "one attempt, wait %v", wait)
				Expect(lock.Unlock(owner)).To(Succeed())
			}
			_, err := newLock(c, "wait-millis-"+kind).TryLock(ctx, time.Second, 500*time.Microsecond)
			Expect(err).To(MatchError(rlock.ErrInvalidArgument), "a lease below 1ms is still refused")
		})
	}

	It("makes the synchronizers' waits one attempt, and keeps refusing a permit lease below 1ms", func() {
		c := e.Client()
		sem := c.NewSemaphore("wait-millis-sem")
		psem := c.NewPermitExpirableSemaphore("wait-millis-psem")
		latch := c.NewCountDownLatch("wait-millis-latch")
		Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
		for _, wait := range subMillis {
			Expect(sem.TryAcquire(ctx, 1, wait)).To(BeFalse(), "no permits, wait %v", wait)
			_, ok, err := psem.TryAcquire(ctx, wait, time.Minute)
			Expect(ok, err).To(BeFalse(), "no permits, wait %v", wait)
			_, ok, err = psem.TryAcquireN(ctx, 2, wait, time.Minute)
			Expect(ok, err).To(BeFalse(), "no permits, wait %v", wait)
			Expect(latch.TryAwait(ctx, wait)).To(BeFalse(), "count 1, wait %v", wait)
		}
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		Expect(sem.TryAcquire(ctx, 1, 500*time.Microsecond)).To(BeTrue())
		Expect(psem.TrySetPermits(ctx, 1)).To(BeTrue())
		id, ok, err := psem.TryAcquire(ctx, 500*time.Microsecond, time.Minute)
		Expect(ok, err).To(BeTrue())
		Expect(psem.Release(ctx, id)).To(Succeed())
		_, _, err = psem.TryAcquire(ctx, 500*time.Microsecond, 500*time.Microsecond)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument), "a lease below 1ms is still refused")
	})
})
