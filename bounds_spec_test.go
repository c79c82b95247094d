package goredisson_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Every call returns within its bound, whatever Redis and go-redis do; a
// holder learns of a loss before anyone else can take the lock; bad
// settings are refused or warned about.
var _ = Describe("Bounds", func() {
	var ctx context.Context
	BeforeEach(func() { ctx = context.Background() })

	Describe("Close while Redis hangs", Label("fault"), func() {
		for _, tc := range []struct {
			name string
			opts redis.Options
		}{
			{"with go-redis's default timeouts", redis.Options{}},
			{"with ReadTimeout -1 (no read timeout at all)", redis.Options{ReadTimeout: -1}},
		} {
			It("returns within its bound and ends every waiter and call in flight with ErrClosed at once, "+tc.name, Label("slow"), func() {
				before := gleak.Goroutines()
				srv, err := redistest.Start()
				Expect(err).NotTo(HaveOccurred())
				opts := tc.opts
				opts.Addr = srv.Addr
				rdb := redis.NewClient(&opts)
				other := redis.NewClient(&redis.Options{Addr: srv.Addr})
				DeferCleanup(func() {
					_ = srv.Resume()
					Expect(rdb.Close()).To(Succeed())
					Expect(other.Close()).To(Succeed())
					Expect(srv.Close()).To(Succeed())
					Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
				})
				holderClient, err := rlock.NewClient(other)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(holderClient.Close)
				c, err := rlock.NewClient(rdb)
				Expect(err).NotTo(HaveOccurred())

				Expect(holderClient.NewLock("close:held").Lock(ctx)).To(Succeed())
				mine := c.NewLock("close:mine")
				owner := ctxowner.New(ctx)
				Expect(mine.Lock(owner)).To(Succeed()) // a hold of the closing Client
				lost, stop := rlock.LostContext(owner, mine)
				DeferCleanup(stop)
				waiter := make(chan error, 1)
				go func() { waiter <- c.NewLock("close:held").Lock(ctxowner.New(ctx)) }()
				Eventually(func() int64 {
					return other.PubSubNumSub(ctx, spectest.LockChannel("close:held")).Val()[spectest.LockChannel("close:held")]
				}).
					Should(BeEquivalentTo(1), "the waiter is subscribed")

				Expect(srv.Pause()).To(Succeed())
				inflight := make(chan error, 1)
				go func() {
					_, err := c.NewLock("close:inflight").TryLock(ctxowner.New(ctx), 10*time.Second, 0)
					inflight <- err
				}()
				time.Sleep(50 * time.Millisecond) // let its script go out to the hung server

				closed := make(chan error, 1)
				go func() { closed <- c.Close() }()
				// Waiters, calls in flight and loss signals end at once;
				// Close itself then waits up to 1 s for the delete of its
				// registration, which the SIGSTOPped server never answers.
				Eventually(waiter).WithTimeout(150 * time.Millisecond).Should(Receive(MatchError(rlock.ErrClosed)))
				Eventually(inflight).WithTimeout(150 * time.Millisecond).Should(Receive(MatchError(rlock.ErrClosed)))
				Eventually(lost.Done()).WithTimeout(150 * time.Millisecond).Should(BeClosed())
				Eventually(closed).WithTimeout(2*time.Second).Should(Receive(BeNil()), "Close's bound: 1 s, plus noise")
				Expect(context.Cause(lost)).To(MatchError(rlock.ErrClosed))
				Expect(c.Close()).To(Succeed(), "a second Close is a no-op")
			})
		}
	})

	It("refuses a redis.Ring with ErrInvalidArgument, never a panic", func() {
		ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": spectest.Server().Addr, "b": spectest.Server().Addr}})
		DeferCleanup(ring.Close)
		_, err := rlock.NewClient(ring)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(err).To(MatchError(ContainSubstring("redis.Ring is not supported")))
	})

	Describe("Unlock after the caller's context ended", func() {
		var e *spectest.Env
		BeforeEach(func() { e = spectest.NewEnv() })
		for _, tc := range []struct {
			kind string
			lock func(c *rlock.Client) rlock.Locker
		}{
			{"Lock", func(c *rlock.Client) rlock.Locker { return c.NewLock("ended:lock") }},
			{"FairLock", func(c *rlock.Client) rlock.Locker { return c.NewFairLock("ended:fair") }},
			{"SpinLock", func(c *rlock.Client) rlock.Locker { return c.NewSpinLock("ended:spin") }},
			{"FencedLock", func(c *rlock.Client) rlock.Locker { return c.NewFencedLock("ended:fenced") }},
			{"ReadLock", func(c *rlock.Client) rlock.Locker { return c.NewReadWriteLock("ended:read").ReadLock() }},
			{"WriteLock", func(c *rlock.Client) rlock.Locker { return c.NewReadWriteLock("ended:write").WriteLock() }},
			{"MultiLock", func(c *rlock.Client) rlock.Locker {
				m, err := rlock.NewMultiLock(c.NewLock("ended:m1"), c.NewFairLock("ended:m2"))
				Expect(err).NotTo(HaveOccurred())
				return m
			}},
		} {
			It("releases the "+tc.kind+" and returns nil", func() {
				l := tc.lock(e.Client())
				rctx, cancel := context.WithCancel(ctxowner.New(ctx))
				Expect(l.Lock(rctx)).To(Succeed())
				cancel() // the request ended; the deferred Unlock runs now
				Expect(l.Unlock(rctx)).To(Succeed())
				Expect(l.IsLocked(ctx)).To(BeFalse(), "the lock is gone")
				Expect(l.Unlock(rctx)).To(MatchError(rlock.ErrNotHeld))
			})
		}
	})

	Describe("the loss signal", Label("fault"), func() {
		// holdThroughPause holds a lock with lease (<= 0: watchdog, 1 s),
		// hangs Redis for 2.5 s, and then lets another client take the lock
		// as soon as Redis answers. It returns when the holder's
		// LostContext ended and when the other client got the lock.
		holdThroughPause := func(lease time.Duration) (lostAt, takenAt time.Time) {
			srv, err := redistest.Start()
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(srv.Close)
			c, rdb := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(time.Second))
			lock := c.NewLock("loss")
			owner := ctxowner.New(ctx)
			Expect(lock.LockLease(owner, lease)).To(Succeed())
			lost, stop := rlock.LostContext(owner, lock)
			DeferCleanup(stop)
			lostCh := make(chan time.Time, 1)
			go func() { <-lost.Done(); lostCh <- time.Now() }()
			other, _ := spectest.ClientAndRedis(srv.Addr)
			otherLock := other.NewLock("loss")
			Expect(otherLock.TryLock(ctxowner.New(ctx), 0, 0)).To(BeFalse())
			Expect(rdb.Ping(ctx).Err()).To(Succeed())

			Expect(srv.Pause()).To(Succeed())
			time.Sleep(2500 * time.Millisecond) // the outage itself
			Expect(lost.Done()).To(BeClosed(), "the lease ran out during the outage: the holder is told while Redis still hangs, not when it answers again")
			Expect(srv.Resume()).To(Succeed())
			taken := ctxowner.New(ctx)
			Expect(otherLock.Lock(taken)).To(Succeed())
			takenAt = time.Now()
			Eventually(lostCh).Should(Receive(&lostAt))
			Expect(context.Cause(lost)).To(MatchError(rlock.ErrLockLost))
			Expect(otherLock.Unlock(taken)).To(Succeed())
			return lostAt, takenAt
		}

		It("ends a watchdog holder's LostContext before another client can take the lock while Redis hangs", func() {
			lostAt, takenAt := holdThroughPause(0)
			margin := takenAt.Sub(lostAt)
			AddReportEntry("loss signal margin, watchdog lease 1 s, Redis paused 2.5 s", margin)
			GinkgoWriter.Printf("watchdog lease: LostContext ended %v before another client got the lock\n", margin)
			Expect(margin).To(BeNumerically(">", 0))
		})

		It("ends a fixed lease's LostContext at its deadline, before another client can take the lock", func() {
			lostAt, takenAt := holdThroughPause(1500 * time.Millisecond)
			margin := takenAt.Sub(lostAt)
			AddReportEntry("loss signal margin, fixed lease 1.5 s, Redis paused 2.5 s", margin)
			GinkgoWriter.Printf("fixed lease: LostContext ended %v before another client got the lock\n", margin)
			Expect(margin).To(BeNumerically(">", 0))
		})

		// lostAtDeadline takes a 2 s fixed lease and returns how long after
		// the call LostContext ended.
		lostAtDeadline := func() time.Duration {
			e := spectest.NewEnv()
			lock := e.Client().NewLock("loss:fixed")
			owner := ctxowner.New(ctx)
			start := time.Now()
			Expect(lock.LockLease(owner, 2*time.Second)).To(Succeed())
			lost, stop := rlock.LostContext(owner, lock)
			DeferCleanup(stop)
			Eventually(lost.Done()).WithTimeout(5 * time.Second).WithPolling(time.Millisecond).Should(BeClosed())
			Expect(context.Cause(lost)).To(MatchError(rlock.ErrLockLost))
			return time.Since(start)
		}

		It("ends a fixed lease's LostContext at its deadline while Redis is fine", func() {
			// Not before the deadline (the lease less the drift allowance,
			// 1 % + 2 ms); after it by no more than a loaded machine's
			// scheduling delays (the strict bound is the timing spec below).
			Expect(lostAtDeadline()).To(And(BeNumerically(">=", 2*time.Second-22*time.Millisecond), BeNumerically("<", 3*time.Second)))
		})

		It("ends a fixed lease's LostContext before the lease itself ends, on a machine not loaded", Label("timing"), func() {
			Expect(lostAtDeadline()).To(And(BeNumerically(">=", 2*time.Second-22*time.Millisecond), BeNumerically("<", 2*time.Second)))
		})

		It("is cancelled at once for an owner that holds nothing", func() {
			e := spectest.NewEnv()
			lost, stop := rlock.LostContext(ctxowner.New(ctx), e.Client().NewLock("loss:none"))
			DeferCleanup(stop)
			Expect(lost.Done()).To(BeClosed())
			Expect(context.Cause(lost)).To(MatchError(rlock.ErrNotHeld))
		})
	})

	Describe("settings a client cannot keep", func() {
		var e *spectest.Env
		BeforeEach(func() { e = spectest.NewEnv() })

		DescribeTable("warns once, on a captured logger, when Redis may evict lock keys (every lock key has a TTL, so volatile-* policies too)",
			func(policy string) {
				srv, err := redistest.Start(redistest.WithArgs("--maxmemory", "64mb", "--maxmemory-policy", policy))
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(srv.Close)
				var logs syncBuffer
				logger := slog.New(slog.NewTextHandler(&logs, nil))
				spectest.ClientAndRedis(srv.Addr, rlock.WithLogger(logger))
				Eventually(logs.String).Should(And(ContainSubstring("maxmemory-policy is "+policy), ContainSubstring("noeviction")))
			},
			Entry(nil, "allkeys-lru"),
			Entry(nil, "volatile-lru"),
			Entry(nil, "volatile-ttl"),
			Entry(nil, "volatile-random"),
		)

		It("stays quiet under noeviction, the default", func() {
			var quiet syncBuffer
			e.Client(rlock.WithLogger(slog.New(slog.NewTextHandler(&quiet, nil))))
			Consistently(quiet.String).WithTimeout(300*time.Millisecond).ShouldNot(ContainSubstring("maxmemory-policy"), "noeviction, the default")
		})

		It("refuses a watchdog timeout below 1 s", func() {
			for _, d := range []time.Duration{3 * time.Millisecond, 300 * time.Millisecond, 999 * time.Millisecond} {
				_, err := rlock.NewClient(e.RDB(), rlock.WithWatchdogTimeout(d))
				Expect(err).To(MatchError(rlock.ErrInvalidArgument), "%v", d)
			}
			e.Client(rlock.WithWatchdogTimeout(time.Second)) // the floor itself is fine
		})

		It("makes TryLock with wait <= 0 one attempt, as Redisson's tryLock(-1, lease), and a wait below 1 ms too (truncated to 0 ms as Redisson's TimeUnit conversion)", func() {
			c := e.Client()
			lock := c.NewLock("wait-semantics")
			holder := ctxowner.New(ctx)
			Expect(lock.Lock(holder)).To(Succeed())
			for _, wait := range []time.Duration{0, -1, -time.Hour} {
				start := time.Now()
				ok, err := lock.TryLock(ctxowner.New(ctx), wait, 0)
				Expect(ok, err).To(BeFalse(), "wait %v", wait)
				Expect(time.Since(start)).To(BeNumerically("<", 500*time.Millisecond), "wait %v is one attempt, not a wait", wait)
			}
			for _, wait := range []time.Duration{1, 10, 999 * time.Microsecond} {
				ok, err := lock.TryLock(ctxowner.New(ctx), wait, 0)
				Expect(ok, err).To(BeFalse(), "wait %v is one attempt", wait)
			}
			Expect(lock.Unlock(holder)).To(Succeed())
		})
	})
})

// syncBuffer is a bytes.Buffer safe for a logger writing from one goroutine
// while the spec reads from another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
