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

// Redisson's RExpirable on the locks and semaphores: expire, expireAt,
// expireIfSet/IfNotSet/IfGreater/IfLess, getExpireTime, clearExpire, on the
// keys Redisson's overrides name for each kind.

// expirable is what a lock and a semaphore share of RExpirable.
type expirable interface {
	Expire(ctx context.Context, ttl time.Duration) (bool, error)
	ExpireAt(ctx context.Context, t time.Time) (bool, error)
	ExpireIf(ctx context.Context, cond rlock.ExpireCond, t time.Time) (bool, error)
	ExpireTime(ctx context.Context) (time.Time, error)
	ClearExpire(ctx context.Context) (bool, error)
}

var (
	_ expirable = (*rlock.Lock)(nil)
	_ expirable = (*rlock.FencedLock)(nil)
	_ expirable = (*rlock.Semaphore)(nil)
	_ expirable = (*rlock.PermitExpirableSemaphore)(nil)
)

var _ = Describe("RExpirable on locks and semaphores", func() {
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

	// seed writes name and its would-be auxiliary keys, without expiry, and
	// returns every key it wrote.
	seed := func(keys ...string) {
		GinkgoHelper()
		for _, k := range keys {
			Expect(e.Raw.Set(ctx, k, "1", 0).Err()).To(Succeed())
		}
	}
	// withTTL returns the keys among keys that have an expiry.
	withTTL := func(keys ...string) []string {
		GinkgoHelper()
		out := []string{}
		for _, k := range keys {
			if e.Raw.PTTL(ctx, k).Val() > 0 {
				out = append(out, k)
			}
		}
		return out
	}

	DescribeTable("Expire, ExpireAt, ExpireIf and ClearExpire touch exactly the keys Redisson's overrides name",
		func(make func(c *rlock.Client) expirable, touched []string, untouched []string) {
			all := append(append([]string{}, touched...), untouched...)
			seed(all...)
			x := make(c)
			Expect(x.Expire(ctx, time.Minute)).To(BeTrue())
			Expect(withTTL(all...)).To(ConsistOf(touched))

			Expect(x.ClearExpire(ctx)).To(BeTrue())
			Expect(withTTL(all...)).To(BeEmpty())
			Expect(x.ClearExpire(ctx)).To(BeFalse(), "nothing had an expiry")

			at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
			Expect(x.ExpireAt(ctx, at)).To(BeTrue())
			Expect(withTTL(all...)).To(ConsistOf(touched))
			for _, k := range touched {
				Expect(e.Raw.PExpireTime(ctx, k).Val()).To(Equal(time.Duration(at.UnixMilli()) * time.Millisecond))
			}
			Expect(x.ExpireTime(ctx)).To(BeTemporally("==", at))

			Expect(x.ClearExpire(ctx)).To(BeTrue())
			Expect(x.ExpireIf(ctx, rlock.IfNotSet, at)).To(BeTrue())
			Expect(withTTL(all...)).To(ConsistOf(touched))
		},
		Entry("Lock: its name", func(c *rlock.Client) expirable { return c.NewLock("x-lock") },
			[]string{"x-lock"}, []string{"redisson_lock_token:{x-lock}", "redisson_lock_queue:{x-lock}"}),
		Entry("SpinLock: its name", func(c *rlock.Client) expirable { return c.NewSpinLock("x-spin") },
			[]string{"x-spin"}, []string{"redisson_lock_queue:{x-spin}"}),
		Entry("FencedLock: its name and token counter", func(c *rlock.Client) expirable { return c.NewFencedLock("x-fenced") },
			[]string{"x-fenced", "redisson_lock_token:{x-fenced}"}, []string{"redisson_lock_queue:{x-fenced}"}),
		Entry("FairLock: its name, queue and timeout set", func(c *rlock.Client) expirable { return c.NewFairLock("x-fair") },
			[]string{"x-fair", "redisson_lock_queue:{x-fair}", "redisson_lock_timeout:{x-fair}"}, []string{"redisson_lock_token:{x-fair}"}),
		Entry("NonReentrantFairLock: as FairLock", func(c *rlock.Client) expirable { return c.NewNonReentrantFairLock("x-nrfair") },
			[]string{"x-nrfair", "redisson_lock_queue:{x-nrfair}", "redisson_lock_timeout:{x-nrfair}"}, []string{}),
		Entry("a ReadWriteLock's side: its name", func(c *rlock.Client) expirable { return c.NewReadWriteLock("x-rw").ReadLock() },
			[]string{"x-rw"}, []string{"redisson_rwlock:{x-rw}"}),
		Entry("Semaphore: its name", func(c *rlock.Client) expirable { return c.NewSemaphore("x-sem") },
			[]string{"x-sem"}, []string{"x-sem:timeout"}),
		Entry("PermitExpirableSemaphore: its name and {name}:timeout", func(c *rlock.Client) expirable { return c.NewPermitExpirableSemaphore("x-pes") },
			[]string{"x-pes", "{x-pes}:timeout"}, []string{}),
	)

	It("sets a held lock's expiry whoever holds it, and reports false when there is no key", func() {
		lock := c.NewLock("x-held")
		Expect(lock.Expire(ctx, time.Minute)).To(BeFalse(), "no lock, no key")
		Expect(lock.ExpireTime(ctx)).To(BeZero())

		Expect(lock.LockLease(ctxowner.New(ctx), time.Hour)).To(Succeed())
		Expect(lock.Expire(ctx, 2*time.Minute)).To(BeTrue())
		Expect(lock.RemainTTL(ctx)).To(And(BeNumerically(">", time.Minute), BeNumerically("<=", 2*time.Minute)))
		Expect(lock.ExpireTime(ctx)).To(BeTemporally("~", time.Now().Add(2*time.Minute), 5*time.Second))

		Expect(lock.ClearExpire(ctx)).To(BeTrue())
		Expect(lock.RemainTTL(ctx)).To(Equal(rlock.NoExpiry))
		Expect(lock.ExpireTime(ctx)).To(BeZero(), "Redisson's -1: no expiry")
		_, _ = lock.ForceUnlock(ctx)
	})

	It("sets the expiry under each condition as Redis 7's PEXPIREAT NX, XX, GT, LT", func() {
		sem := c.NewSemaphore("x-cond")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		later, earlier := time.Now().Add(2*time.Hour), time.Now().Add(time.Hour)

		Expect(sem.ExpireIf(ctx, rlock.IfSet, later)).To(BeFalse(), "no expiry yet")
		Expect(sem.ExpireIf(ctx, rlock.IfGreater, later)).To(BeFalse(), "no expiry is forever: nothing is greater")
		Expect(sem.ExpireIf(ctx, rlock.IfNotSet, earlier)).To(BeTrue())
		Expect(sem.ExpireIf(ctx, rlock.IfNotSet, later)).To(BeFalse())
		Expect(sem.ExpireIf(ctx, rlock.IfLess, later)).To(BeFalse())
		Expect(sem.ExpireIf(ctx, rlock.IfGreater, later)).To(BeTrue())
		Expect(sem.ExpireTime(ctx)).To(BeTemporally("==", later.Truncate(time.Millisecond)))
		Expect(sem.ExpireIf(ctx, rlock.IfLess, earlier)).To(BeTrue())
		Expect(sem.ExpireIf(ctx, rlock.IfSet, later)).To(BeTrue())
		Expect(sem.ExpireTime(ctx)).To(BeTemporally("==", later.Truncate(time.Millisecond)))

		Expect(sem.ClearExpire(ctx)).To(BeTrue())
		Expect(sem.ExpireIf(ctx, rlock.IfLess, later)).To(BeTrue(), "no expiry is forever: anything is less")
	})

	It("deletes the keys of an expiry in the past, as PEXPIREAT does", func() {
		f := c.NewFencedLock("x-past")
		_, err := f.LockToken(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.ExpireAt(ctx, time.Now().Add(-time.Second))).To(BeTrue())
		Expect(e.Raw.Exists(ctx, "x-past", "redisson_lock_token:{x-past}").Val()).To(BeZero())
	})

	It("refuses an unknown condition, a zero time and a time to live below 1 ms", func() {
		lock := c.NewLock("x-bad")
		_, err := lock.ExpireIf(ctx, "ZZ", time.Now().Add(time.Hour))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = lock.ExpireAt(ctx, time.Time{})
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = lock.Expire(ctx, time.Microsecond)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		var re *rlock.Error
		Expect(errors.As(err, &re)).To(BeTrue())
		Expect(re.Op).To(Equal("expire"))
	})
})
