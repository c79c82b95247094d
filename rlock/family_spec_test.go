package rlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// guardCounter runs perOwner read-modify-write increments of a Redis
// counter under locks made by newLock, from 8 owners on each of 2 Clients,
// and returns the final counter.
func guardCounter(e *spectest.Env, perOwner int, newLock func(c *rlock.Client) rlock.Locker) int {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16*perOwner)
	for _, c := range []*rlock.Client{e.Client(), e.Client()} {
		for range 8 {
			wg.Add(1)
			go func(lock rlock.Locker) {
				defer wg.Done()
				owner := ctxowner.New(ctx)
				for range perOwner {
					if err := lock.Lock(owner); err != nil {
						errs <- err
						return
					}
					v, err := e.Raw.Get(ctx, "counter").Int()
					if err != nil && !errors.Is(err, redis.Nil) {
						errs <- err
					}
					e.Raw.Set(ctx, "counter", v+1, 0)
					if err := lock.Unlock(owner); err != nil {
						errs <- err
					}
				}
			}(newLock(c))
		}
	}
	spectest.WaitAll(&wg)
	close(errs)
	Expect(errs).To(BeEmpty())
	n, _ := e.Raw.Get(ctx, "counter").Int()
	return n
}

var _ = Describe("SpinLock", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("keeps a counter exact across 2 Clients x 8 owners without any subscription", func() {
		n := guardCounter(e, 20, func(c *rlock.Client) rlock.Locker { return c.NewSpinLock("spin-counter") })
		Expect(n).To(Equal(320))
		calls := e.CommandCalls()
		Expect(calls).NotTo(HaveKey("subscribe"))
	})

	It("excludes an RLock of the same name and retries with bounded backoff", func() {
		holder := e.Client().NewLock("spin-shared")
		Expect(holder.Lock(ctx)).To(Succeed())
		spin := e.Client(rlock.WithSpinBackoff(time.Millisecond, 64*time.Millisecond)).NewSpinLock("spin-shared")
		Expect(e.Raw.ConfigResetStat(ctx).Err()).To(Succeed())
		owner := ctxowner.New(ctx)
		ok, err := spin.TryLock(owner, 500*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse())
		calls := e.CommandCalls()
		// 1+2+4+...+64 ms bounds, then 64 ms each, halved on average by the
		// jitter: a few dozen attempts at most, not one per millisecond.
		Expect(calls["evalsha"]).To(And(BeNumerically(">=", 5), BeNumerically("<=", 60)))
		Expect(e.NumSub(spectest.LockChannel("spin-shared"))).To(BeZero())

		done := make(chan error, 1)
		go func() { done <- spin.Lock(owner) }()
		Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		Expect(holder.Unlock(ctx)).To(Succeed())
		Eventually(done).WithTimeout(time.Second).Should(Receive(BeNil()))
		Expect(spin.HoldCount(owner)).To(Equal(1))
		Expect(spin.Lock(owner)).To(Succeed())
		Expect(spin.HoldCount(owner)).To(Equal(2))
		Expect(spin.Unlock(owner)).To(Succeed())
		Expect(spin.Unlock(owner)).To(Succeed())
	})

	It("publishes nothing on unlock or force unlock, as Redisson's spin lock", func() {
		sub := e.Raw.Subscribe(ctx, spectest.LockChannel("spin-quiet"))
		DeferCleanup(sub.Close)
		_, err := sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())
		spin := e.Client().NewSpinLock("spin-quiet")
		Expect(spin.Lock(ctx)).To(Succeed())
		Expect(spin.Unlock(ctx)).To(Succeed())
		Expect(spin.Lock(ctx)).To(Succeed())
		Expect(spin.ForceUnlock(ctx)).To(BeTrue())
		Expect(spin.IsLocked(ctx)).To(BeFalse())
		Consistently(sub.Channel()).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		// A plain Lock of the same name still announces its unlock.
		lock := e.Client().NewLock("spin-quiet")
		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(sub.Channel()).Should(Receive(HaveField("Payload", "0")))
	})

	It("ends a wait with ctx's error and rejects a bad backoff", func() {
		holder := e.Client().NewLock("spin-cancel")
		Expect(holder.Lock(ctx)).To(Succeed())
		dctx, cancel := context.WithTimeout(ctxowner.New(ctx), 200*time.Millisecond)
		defer cancel()
		Expect(e.Client().NewSpinLock("spin-cancel").Lock(dctx)).To(MatchError(context.DeadlineExceeded))
		Expect(e.Raw.HLen(ctx, "spin-cancel").Val()).To(BeEquivalentTo(1))
		Expect(holder.Unlock(ctx)).To(Succeed())

		_, err := rlock.NewClient(e.RDB(), rlock.WithSpinBackoff(0, time.Second))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = rlock.NewClient(e.RDB(), rlock.WithSpinBackoff(time.Second, time.Millisecond))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.Client().NewSpinLock("").Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
	})
})

var _ = Describe("FencedLock", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("issues strictly increasing tokens over 1,000 acquisitions from 2 Clients", func() {
		var (
			mu     sync.Mutex // only orders the appends; the lock orders the holders
			tokens []int64
			wg     sync.WaitGroup
		)
		for _, c := range []*rlock.Client{e.Client(), e.Client()} {
			for range 4 {
				wg.Add(1)
				go func(lock *rlock.FencedLock) {
					defer GinkgoRecover()
					defer wg.Done()
					owner := ctxowner.New(ctx)
					for range 125 {
						t, err := lock.LockToken(owner)
						Expect(err).NotTo(HaveOccurred())
						mu.Lock()
						tokens = append(tokens, t)
						mu.Unlock()
						Expect(lock.Unlock(owner)).To(Succeed())
					}
				}(c.NewFencedLock("fenced"))
			}
		}
		spectest.WaitAll(&wg)
		Expect(tokens).To(HaveLen(1000))
		// Appended inside the critical section: the order of holders.
		Expect(slices.IsSorted(tokens)).To(BeTrue())
		Expect(slices.Compact(slices.Clone(tokens))).To(HaveLen(1000), "no token twice")
		Expect(e.Client().NewFencedLock("fenced").Token(ctx)).To(Equal(tokens[999]))
	})

	It("counts re-entries, keeps Redisson's layout and excludes an RLock of the same name", func() {
		c := e.Client()
		lock := c.NewFencedLock("order:7")
		owner := ctxowner.WithID(ctx, "9")
		Expect(lock.Token(ctx)).To(BeZero())
		t1, err := lock.LockToken(owner)
		Expect(err).NotTo(HaveOccurred())
		t2, ok, err := lock.TryLockToken(owner, 0, 0)
		Expect(ok, err).To(BeTrue())
		Expect(t2).To(Equal(t1 + 1))
		Expect(e.Raw.HGetAll(ctx, "order:7").Val()).To(Equal(map[string]string{c.ID() + ":ctx:9": "2"}))
		Expect(e.Raw.Get(ctx, "redisson_lock_token:{order:7}").Val()).To(Equal("2"))

		ok, err = e.Client().NewLock("order:7").TryLock(ctxowner.New(ctx), 0, 0)
		Expect(ok, err).To(BeFalse())
		t, ok, err := e.Client().NewFencedLock("order:7").TryLockToken(ctxowner.New(ctx), 50*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse())
		Expect(t).To(BeZero())
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.Token(ctx)).To(BeEquivalentTo(2), "the counter outlives the lock")
	})

	It("lets a storage reject the write of a holder paused past its lease", func() {
		// The storage keeps the highest token it has seen and refuses older ones.
		var highest int64
		write := func(token int64) error {
			if token < highest {
				return errors.New("stale token")
			}
			highest = token
			return nil
		}
		c := e.Client()
		lock := c.NewFencedLock("fenced-storage")
		slow, fast := ctxowner.New(ctx), ctxowner.New(ctx)
		// A lease that outlasts a loaded machine's round trip: a reply read
		// past it would be ErrLockLost.
		t1, _, err := lock.TryLockToken(slow, 0, 500*time.Millisecond)
		Expect(err).NotTo(HaveOccurred())
		// slow pauses past its lease; fast takes the lock and writes.
		var t2 int64
		Eventually(func() bool {
			var ok bool
			t2, ok, _ = lock.TryLockToken(fast, 0, 0)
			return ok
		}).WithTimeout(5 * time.Second).Should(BeTrue())
		Expect(write(t2)).To(Succeed())
		Expect(write(t1)).To(MatchError("stale token"))
		Expect(lock.Unlock(fast)).To(Succeed())
	})

	It("signals the holder when the lock is lost", func() {
		lock := e.Client(rlock.WithWatchdogTimeout(time.Second)).NewFencedLock("fenced-lost")
		owner := ctxowner.New(ctx)
		_, err := lock.LockToken(owner)
		Expect(err).NotTo(HaveOccurred())
		lctx, stop := rlock.LostContext(owner, lock)
		DeferCleanup(stop)
		Expect(lock.ForceUnlock(ctx)).To(BeTrue())
		Eventually(lctx.Done()).WithTimeout(2 * time.Second).Should(BeClosed())
		Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
	})
})

var _ = Describe("non-reentrant Lock", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("refuses its holder's re-entry with ErrReentry, as Redisson's, and excludes a Lock of the same name", func() {
		c := e.Client()
		lock := c.NewNonReentrantLock("non-reentrant")
		owner := ctxowner.WithID(ctx, "4")
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock.TryLock(owner, 0, 0)).Error().To(MatchError(rlock.ErrReentry))
		Expect(lock.Lock(owner)).To(MatchError(rlock.ErrReentry), "no wait: a refusal")
		Expect(e.Raw.HGetAll(ctx, "non-reentrant").Val()).To(Equal(map[string]string{c.ID() + ":ctx:4": "1"}))
		Expect(e.Client().NewLock("non-reentrant").TryLock(ctxowner.New(ctx), 0, 0)).To(BeFalse())
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.IsLocked(ctx)).To(BeFalse())
	})
})
