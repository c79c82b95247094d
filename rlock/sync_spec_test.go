package rlock_test

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("Semaphore", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("never lets more holders in than permits, across 2 Clients x 8 goroutines", func() {
		clients := []*rlock.Client{e.Client(), e.Client()}
		Expect(clients[0].NewSemaphore("sem-bound").TrySetPermits(ctx, 3)).To(BeTrue())
		var room occupancy
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				sem := clients[i%2].NewSemaphore("sem-bound")
				for range 15 {
					Expect(sem.Acquire(ctx, 1)).To(Succeed())
					room.enter()
					time.Sleep(time.Millisecond) // the critical section
					room.leave()
					Expect(sem.Release(ctx, 1)).To(Succeed())
				}
			}()
		}
		spectest.WaitAll(&wg)
		Expect(room.most.Load()).To(And(BeNumerically("<=", 3), BeNumerically(">=", 2)))
		Expect(clients[0].NewSemaphore("sem-bound").AvailablePermits(ctx)).To(Equal(3))
	})

	It("keeps Redisson's layout and wakes a waiter of another Client within a round trip of a release", func() {
		sem := e.Client().NewSemaphore("sem-wake")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		Expect(sem.TrySetPermits(ctx, 5)).To(BeFalse(), "set already")
		Expect(e.Raw.Get(ctx, "sem-wake").Val()).To(Equal("1"), "a string counter under the name")
		Expect(sem.Acquire(ctx, 1)).To(Succeed())

		sub := e.Raw.Subscribe(ctx, "redisson_sc:{sem-wake}")
		DeferCleanup(sub.Close)
		_, err := sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())
		got := make(chan time.Time, 1)
		go func() {
			defer GinkgoRecover()
			Expect(e.Client().NewSemaphore("sem-wake").Acquire(ctx, 1)).To(Succeed())
			got <- time.Now()
		}()
		Eventually(func() int64 { return e.NumSub("redisson_sc:{sem-wake}") }).Should(BeEquivalentTo(2))
		Consistently(got).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		released := time.Now()
		Expect(sem.Release(ctx, 1)).To(Succeed())
		var at time.Time
		Eventually(got).WithTimeout(2 * time.Second).Should(Receive(&at))
		Expect(at.Sub(released)).To(BeNumerically("<", 200*time.Millisecond))
		var msg *redis.Message
		Eventually(sub.Channel()).Should(Receive(&msg))
		Expect(msg.Payload).To(Equal("1"), "a release publishes the permits available")
	})

	It("takes several permits at once, times out, drains and adds", func() {
		sem := e.Client().NewSemaphore("sem-many")
		Expect(sem.AddPermits(ctx, 5)).To(Succeed())
		Expect(sem.TryAcquire(ctx, 3, 0)).To(BeTrue())
		Expect(sem.AvailablePermits(ctx)).To(Equal(2))
		start := time.Now()
		Expect(sem.TryAcquire(ctx, 3, 150*time.Millisecond)).To(BeFalse())
		Expect(time.Since(start)).To(BeNumerically(">=", 150*time.Millisecond))
		Expect(sem.TryAcquire(ctx, 3, -1)).To(BeFalse(), "a wait <= 0 is one attempt")
		Expect(sem.Release(ctx, 3)).To(Succeed())
		Expect(sem.DrainPermits(ctx)).To(Equal(5))
		Expect(sem.AvailablePermits(ctx)).To(BeZero())
		Expect(sem.AddPermits(ctx, -2)).To(Succeed())
		Expect(sem.AvailablePermits(ctx)).To(Equal(-2))
		Expect(sem.Acquire(ctx, 0)).To(Succeed(), "zero permits are taken at once, as in Redisson")
	})

	It("refuses negative counts where Redisson throws with ErrInvalidArgument", func() {
		sem := e.Client().NewSemaphore("sem-bad")
		Expect(sem.Acquire(ctx, -1)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(sem.Release(ctx, -1)).To(MatchError(rlock.ErrInvalidArgument))
		_, err := sem.ReleaseIfExists(ctx, -1)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = sem.TrySetPermitsTTL(ctx, 1, 0)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = sem.Expire(ctx, 500*time.Microsecond)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.Client().NewSemaphore("").Acquire(ctx, 1)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.Raw.DBSize(ctx).Val()).To(BeZero())
	})

	It("releases after the caller's ctx ended (Release is cleanup, as Unlock): nil, and the permits are back", func() {
		sem := e.Client().NewSemaphore("sem-ended")
		Expect(sem.TrySetPermits(ctx, 2)).To(BeTrue())
		rctx, cancel := context.WithCancel(ctx)
		Expect(sem.Acquire(rctx, 2)).To(Succeed())
		cancel() // the request ended; its deferred Release runs now
		Expect(sem.Release(rctx, 2)).To(Succeed())
		Expect(e.Raw.Get(ctx, "sem-ended").Val()).To(Equal("2"))
	})

	It("leaves nothing behind when a wait is cancelled", Label("slow"), func() {
		sem := e.Client().NewSemaphore("sem-cancel")
		Expect(sem.TrySetPermits(ctx, 0)).To(BeTrue())
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- sem.Acquire(cctx, 1) }()
		Eventually(func() int64 { return e.NumSub("redisson_sc:{sem-cancel}") }).Should(BeEquivalentTo(1))
		cancel()
		Eventually(done).Should(Receive(MatchError(context.Canceled)))
		Expect(sem.AvailablePermits(ctx)).To(BeZero())
		Expect(sem.Release(ctx, 1)).To(Succeed())
		Expect(sem.AvailablePermits(ctx)).To(Equal(1), "the cancelled waiter took nothing")
		Eventually(func() int64 { return e.NumSub("redisson_sc:{sem-cancel}") }).WithTimeout(3 * time.Second).Should(BeZero())
	})

	It("returns by its deadline while Redis hangs, and takes nothing", Label("fault"), func() {
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		c, rdb := spectest.ClientAndRedis(srv.Addr)
		sem := c.NewSemaphore("sem-hung")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		Expect(srv.Pause()).To(Succeed())
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = sem.Acquire(dctx, 1)
		Expect(time.Since(start)).To(BeNumerically("<", 500*time.Millisecond))
		Expect(err).To(MatchError(context.DeadlineExceeded))
		Expect(srv.Resume()).To(Succeed())
		// The abandoned acquire ran when Redis came back; its permit was
		// given back once its reply came.
		Eventually(func() string { return rdb.Get(ctx, "sem-hung").Val() }).WithTimeout(6 * time.Second).Should(Equal("1"))
	})
})

var _ = Describe("PermitExpirableSemaphore", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("hands out permits with ids in Redisson's layout, releases them by id and refuses unknown ones", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem")
		Expect(sem.TrySetPermits(ctx, 2)).To(BeTrue())
		a, err := sem.Acquire(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		b, ok, err := sem.TryAcquire(ctx, 0, time.Minute)
		Expect(ok, err).To(BeTrue())
		Expect(a).To(MatchRegexp(`^[0-9a-f]{32}$`), "the hex of 16 random bytes, as Redisson's ids")
		_, ok, err = sem.TryAcquire(ctx, 100*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse())

		raw, _ := hex.DecodeString(b)
		Expect(e.Raw.ZScore(ctx, "{psem}:timeout", string(raw)).Val()).To(BeNumerically(">", float64(time.Now().UnixMilli())))
		rawA, _ := hex.DecodeString(a)
		Expect(e.Raw.ZScore(ctx, "{psem}:timeout", string(rawA)).Val()).To(BeEquivalentTo(922337203685477), "a permit that never expires")
		Expect(e.Raw.Get(ctx, "psem").Val()).To(Equal("0"))

		Expect(sem.Release(ctx, a)).To(Succeed())
		Expect(sem.Release(ctx, a)).To(MatchError(rlock.ErrNotHeld), "already released")
		Expect(sem.Release(ctx, "00112233445566778899aabbccddeeff")).To(MatchError(rlock.ErrNotHeld))
		Expect(sem.Release(ctx, "not hex")).To(MatchError(rlock.ErrInvalidArgument))
		Expect(sem.AvailablePermits(ctx)).To(Equal(1))
		Expect(sem.Release(ctx, b)).To(Succeed())
	})

	It("releases after the caller's ctx ended (Release is cleanup, as Unlock): nil, and the permit is back", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-ended")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		rctx, cancel := context.WithCancel(ctx)
		id, err := sem.Acquire(rctx, 0)
		Expect(err).NotTo(HaveOccurred())
		cancel()
		Expect(sem.Release(rctx, id)).To(Succeed())
		Expect(e.Raw.Get(ctx, "psem-ended").Val()).To(Equal("1"))
		Expect(e.Raw.ZCard(ctx, "{psem-ended}:timeout").Val()).To(BeZero())
	})

	It("frees a permit at the end of its lease and wakes a waiter for it", Label("slow"), func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-lease")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		id, err := sem.Acquire(ctx, time.Second)
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		other, ok, err := e.Client().NewPermitExpirableSemaphore("psem-lease").TryAcquire(ctx, 5*time.Second, 0)
		Expect(ok, err).To(BeTrue(), "the waiter got the permit when the lease ran out")
		Expect(time.Since(start)).To(And(BeNumerically(">=", 800*time.Millisecond), BeNumerically("<", 3*time.Second)))
		Expect(sem.Release(ctx, id)).To(MatchError(rlock.ErrNotHeld), "an expired permit")
		Expect(sem.Release(ctx, other)).To(Succeed())
	})

	It("never lets more holders in than permits, across 2 Clients", func() {
		clients := []*rlock.Client{e.Client(), e.Client()}
		Expect(clients[0].NewPermitExpirableSemaphore("psem-bound").TrySetPermits(ctx, 2)).To(BeTrue())
		var room occupancy
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				sem := clients[i%2].NewPermitExpirableSemaphore("psem-bound")
				for range 10 {
					id, err := sem.Acquire(ctx, time.Minute)
					Expect(err).NotTo(HaveOccurred())
					room.enter()
					time.Sleep(time.Millisecond)
					room.leave()
					Expect(sem.Release(ctx, id)).To(Succeed())
				}
			}()
		}
		spectest.WaitAll(&wg)
		Expect(room.most.Load()).To(BeNumerically("<=", 2))
	})

	It("leaves nothing behind when a wait is cancelled", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-cancel")
		Expect(sem.TrySetPermits(ctx, 0)).To(BeTrue())
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := sem.Acquire(cctx, 0); done <- err }()
		Eventually(func() int64 { return e.NumSub("redisson_sc:{psem-cancel}") }).Should(BeEquivalentTo(1))
		cancel()
		Eventually(done).Should(Receive(MatchError(context.Canceled)))
		Expect(e.Raw.ZCard(ctx, "{psem-cancel}:timeout").Val()).To(BeZero())
		Expect(sem.AvailablePermits(ctx)).To(BeZero())
	})
})

var _ = Describe("CountDownLatch", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("wakes every awaiter of every Client on the last CountDown, within a round trip", func() {
		latch := e.Client().NewCountDownLatch("latch")
		Expect(latch.TrySetCount(ctx, 3)).To(BeTrue())
		Expect(latch.TrySetCount(ctx, 5)).To(BeFalse())
		Expect(latch.Count(ctx)).To(BeEquivalentTo(3))
		sub := e.Raw.Subscribe(ctx, "redisson_countdownlatch__channel__{latch}")
		DeferCleanup(sub.Close)
		_, err := sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())

		clients := []*rlock.Client{e.Client(), e.Client()}
		got := make(chan time.Time, 6)
		for i := range 6 {
			go func() {
				defer GinkgoRecover()
				Expect(clients[i%2].NewCountDownLatch("latch").Await(ctx)).To(Succeed())
				got <- time.Now()
			}()
		}
		Eventually(func() int64 { return e.NumSub("redisson_countdownlatch__channel__{latch}") }).Should(BeEquivalentTo(3))
		Expect(latch.CountDown(ctx)).To(Succeed())
		Expect(latch.CountDown(ctx)).To(Succeed())
		Consistently(got).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		last := time.Now()
		Expect(latch.CountDown(ctx)).To(Succeed())
		for range 6 {
			var at time.Time
			Eventually(got).WithTimeout(2 * time.Second).Should(Receive(&at))
			Expect(at.Sub(last)).To(BeNumerically("<", 200*time.Millisecond))
		}
		var msg *redis.Message
		Eventually(sub.Channel()).Should(Receive(&msg))
		Expect(msg.Payload).To(Equal("0"))
		Expect(e.Raw.Exists(ctx, "latch").Val()).To(BeZero(), "an open latch has no key")
		Expect(latch.Await(ctx)).To(Succeed(), "an open latch does not wait")
		Expect(latch.Count(ctx)).To(BeZero())
	})

	It("counts down after the caller's ctx ended (CountDown is cleanup, as Unlock)", func() {
		latch := e.Client().NewCountDownLatch("latch-ended")
		Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
		rctx, cancel := context.WithCancel(ctx)
		cancel()
		Expect(latch.CountDown(rctx)).To(Succeed())
		Expect(latch.Count(ctx)).To(BeZero())
	})

	It("ends an Await with ctx and refuses a negative count", func() {
		latch := e.Client().NewCountDownLatch("latch-ctx")
		Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
		dctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
		defer cancel()
		Expect(latch.Await(dctx)).To(MatchError(context.DeadlineExceeded))
		_, err := latch.TrySetCount(ctx, -1)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})
})

var _ = Describe("Do", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("runs fn holding the lock, under an owner of its own, and unlocks after", func() {
		lock := e.Client().NewLock("do")
		var inside bool
		err := rlock.Do(ctx, lock, 0, 0, func(fctx context.Context) error {
			_, ok := ctxowner.From(fctx)
			Expect(ok).To(BeTrue(), "Do attached an owner")
			inside, _ = lock.IsHeldByCurrent(fctx)
			Expect(lock.Lock(fctx)).To(Succeed(), "fn's own calls re-enter")
			return lock.Unlock(fctx)
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(inside).To(BeTrue())
		Expect(lock.IsLocked(ctx)).To(BeFalse())
	})

	It("returns ErrBusy when the lock is held elsewhere, and fn's error joined with the unlock's", func() {
		lock := e.Client().NewLock("do-busy")
		holder := ctxowner.New(ctx)
		Expect(lock.Lock(holder)).To(Succeed())
		called := false
		err := rlock.Do(ctx, lock, 100*time.Millisecond, 0, func(context.Context) error { called = true; return nil })
		Expect(err).To(MatchError(rlock.ErrBusy))
		Expect(called).To(BeFalse())
		Expect(lock.Unlock(holder)).To(Succeed())

		boom := errors.New("boom")
		err = rlock.Do(ctx, lock, 0, 0, func(fctx context.Context) error {
			_, _ = lock.ForceUnlock(context.Background()) // the lock is broken under fn
			return boom
		})
		Expect(err).To(And(MatchError(boom), MatchError(rlock.ErrNotHeld)))
	})

	It("ends fn's context when the lock is lost, and unlocks even after the caller's ctx ended", func() {
		lock := e.Client(rlock.WithWatchdogTimeout(time.Second)).NewLock("do-lost")
		err := rlock.Do(ctx, lock, 0, 0, func(fctx context.Context) error {
			_, _ = lock.ForceUnlock(context.Background())
			<-fctx.Done()
			return context.Cause(fctx)
		})
		Expect(err).To(MatchError(rlock.ErrLockLost))

		rctx, cancel := context.WithCancel(ctx)
		Expect(rlock.Do(rctx, lock, 0, 0, func(context.Context) error { cancel(); return nil })).To(Succeed())
		Expect(lock.IsLocked(ctx)).To(BeFalse())
		Expect(rlock.Do(ctx, nil, 0, 0, func(context.Context) error { return nil })).To(MatchError(rlock.ErrInvalidArgument))
	})
})

// occupancy counts the goroutines inside a critical section and remembers
// the most there were at once.
type occupancy struct{ inside, most atomic.Int32 }

func (o *occupancy) enter() {
	n := o.inside.Add(1)
	for m := o.most.Load(); n > m && !o.most.CompareAndSwap(m, n); m = o.most.Load() {
	}
}

func (o *occupancy) leave() { o.inside.Add(-1) }
