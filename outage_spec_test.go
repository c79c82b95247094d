package goredisson_test

import (
	"context"
	"errors"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Specs that stop, pause or restart Redis run on a server of their own.
var _ = Describe("RLock when Redis is unavailable", Label("fault"), func() {
	var (
		srv *redistest.Server
		ctx context.Context
	)
	BeforeEach(func() {
		before := gleak.Goroutines()
		var err error
		srv, err = redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		ctx = context.Background()
		DeferCleanup(func() {
			Expect(srv.Close()).To(Succeed())
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
	})

	It("returns an error within the deadline when nothing listens", func() {
		port, err := redistest.FreePort()
		Expect(err).NotTo(HaveOccurred())
		c, _ := spectest.ClientAndRedis("127.0.0.1:" + strconv.Itoa(port))
		lock := c.NewLock("unreachable")

		dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = lock.Lock(dctx)
		Expect(time.Since(start)).To(BeNumerically("<", 700*time.Millisecond))
		Expect(err).To(MatchError(ContainSubstring("connection refused")), "the Redis error is returned, wrapped")
		Expect(err).To(MatchError(ContainSubstring(`lock "unreachable"`)))

		ok, err := lock.TryLock(ctx, 0, 0)
		Expect(ok).To(BeFalse())
		Expect(err).To(HaveOccurred())
		var lerr *rlock.Error
		Expect(err).To(BeAssignableToTypeOf(lerr))

		start = time.Now()
		ok, err = lock.TryLock(ctx, 300*time.Millisecond, 0)
		Expect(ok).To(BeFalse())
		Expect(err).To(MatchError(ContainSubstring("connection refused")))
		Expect(time.Since(start)).To(BeNumerically("<", 700*time.Millisecond))
	})

	Describe("the retry budget (WithRetry)", func() {
		unreachable := func(opts ...rlock.Option) *rlock.Client {
			port, err := redistest.FreePort()
			Expect(err).NotTo(HaveOccurred())
			c, _ := spectest.ClientAndRedis("127.0.0.1:"+strconv.Itoa(port), opts...)
			return c
		}
		// gaveUp expects call, made with a context that never ends, to
		// return the Redis error once the budget is spent.
		gaveUp := func(what string, call func() error) time.Duration {
			GinkgoHelper()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- call() }()
			var err error
			Eventually(done).WithTimeout(30*time.Second).Should(Receive(&err), "%s kept waiting with Redis unreachable", what)
			Expect(err).To(MatchError(ContainSubstring("connection refused")), what)
			Expect(err).To(MatchError(ContainSubstring("gave up after")), what)
			Expect(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)).To(BeFalse(), what)
			return time.Since(start)
		}

		It("ends Lock with Redis unreachable after Redisson's budget: 4 retries, 0.5-1 s then 1-2 s apart", Label("slow"), func() {
			lock := unreachable().NewLock("budget")
			took := gaveUp("Lock", func() error { return lock.Lock(context.Background()) })
			Expect(took).To(BeNumerically(">=", 3500*time.Millisecond), "four pauses of Redisson's EqualJitterDelay(1 s, 2 s)")
			GinkgoWriter.Printf("Lock gave up after %v\n", took)
		})

		It("ends the waits of every lock type and synchronizer the same way", func() {
			c := unreachable(rlock.WithRetry(2, 20*time.Millisecond))
			rw := c.NewReadWriteLock("budget-rw")
			for what, call := range map[string]func() error{
				"FairLock.Lock":   func() error { return c.NewFairLock("budget-fair").Lock(ctx) },
				"SpinLock.Lock":   func() error { return c.NewSpinLock("budget-spin").Lock(ctx) },
				"FencedLock.Lock": func() error { return c.NewFencedLock("budget-fenced").Lock(ctx) },
				"ReadLock.Lock":   func() error { return rw.ReadLock().Lock(ctx) },
				"WriteLock.Lock":  func() error { return rw.WriteLock().Lock(ctx) },
				"TryLock(1 min)": func() error {
					_, err := c.NewLock("budget-try").TryLock(ctx, time.Minute, 0)
					return err
				},
				"Semaphore.Acquire": func() error { return c.NewSemaphore("budget-sem").Acquire(ctx, 1) },
				"PermitExpirableSemaphore.Acquire": func() error {
					_, err := c.NewPermitExpirableSemaphore("budget-permits").Acquire(ctx, 0)
					return err
				},
				"CountDownLatch.Await": func() error { return c.NewCountDownLatch("budget-latch").Await(ctx) },
			} {
				gaveUp(what, call)
			}
		})

		It("keeps retrying until ctx ends with attempts < 0, and takes the lock once Redis is back", Label("slow"), func() {
			c, _ := spectest.ClientAndRedis(srv.Addr, rlock.WithRetry(-1, 0))
			Expect(srv.Stop()).To(Succeed())
			stopped := true
			DeferCleanup(func() {
				if stopped {
					_ = srv.Start()
				}
			})
			owner := ctxowner.New(ctx)
			done := make(chan error, 1)
			go func() { done <- c.NewLock("until-ctx").Lock(owner) }()
			Consistently(done).WithTimeout(8*time.Second).ShouldNot(Receive(), "longer than the default budget's 7 s")
			Expect(srv.Start()).To(Succeed())
			stopped = false
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
			Expect(c.NewLock("until-ctx").Unlock(owner)).To(Succeed())
		})
	})

	It("returns by the deadline while Redis hangs, and the abandoned attempt leaves no lock", func() {
		c, rdb := spectest.ClientAndRedis(srv.Addr)
		lock := c.NewLock("hung")
		owner := ctxowner.New(ctx)
		// A connection made before the pause: the script is sent, not just
		// the connection handshake.
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		Expect(srv.Pause()).To(Succeed())
		resumed := false
		DeferCleanup(func() {
			if !resumed {
				_ = srv.Resume()
			}
		})

		dctx, cancel := context.WithTimeout(owner, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		Expect(lock.Lock(dctx)).To(MatchError(context.DeadlineExceeded))
		Expect(time.Since(start)).To(BeNumerically("<", 500*time.Millisecond))

		// The acquire script is still queued in the paused server: once
		// Redis resumes it may run, and the settle must undo it.
		Expect(srv.Resume()).To(Succeed())
		resumed = true
		raw := srv.Client()
		DeferCleanup(raw.Close)
		Eventually(func() int64 { return raw.Exists(ctx, "hung").Val() }).WithTimeout(6 * time.Second).Should(BeZero())
		Consistently(func() int64 { return raw.Exists(ctx, "hung").Val() }).WithTimeout(300 * time.Millisecond).Should(BeZero())

		other := ctxowner.New(ctx)
		Expect(lock.Lock(other)).To(Succeed())
		Expect(lock.Unlock(other)).To(Succeed())
	})

	It("keeps a re-entered hold's count exact when the re-entry's outcome is unknown", func() {
		c, _ := spectest.ClientAndRedis(srv.Addr)
		lock := c.NewLock("reentry-unknown")
		owner := ctxowner.New(ctx)
		Expect(lock.Lock(owner)).To(Succeed())

		Expect(srv.Pause()).To(Succeed())
		dctx, cancel := context.WithTimeout(owner, 200*time.Millisecond)
		defer cancel()
		Expect(lock.Lock(dctx)).To(MatchError(context.DeadlineExceeded))
		Expect(srv.Resume()).To(Succeed())

		// The owner's next call waits for the settle, so it sees one hold.
		Expect(lock.HoldCount(owner)).To(Equal(1))
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.IsLocked(ctx)).To(BeFalse())
	})

	It("gives back a write hold of unknown outcome taken for a goroutine owner", func() {
		c, rdb := spectest.ClientAndRedis(srv.Addr)
		wl := c.NewReadWriteLock("rw-hung").WriteLock()
		// A connection made before the pause: the script is sent, not just
		// the connection handshake.
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		Expect(srv.Pause()).To(Succeed())
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond) // goroutine owner
		defer cancel()
		Expect(wl.Lock(dctx)).To(MatchError(context.DeadlineExceeded))
		Expect(srv.Resume()).To(Succeed())

		// The owner's next call waits for the settle: no hold is left.
		Expect(wl.HoldCount(ctx)).To(BeZero())
		raw := srv.Client()
		DeferCleanup(raw.Close)
		Expect(raw.Exists(ctx, "rw-hung").Val()).To(BeZero())
	})

	It("tells the holder of every lock type that its lock was lost while Redis hangs past the lease, before anyone else can take it", func() {
		c, rdb := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(time.Second))
		rw := c.NewReadWriteLock("hung-rw")
		rwRead := c.NewReadWriteLock("hung-rw-read")
		locks := map[string]rlock.Locker{
			"Lock":       c.NewLock("hung-lock"),
			"FairLock":   c.NewFairLock("hung-fair"),
			"SpinLock":   c.NewSpinLock("hung-spin"),
			"FencedLock": c.NewFencedLock("hung-fenced"),
			"WriteLock":  rw.WriteLock(),
			"ReadLock":   rwRead.ReadLock(),
			"fixed":      c.NewLock("hung-fixed"),
		}
		lost := map[string]context.Context{}
		for name, l := range locks {
			lease := time.Duration(0)
			if name == "fixed" {
				lease = 1500 * time.Millisecond
			}
			Expect(l.LockLease(ctx, lease)).To(Succeed(), name)
			lctx, stop := rlock.LostContext(ctx, l)
			DeferCleanup(stop)
			lost[name] = lctx
		}
		// Warm connections, so that nothing waits on a handshake; then hang
		// Redis for well over the leases.
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		Expect(srv.Pause()).To(Succeed())
		paused := true
		DeferCleanup(func() {
			if paused {
				_ = srv.Resume()
			}
		})
		for name, lctx := range lost {
			Eventually(lctx.Done()).WithTimeout(3*time.Second).Should(BeClosed(), "%s: signalled while Redis is still hung", name)
			Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost), name)
		}
		time.Sleep(500 * time.Millisecond) // the rest of the outage, not a wait for a result
		Expect(srv.Resume()).To(Succeed())
		paused = false
		for name, l := range locks {
			Eventually(func() (bool, error) { return l.IsHeldByCurrent(ctx) }).WithTimeout(3*time.Second).Should(BeFalse(), name)
		}
	})

	It("gives the lock to a waiter that waited across a Redis restart", func() {
		holderClient, _ := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(1500*time.Millisecond))
		waiterClient, _ := spectest.ClientAndRedis(srv.Addr)
		holder := holderClient.NewLock("restart")
		Expect(holder.Lock(ctx)).To(Succeed())
		lost, stop := rlock.LostContext(ctx, holder)
		DeferCleanup(stop)

		owner := ctxowner.New(ctx)
		done := make(chan error, 1)
		go func() { done <- waiterClient.NewLock("restart").Lock(owner) }()
		raw := srv.Client()
		Eventually(func() int64 {
			n, _ := raw.PubSubNumSub(ctx, spectest.LockChannel("restart")).Result()
			return n[spectest.LockChannel("restart")]
		}).Should(BeEquivalentTo(1))
		Expect(raw.Close()).To(Succeed())

		// Persistence is off: the restarted server has no lock at all and
		// nobody publishes an unlock. The waiter must notice without
		// sleeping the 30 s TTL it was told.
		Expect(srv.Restart()).To(Succeed())
		Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(waiterClient.NewLock("restart").IsHeldByCurrent(owner)).To(BeTrue())

		// The old holder's watchdog finds its hold gone (taken by another
		// owner) at its next renewal and says so.
		Eventually(lost.Done()).WithTimeout(2 * time.Second).Should(BeClosed())
		Expect(holder.Unlock(ctx)).To(MatchError(rlock.ErrNotHeld))
		Expect(waiterClient.NewLock("restart").Unlock(owner)).To(Succeed())
	})
})
