package rlock_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("non-reentrant FairLock", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	queueKey := func(name string) string { return "redisson_lock_queue:{" + name + "}" }
	timeoutKey := func(name string) string { return "redisson_lock_timeout:{" + name + "}" }
	queue := func(name string) []string { return e.Raw.LRange(ctx, queueKey(name), 0, -1).Val() }

	It("refuses its holder's re-entry from Lock and TryLock with ErrReentry, changing nothing and queueing nobody", func() {
		c := e.Client()
		lock := c.NewNonReentrantFairLock("nrf")
		owner := ctxowner.WithID(ctx, "7")
		Expect(lock.Lock(owner)).To(Succeed())
		for _, try := range []func() error{
			func() error { return lock.Lock(owner) },
			func() error { return lock.LockLease(owner, time.Minute) },
			func() error { _, err := lock.TryLock(owner, 0, 0); return err },
			func() error { _, err := lock.TryLock(owner, 200*time.Millisecond, 0); return err },
		} {
			Expect(try()).To(MatchError(rlock.ErrReentry))
		}
		Expect(e.Raw.HGetAll(ctx, "nrf").Val()).To(Equal(map[string]string{c.ID() + ":ctx:7": "1"}))
		Expect(e.Raw.Exists(ctx, queueKey("nrf"), timeoutKey("nrf")).Val()).To(BeZero(), "the refused holder is not queued")
		Expect(lock.HoldCount(owner)).To(Equal(1))
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		Expect(lock.IsLocked(ctx)).To(BeFalse())
	})

	It("grants waiters of several Clients the lock in the order they asked, in Redisson's fair queue", func() {
		const name, n = "nrf-fifo", 6
		lock := e.Client().NewNonReentrantFairLock(name)
		Expect(lock.Lock(ctx)).To(Succeed())
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		fields := make([]string, n)
		for i := range n {
			c := e.Client()
			owner := ctxowner.New(ctx)
			fields[i] = c.ID() + ":" + ctxowner.Of(owner)
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				l := c.NewNonReentrantFairLock(name)
				Expect(l.Lock(owner)).To(Succeed())
				Expect(l.Lock(owner)).To(MatchError(rlock.ErrReentry))
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				Expect(l.Unlock(owner)).To(Succeed())
			}()
			Eventually(func() []string { return queue(name) }).Should(Equal(fields[:i+1]))
			Eventually(func() int64 { return e.NumSub(spectest.LockChannel(name) + ":" + fields[i]) }).Should(BeEquivalentTo(1))
		}
		Expect(e.Raw.ZCard(ctx, timeoutKey(name)).Val()).To(BeEquivalentTo(n))
		Expect(lock.Unlock(ctx)).To(Succeed())
		spectest.WaitAll(&wg)
		Expect(order).To(Equal([]int{0, 1, 2, 3, 4, 5}))
		Expect(e.Raw.Exists(ctx, name, queueKey(name), timeoutKey(name)).Val()).To(BeZero())
	})

	It("shares the fair lock's layout: it excludes a FairLock of the same name and queues behind its waiters", func() {
		c := e.Client()
		fair := c.NewFairLock("nrf-shared")
		nrf := e.Client().NewNonReentrantFairLock("nrf-shared")
		holder := ctxowner.New(ctx)
		Expect(fair.Lock(holder)).To(Succeed())
		Expect(fair.Lock(holder)).To(Succeed(), "the fair lock itself re-enters")
		Expect(nrf.TryLock(ctxowner.New(ctx), 0, 0)).To(BeFalse())
		waiter := ctxowner.New(ctx)
		done := make(chan error, 1)
		go func() { done <- nrf.Lock(waiter) }()
		Eventually(func() []string { return queue("nrf-shared") }).Should(HaveLen(1))
		Expect(fair.Unlock(holder)).To(Succeed())
		Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		Expect(fair.Unlock(holder)).To(Succeed())
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
		Expect(nrf.IsHeldByCurrent(waiter)).To(BeTrue())
		Expect(nrf.Unlock(waiter)).To(Succeed())
	})

	It("leaves the queue when a wait is cancelled, and wakes the head on unlock and force unlock", func() {
		lock := e.Client().NewNonReentrantFairLock("nrf-cancel")
		Expect(lock.Lock(ctx)).To(Succeed())
		cctx, cancel := context.WithCancel(ctxowner.New(ctx))
		done := make(chan error, 1)
		go func() { done <- lock.Lock(cctx) }()
		Eventually(func() []string { return queue("nrf-cancel") }).Should(HaveLen(1))
		cancel()
		Eventually(done).Should(Receive(MatchError(context.Canceled)))
		Eventually(func() []string { return queue("nrf-cancel") }).Should(BeEmpty())

		got := make(chan error, 1)
		go func() { got <- e.Client().NewNonReentrantFairLock("nrf-cancel").Lock(ctxowner.New(ctx)) }()
		Eventually(func() []string { return queue("nrf-cancel") }).Should(HaveLen(1))
		Expect(lock.ForceUnlock(ctx)).To(BeTrue())
		Eventually(got).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
		Expect(lock.IsLocked(ctx)).To(BeTrue())
		Expect(lock.ForceUnlock(ctx)).To(BeTrue())
	})
})
