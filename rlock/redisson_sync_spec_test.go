package rlock_test

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Redisson's own synchronizer tests (redisson/src/test/java/org/redisson at
// 66863978b: RedissonSemaphoreTest, RedissonPermitExpirableSemaphoreTest,
// RedissonCountDownLatchTest, RedissonCountDownLatchConcurrentTest and the
// semaphore part of RedissonLockHeavyTest), ported one spec per Java test
// and named after it. Java's threads are goroutines, a Redisson instance is
// a Client, an assertion that the Java test runs on another thread is
// checked on the spec's goroutine once that one is done. Where a Java test
// bounds a wake-up from above (the latency of a message), the bound is
// widened for a loaded 2-core machine and the comment says Redisson's; the
// lower bounds, which are about semantics, are Redisson's.

// javaThread runs f on a goroutine, as a Java test starts a thread, and
// returns a channel closed when it returned (Thread.join).
func javaThread(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		f()
	}()
	return done
}

// joined waits for a javaThread, failing the spec after limit.
func joined(done <-chan struct{}, limit time.Duration) {
	GinkgoHelper()
	Eventually(done).WithTimeout(limit).Should(BeClosed())
}

// concurrently runs task iterations times on up to 2 x GOMAXPROCS
// goroutines (BaseConcurrentTest's fixed thread pool) and waits at most
// three minutes, as the Java test does; task gets the iteration's number.
func concurrently(iterations int, task func(i int)) {
	GinkgoHelper()
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(iterations, 2*runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < iterations; i = int(next.Add(1)) - 1 {
				task(i)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	Eventually(done).WithTimeout(3 * time.Minute).Should(BeClosed())
}

// clients returns n Clients, each on its own go-redis client
// (testMultiInstanceConcurrency's Redisson instances).
func clients(e *spectest.Env, n int) []*rlock.Client {
	out := make([]*rlock.Client, n)
	for i := range out {
		out[i] = e.Client()
	}
	return out
}

var _ = Describe("Redisson's synchronizer tests, ported", func() {
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

	Describe("RedissonSemaphoreTest", func() {
		It("testAcquireAfterAddPermits", Label("slow"), func() {
			s := c.NewSemaphore("test")
			l := make(chan struct{})
			t1 := javaThread(func() {
				Expect(s.AddPermits(ctx, 1)).To(Succeed())
				Expect(s.Acquire(ctx, 2)).To(Succeed())
				close(l)
			})
			Consistently(l).WithTimeout(time.Second).ShouldNot(BeClosed()) // t1.join(1000)
			Consistently(l).WithTimeout(time.Second).ShouldNot(BeClosed())
			Expect(s.Acquire(ctx, 1)).To(Succeed())
			time.Sleep(time.Second)
			Expect(s.Release(ctx, 1)).To(Succeed())
			Consistently(l).WithTimeout(time.Second).ShouldNot(BeClosed())
			Expect(s.AddPermits(ctx, 1)).To(Succeed())
			Eventually(l).WithTimeout(time.Second).Should(BeClosed())
			joined(t1, time.Second)
		})

		It("testZero", func() {
			s := c.NewSemaphore("test")
			Expect(s.TryAcquire(ctx, 0, 10*time.Minute)).To(BeTrue())
			Expect(s.Release(ctx, 0)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(BeZero())
		})

		It("testAcquireWithoutSetPermits", func() {
			s := c.NewSemaphore("test")
			Expect(s.Release(ctx, 1)).To(Succeed())
			Expect(s.Release(ctx, 1)).To(Succeed())
			Expect(s.Acquire(ctx, 2)).To(Succeed())
		})

		It("testTrySetPermits", Label("slow"), func() {
			s := c.NewSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			Expect(s.AvailablePermits(ctx)).To(Equal(10))
			Expect(s.TrySetPermits(ctx, 15)).To(BeFalse())
			Expect(s.AvailablePermits(ctx)).To(Equal(10))
			Expect(s.Delete(ctx)).To(BeTrue())

			Expect(s.IsExists(ctx)).To(BeFalse())
			set := time.Now()
			Expect(s.TrySetPermitsTTL(ctx, 1, 2*time.Second)).To(BeTrue())
			// Redisson's test sleeps 1 s and 1 s again and reads at each; on
			// a loaded machine a read 2.0 s after the set can still find the
			// key, so: there now, gone within the time to live plus slack,
			// and not gone before it (the expiry is Redis's, not ours).
			Expect(s.AvailablePermits(ctx)).To(Equal(1))
			Eventually(func() (int, error) { return s.AvailablePermits(ctx) }).
				WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).Should(BeZero())
			Expect(time.Since(set)).To(BeNumerically(">=", 1900*time.Millisecond), "expired after its time to live")
			Expect(s.IsExists(ctx)).To(BeFalse())
		})

		It("testAddPermits", func() {
			s := c.NewSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			Expect(s.Acquire(ctx, 10)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
			Expect(s.AddPermits(ctx, 4)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(4))
			Expect(s.Release(ctx, 10)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(14))
			Expect(s.Acquire(ctx, 5)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(9))
		})

		It("testReducePermits", func() {
			s := c.NewSemaphore("test2")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			Expect(s.Acquire(ctx, 10)).To(Succeed())
			Expect(s.AddPermits(ctx, -5)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(-5))
			Expect(s.Release(ctx, 10)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(5))
			Expect(s.Acquire(ctx, 5)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
		})

		It("testBlockingAcquire", Label("slow"), func() {
			s := c.NewSemaphore("test")
			Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
			Expect(s.Acquire(ctx, 1)).To(Succeed())
			t := javaThread(func() {
				time.Sleep(time.Second)
				Expect(c.NewSemaphore("test").Release(ctx, 1)).To(Succeed())
			})
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
			Expect(s.Acquire(ctx, 1)).To(Succeed())
			Expect(s.TryAcquire(ctx, 1, 0)).To(BeFalse())
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
			joined(t, time.Second)
		})

		It("testBlockingNAcquire", Label("slow"), func() {
			s := c.NewSemaphore("test")
			Expect(s.TrySetPermits(ctx, 5)).To(BeTrue())
			Expect(s.Acquire(ctx, 3)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(2))
			t := javaThread(func() {
				s := c.NewSemaphore("test")
				time.Sleep(500 * time.Millisecond)
				Expect(s.Release(ctx, 1)).To(Succeed())
				time.Sleep(500 * time.Millisecond)
				Expect(s.Release(ctx, 1)).To(Succeed())
			})
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second) // @Timeout(5)
			defer cancel()
			Expect(s.Acquire(tctx, 4)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
			joined(t, time.Second)
		})

		It("testTryNAcquire", Label("slow"), func() {
			s := c.NewSemaphore("test")
			Expect(s.TrySetPermits(ctx, 5)).To(BeTrue())
			Expect(s.TryAcquire(ctx, 3, 0)).To(BeTrue())
			Expect(s.TryAcquire(ctx, 4, 0)).To(BeFalse())
			start := time.Now()
			t := javaThread(func() {
				s := c.NewSemaphore("test")
				time.Sleep(500 * time.Millisecond)
				Expect(s.Release(ctx, 1)).To(Succeed())
				time.Sleep(500 * time.Millisecond)
				Expect(s.Release(ctx, 1)).To(Succeed())
			})
			Expect(s.TryAcquire(ctx, 4, 2*time.Second)).To(BeTrue())
			// Redisson: between 900 and 1200 ms.
			Expect(time.Since(start)).To(And(BeNumerically(">=", 900*time.Millisecond), BeNumerically("<=", 1500*time.Millisecond)))
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
			joined(t, time.Second)
		})

		It("testReleaseWithoutPermits", func() {
			s := c.NewSemaphore("test")
			Expect(s.Release(ctx, 1)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(1))
		})

		It("testDrainPermits", func() {
			s := c.NewSemaphore("test")
			Expect(s.DrainPermits(ctx)).To(BeZero())
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			Expect(s.Acquire(ctx, 3)).To(Succeed())
			Expect(s.DrainPermits(ctx)).To(Equal(7))
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
		})

		It("testReleaseAcquire", func() {
			s := c.NewSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			Expect(s.Acquire(ctx, 1)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(9))
			Expect(s.Release(ctx, 1)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(10))
			Expect(s.Acquire(ctx, 5)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(5))
			Expect(s.Release(ctx, 5)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(10))
		})

		It("testReleaseIfExists", func() {
			s := c.NewSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			Expect(s.Acquire(ctx, 1)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(9))
			Expect(s.ReleaseIfExists(ctx, 1)).To(BeTrue())
			Expect(s.AvailablePermits(ctx)).To(Equal(10))

			s1 := c.NewSemaphore("test2")
			Expect(s1.ReleaseIfExists(ctx, 1)).To(BeFalse())
		})

		It("testConcurrency_SingleInstance", func() {
			var lockedCounter atomic.Int64
			Expect(c.NewSemaphore("test").TrySetPermits(ctx, 1)).To(BeTrue())
			const iterations = 15
			concurrently(iterations, func(int) {
				s1 := c.NewSemaphore("test")
				Expect(s1.Acquire(ctx, 1)).To(Succeed())
				value := lockedCounter.Load()
				lockedCounter.Store(value + 1)
				Expect(s1.Release(ctx, 1)).To(Succeed())
			})
			Expect(lockedCounter.Load()).To(BeEquivalentTo(iterations))
		})

		It("testConcurrencyLoopMax_MultiInstance", func() {
			const iterations = 10
			var lockedCounter atomic.Int64
			Expect(c.NewSemaphore("test").TrySetPermits(ctx, math.MaxInt32)).To(BeTrue())
			instances := clients(e, 4)
			concurrently(4, func(n int) {
				r := instances[n]
				for range iterations {
					v := math.MaxInt32
					if rand.IntN(2) == 0 {
						v = 1
					}
					Expect(r.NewSemaphore("test").Acquire(ctx, v)).To(Succeed())
					time.Sleep(10 * time.Millisecond)
					lockedCounter.Add(1)
					Expect(r.NewSemaphore("test").Release(ctx, v)).To(Succeed())
				}
			})
			Expect(lockedCounter.Load()).To(BeEquivalentTo(4 * iterations))
		})

		It("testConcurrencyLoop_MultiInstance", Label("slow"), func() {
			const iterations = 100
			var lockedCounter atomic.Int64
			Expect(c.NewSemaphore("test").TrySetPermits(ctx, 1)).To(BeTrue())
			instances := clients(e, 16)
			concurrently(16, func(n int) {
				r := instances[n]
				for range iterations {
					Expect(r.NewSemaphore("test").Acquire(ctx, 1)).To(Succeed())
					time.Sleep(10 * time.Millisecond)
					value := lockedCounter.Load()
					lockedCounter.Store(value + 1)
					Expect(r.NewSemaphore("test").Release(ctx, 1)).To(Succeed())
				}
			})
			Expect(lockedCounter.Load()).To(BeEquivalentTo(16 * iterations))
		})

		It("testConcurrency_MultiInstance_1_permits", func() {
			const iterations = 30
			var lockedCounter atomic.Int64
			Expect(c.NewSemaphore("test").TrySetPermits(ctx, 1)).To(BeTrue())
			instances := clients(e, iterations)
			concurrently(iterations, func(n int) {
				s1 := instances[n].NewSemaphore("test")
				Expect(s1.Acquire(ctx, 1)).To(Succeed())
				value := lockedCounter.Load()
				lockedCounter.Store(value + 1)
				Expect(s1.Release(ctx, 1)).To(Succeed())
			})
			Expect(lockedCounter.Load()).To(BeEquivalentTo(iterations))
		})
	})

	Describe("RedissonPermitExpirableSemaphoreTest", func() {
		It("testGetInClusterNameMapper", Label("cluster"), func() {
			cl, err := redistest.StartCluster(3, 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(cl.Close)
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
			DeferCleanup(rdb.Close)
			cc, err := rlock.NewClient(rdb)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(cc.Close)
			// Redisson's NameMapper there maps "semaphore" to "test::semaphore";
			// goredisson has no name mapper: the mapped name is the name.
			s := cc.NewPermitExpirableSemaphore("test::semaphore")
			Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
			v, err := s.Acquire(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Release(ctx, v)).To(Succeed())
		})

		It("testUpdateLeaseTime", Label("slow"), func() {
			semaphore := c.NewPermitExpirableSemaphore("test")
			Expect(semaphore.TrySetPermits(ctx, 1)).To(BeTrue())
			Expect(semaphore.UpdateLeaseTime(ctx, "1234", time.Second)).To(BeFalse())
			id, err := semaphore.Acquire(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(semaphore.UpdateLeaseTime(ctx, id, time.Second)).To(BeTrue())
			time.Sleep(1200 * time.Millisecond)
			Expect(semaphore.UpdateLeaseTime(ctx, id, time.Second)).To(BeFalse())
			id2, ok, err := semaphore.TryAcquire(ctx, time.Second, time.Second)
			Expect(ok, err).To(BeTrue())
			Expect(semaphore.UpdateLeaseTime(ctx, id2, 3*time.Second)).To(BeTrue())
			time.Sleep(2800 * time.Millisecond)
			Expect(semaphore.AvailablePermits(ctx)).To(BeZero())
			time.Sleep(500 * time.Millisecond)
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(1))
			Expect(semaphore.UpdateLeaseTime(ctx, id2, 2*time.Second)).To(BeFalse())
		})

		It("testNotExistent", func() {
			semaphore := c.NewPermitExpirableSemaphore("testSemaphoreForNPE")
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(0))
		})

		// testAvailablePermits, testAcquiredPermits and testGetPermits: two
		// permits with 1 s leases taken, a third refused, one taken again once
		// they expired, and a count read at each step (the three Java tests
		// differ only in the count they read).
		leasedCounts := func(count func(s *rlock.PermitExpirableSemaphore) (int, error), want [4]int) {
			semaphore := c.NewPermitExpirableSemaphore("test-semaphore")
			Expect(semaphore.TrySetPermits(ctx, 2)).To(BeTrue())
			Expect(count(semaphore)).To(Equal(want[0]))
			for i := range 2 {
				_, ok, err := semaphore.TryAcquire(ctx, 200*time.Millisecond, time.Second)
				Expect(ok, err).To(BeTrue())
				if i == 0 && want[1] >= 0 {
					Expect(count(semaphore)).To(Equal(want[1]))
				}
			}
			acquire3, ok, err := semaphore.TryAcquire(ctx, 200*time.Millisecond, time.Second)
			Expect(ok, err).To(BeFalse())
			Expect(acquire3).To(BeEmpty())
			Expect(count(semaphore)).To(Equal(want[2]))
			time.Sleep(1100 * time.Millisecond)
			_, ok, err = semaphore.TryAcquire(ctx, 200*time.Millisecond, time.Second)
			Expect(ok, err).To(BeTrue())
			time.Sleep(1100 * time.Millisecond)
			Expect(count(semaphore)).To(Equal(want[3]))
		}

		It("testAvailablePermits", Label("slow"), func() {
			leasedCounts(func(s *rlock.PermitExpirableSemaphore) (int, error) { return s.AvailablePermits(ctx) }, [4]int{2, -1, 0, 2})
		})

		It("testAcquiredPermits", Label("slow"), func() {
			leasedCounts(func(s *rlock.PermitExpirableSemaphore) (int, error) { return s.AcquiredPermits(ctx) }, [4]int{0, 1, 2, 0})
		})

		It("testGetPermits", Label("slow"), func() {
			leasedCounts(func(s *rlock.PermitExpirableSemaphore) (int, error) { return s.Permits(ctx) }, [4]int{2, -1, 2, 2})
		})

		It("testExpiration", Label("slow"), func() {
			semaphore := c.NewPermitExpirableSemaphore("some-key")
			Expect(semaphore.TrySetPermits(ctx, 1)).To(BeTrue())
			Expect(semaphore.Expire(ctx, 3*time.Second)).To(BeTrue())
			_, ok, err := semaphore.TryAcquire(ctx, time.Second, time.Second)
			Expect(ok, err).To(BeTrue())
			time.Sleep(4100 * time.Millisecond)
			Expect(e.Raw.DBSize(ctx).Val()).To(BeZero()) // redisson.getKeys().count()
		})

		// testExpire and testExpireTryAcquire: a permit acquired with a 2 s
		// lease frees itself then for a waiter of another goroutine; its
		// holder's tryRelease afterwards fails.
		expires := func(acquire func(s *rlock.PermitExpirableSemaphore) string) {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
			permitID := acquire(s)
			startTime := time.Now()
			var spendTime time.Duration
			var released bool
			joined(javaThread(func() {
				s := c.NewPermitExpirableSemaphore("test")
				permitID, err := s.Acquire(ctx, 0)
				Expect(err).NotTo(HaveOccurred())
				spendTime = time.Since(startTime)
				Expect(s.Release(ctx, permitID)).To(Succeed())
				released = true
			}), 10*time.Second)
			Expect(spendTime).To(BeNumerically("~", 2*time.Second, 100*time.Millisecond)) // 1900..2100 ms
			Expect(s.TryRelease(ctx, permitID)).To(BeFalse())
			Expect(released).To(BeTrue())
		}

		It("testExpire", Label("slow"), func() {
			expires(func(s *rlock.PermitExpirableSemaphore) string {
				permitID, err := s.Acquire(ctx, 2*time.Second)
				Expect(err).NotTo(HaveOccurred())
				return permitID
			})
		})

		It("testExpireTryAcquire", Label("slow"), func() {
			expires(func(s *rlock.PermitExpirableSemaphore) string {
				permitID, ok, err := s.TryAcquire(ctx, 100*time.Millisecond, 2*time.Second)
				Expect(ok, err).To(BeTrue())
				return permitID
			})
		})

		It("testTrySetPermits", func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			Expect(s.AvailablePermits(ctx)).To(Equal(10))
			Expect(s.TrySetPermits(ctx, 15)).To(BeFalse())
			Expect(s.AvailablePermits(ctx)).To(Equal(10))
		})

		It("testSetPermits", func() {
			s := c.NewPermitExpirableSemaphore("test")
			counts := func(permits, available, acquired int) {
				GinkgoHelper()
				Expect(s.Permits(ctx)).To(Equal(permits))
				Expect(s.AvailablePermits(ctx)).To(Equal(available))
				Expect(s.AcquiredPermits(ctx)).To(Equal(acquired))
			}
			Expect(s.SetPermits(ctx, 10)).To(Succeed())
			counts(10, 10, 0)

			// attempts to set available permits fail
			Expect(s.TrySetPermits(ctx, 15)).To(BeFalse())
			counts(10, 10, 0)

			// attempts to set max permits succeeds
			Expect(s.SetPermits(ctx, 15)).To(Succeed())
			counts(15, 15, 0)

			// setting to existing value succeeds
			Expect(s.SetPermits(ctx, 15)).To(Succeed())
			counts(15, 15, 0)

			// decreasing max permits succeeds
			Expect(s.SetPermits(ctx, 5)).To(Succeed())
			counts(5, 5, 0)

			// changing the max after acquiring permits succeeds
			for range 3 {
				_, ok, err := s.TryAcquire(ctx, 200*time.Millisecond, time.Second)
				Expect(ok, err).To(BeTrue())
			}
			counts(5, 2, 3)

			// decreasing the max to the number of claimed permits is allowed
			Expect(s.SetPermits(ctx, 3)).To(Succeed())
			counts(3, 0, 3)

			// decreasing the max to below the number of claimed permits is
			// allowed and results in a negative number of available permits
			Expect(s.SetPermits(ctx, 2)).To(Succeed())
			counts(2, -1, 3)
		})

		It("testAddPermits", func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			Expect(s.AddPermits(ctx, 5)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(15))
			Expect(s.AddPermits(ctx, -10)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(5))
			Expect(s.AddPermits(ctx, -10)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(-5))
		})

		It("testBlockingAcquire", Label("slow"), func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
			permitID, err := s.Acquire(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(permitID).To(HaveLen(32))
			t := javaThread(func() {
				time.Sleep(time.Second)
				Expect(c.NewPermitExpirableSemaphore("test").Release(ctx, permitID)).To(Succeed())
			})
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
			_, err = s.Acquire(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			id, ok, err := s.TryAcquire(ctx, 0, 0)
			Expect(ok, err).To(BeFalse())
			Expect(id).To(BeEmpty())
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
			joined(t, time.Second)
		})

		It("testBlockingAcquireMany", func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			permitsIDs, err := s.AcquireN(ctx, 6, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.AvailablePermits(ctx)).To(Equal(4))
			Expect(s.ReleaseN(ctx, permitsIDs)).To(Succeed())
			Expect(s.AvailablePermits(ctx)).To(Equal(10))
		})

		It("testTryAcquire", func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
			permitID, ok, err := s.TryAcquire(ctx, 0, 0)
			Expect(ok, err).To(BeTrue())
			Expect(permitID).To(HaveLen(32))
			_, ok, err = s.TryAcquire(ctx, 0, 0)
			Expect(ok, err).To(BeFalse())

			startTime := time.Now()
			t := javaThread(func() {
				time.Sleep(500 * time.Millisecond)
				Expect(c.NewPermitExpirableSemaphore("test").Release(ctx, permitID)).To(Succeed())
			})
			permitID2, ok, err := s.TryAcquire(ctx, time.Second, 0)
			Expect(ok, err).To(BeTrue())
			Expect(permitID2).To(HaveLen(32))
			// Redisson: between 450 and 600 ms.
			Expect(time.Since(startTime)).To(And(BeNumerically(">=", 450*time.Millisecond), BeNumerically("<=", 900*time.Millisecond)))
			Expect(s.AvailablePermits(ctx)).To(Equal(0))
			joined(t, time.Second)
		})

		It("testTryAcquireMany", func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			permitsIDs, ok, err := s.TryAcquireN(ctx, 4, 0, 0)
			Expect(ok, err).To(BeTrue())
			Expect(permitsIDs).To(HaveLen(4))
			permitsIDs2, ok, err := s.TryAcquireN(ctx, 5, 0, 0)
			Expect(ok, err).To(BeTrue())
			Expect(permitsIDs2).To(HaveLen(5))
			Expect(s.AvailablePermits(ctx)).To(Equal(1))
		})

		It("testReleaseWithoutPermits", func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.Release(ctx, "1234")).To(MatchError(rlock.ErrNotHeld)) // Redisson: RedisException
		})

		It("testReleaseExpired", func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
			permitID, ok, err := s.TryAcquire(ctx, 100*time.Millisecond, 100*time.Millisecond)
			Expect(ok, err).To(BeTrue())
			time.Sleep(200 * time.Millisecond)
			Expect(s.TryRelease(ctx, permitID)).To(BeFalse())
		})

		It("testConcurrency_SingleInstance", func() {
			var lockedCounter atomic.Int64
			Expect(c.NewPermitExpirableSemaphore("test").TrySetPermits(ctx, 1)).To(BeTrue())
			const iterations = 100
			concurrently(iterations, func(int) {
				s1 := c.NewPermitExpirableSemaphore("test")
				permitID, err := s1.Acquire(ctx, 0)
				Expect(err).NotTo(HaveOccurred())
				value := lockedCounter.Load()
				lockedCounter.Store(value + 1)
				Expect(s1.Release(ctx, permitID)).To(Succeed())
			})
			Expect(lockedCounter.Load()).To(BeEquivalentTo(iterations))
		})

		It("testConcurrencyLoop_MultiInstance", Label("slow"), func() {
			const iterations = 100
			var lockedCounter atomic.Int64
			Expect(c.NewPermitExpirableSemaphore("test").TrySetPermits(ctx, 1)).To(BeTrue())
			instances := clients(e, 16)
			concurrently(16, func(n int) {
				r := instances[n]
				for range iterations {
					permitID, err := r.NewPermitExpirableSemaphore("test").Acquire(ctx, 0)
					Expect(err).NotTo(HaveOccurred())
					time.Sleep(10 * time.Millisecond)
					value := lockedCounter.Load()
					lockedCounter.Store(value + 1)
					Expect(r.NewPermitExpirableSemaphore("test").Release(ctx, permitID)).To(Succeed())
				}
			})
			Expect(lockedCounter.Load()).To(BeEquivalentTo(16 * iterations))
		})

		It("testAcquire", func() {
			semaphore := c.NewPermitExpirableSemaphore("test.sync_semaphore")
			Expect(semaphore.TrySetPermits(ctx, 1)).To(BeTrue())
			got := make(chan string, 1)
			go func() {
				defer GinkgoRecover()
				permit, err := semaphore.Acquire(ctx, 5000*time.Millisecond) // acquireAsync(5000, ms)
				Expect(err).NotTo(HaveOccurred())
				got <- permit
			}()
			// Redisson: at most 100 ms.
			Eventually(got).WithTimeout(time.Second).Should(Receive(Not(BeEmpty())))
		})

		It("testRelease", func() {
			semaphore := c.NewPermitExpirableSemaphore("test")
			Expect(semaphore.TrySetPermits(ctx, 10)).To(BeTrue())
			permitsIDs, err := semaphore.AcquireN(ctx, 6, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(permitsIDs).To(HaveLen(6))
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(4))

			Expect(semaphore.ReleaseN(ctx, permitsIDs[0:4])).To(Succeed())
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(8))

			Expect(semaphore.ReleaseN(ctx, permitsIDs[4:6])).To(Succeed())
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(10))

			Expect(semaphore.ReleaseN(ctx, permitsIDs)).To(MatchError(rlock.ErrNotHeld)) // Redisson: RedisException
		})

		It("testAcquireAsyncMany", func() {
			semaphore := c.NewPermitExpirableSemaphore("test")
			Expect(semaphore.TrySetPermits(ctx, 10)).To(BeTrue())
			got := make(chan []string, 1)
			go func() {
				defer GinkgoRecover()
				ids, err := semaphore.AcquireN(ctx, 6, 0) // acquireAsync(6)
				Expect(err).NotTo(HaveOccurred())
				got <- ids
			}()
			var permitsIDs []string
			// Redisson: done within 100 ms.
			Eventually(got).WithTimeout(time.Second).Should(Receive(&permitsIDs))
			Expect(permitsIDs).To(HaveLen(6))
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(4))
		})

		It("testReleaseAsyncMany", func() {
			semaphore := c.NewPermitExpirableSemaphore("test")
			Expect(semaphore.TrySetPermits(ctx, 10)).To(BeTrue())
			permitsIDs, err := semaphore.AcquireN(ctx, 6, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(permitsIDs).To(HaveLen(6))
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(4))

			Expect(semaphore.TryReleaseN(ctx, permitsIDs[0:4])).To(Equal(4))
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(8))

			Expect(semaphore.TryReleaseN(ctx, permitsIDs[4:6])).To(Equal(2))
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(10))
		})

		It("testReleaseManyExpiredDoesNotThrow", func() {
			semaphore := c.NewPermitExpirableSemaphore("test")
			Expect(semaphore.TrySetPermits(ctx, 10)).To(BeTrue())
			permitsIDs, err := semaphore.AcquireN(ctx, 6, 100*time.Millisecond)
			Expect(err).NotTo(HaveOccurred())
			Expect(permitsIDs).To(HaveLen(6))
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(4))
			time.Sleep(250 * time.Millisecond)

			_, err = semaphore.Acquire(ctx, 100*time.Millisecond)
			Expect(err).NotTo(HaveOccurred())
			Expect(semaphore.AvailablePermits(ctx)).To(Equal(9))
			Eventually(func() (int, error) { return semaphore.AvailablePermits(ctx) }).
				WithTimeout(250 * time.Millisecond).WithPolling(10 * time.Millisecond).Should(Equal(10))
		})

		It("testTryReleaseManyExpired", func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			timedPermitsIDs, ok, err := s.TryAcquireN(ctx, 3, 100*time.Millisecond, 100*time.Millisecond)
			Expect(ok, err).To(BeTrue())
			infinitePermitsIDs, ok, err := s.TryAcquireN(ctx, 3, 0, 0)
			Expect(ok, err).To(BeTrue())
			Expect(s.AvailablePermits(ctx)).To(Equal(4))

			time.Sleep(200 * time.Millisecond)

			Expect(s.TryReleaseN(ctx, infinitePermitsIDs)).To(Equal(3))
			Expect(s.AvailablePermits(ctx)).To(Equal(10))

			Expect(s.TryReleaseN(ctx, timedPermitsIDs)).To(Equal(0))
			Expect(s.AvailablePermits(ctx)).To(Equal(10))
		})

		It("testReleaseManyNotExistOrExpired", func() {
			s := c.NewPermitExpirableSemaphore("test")
			Expect(s.TrySetPermits(ctx, 10)).To(BeTrue())
			timedPermitsIDs, err := s.AcquireN(ctx, 2, 100*time.Millisecond)
			Expect(err).NotTo(HaveOccurred())
			permitsIDs, ok, err := s.TryAcquireN(ctx, 8, 0, 0)
			Expect(ok, err).To(BeTrue())

			permitsIDsFirstPart := append([]string(nil), permitsIDs[0:2]...)
			Expect(s.TryReleaseN(ctx, permitsIDsFirstPart)).To(Equal(2))
			Expect(s.AvailablePermits(ctx)).To(Equal(2))

			time.Sleep(100 * time.Millisecond)

			Expect(s.ReleaseN(ctx, timedPermitsIDs)).To(MatchError(rlock.ErrNotHeld))
			Expect(s.AvailablePermits(ctx)).To(Equal(4))

			// Java's subList is a view: permitsIdsSecondPart.addAll(first
			// part) inserts the first part into permitsIds at index 4.
			permitsIDsSecondPart := append(append([]string(nil), permitsIDs[2:4]...), permitsIDsFirstPart...)
			permitsIDs = append(append(append([]string(nil), permitsIDs[:4]...), permitsIDsFirstPart...), permitsIDs[4:]...)
			Expect(s.ReleaseN(ctx, permitsIDsSecondPart)).To(MatchError(rlock.ErrNotHeld))
			Expect(s.AvailablePermits(ctx)).To(Equal(4))

			Expect(s.ReleaseN(ctx, []string{"1234"})).To(MatchError(rlock.ErrNotHeld))
			Expect(s.AvailablePermits(ctx)).To(Equal(4))

			permitsIDsThirdPart := append(append([]string(nil), permitsIDs[4:6]...), "4567")
			Expect(s.ReleaseN(ctx, permitsIDsThirdPart)).To(MatchError(rlock.ErrNotHeld))
			Expect(s.AvailablePermits(ctx)).To(Equal(4))
		})

		It("testGetLeaseTime", Label("slow"), func() {
			semaphore := c.NewPermitExpirableSemaphore("test")
			Expect(semaphore.TrySetPermits(ctx, 1)).To(BeTrue())

			_, err := semaphore.LeaseTime(ctx, "1234")
			Expect(err).To(MatchError(rlock.ErrNotHeld)) // Redisson: RedisException

			permitID, err := semaphore.Acquire(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(semaphore.LeaseTime(ctx, permitID)).To(Equal(rlock.NoExpiry)) // Redisson: -1

			Expect(semaphore.Release(ctx, permitID)).To(Succeed())
			permitID, err = semaphore.Acquire(ctx, 1100*time.Millisecond)
			Expect(err).NotTo(HaveOccurred())
			Expect(permitID).NotTo(BeEmpty())
			time.Sleep(100 * time.Millisecond)
			Expect(semaphore.LeaseTime(ctx, permitID)).To(BeNumerically("<=", time.Second))
			Eventually(func() (int, error) { return semaphore.AvailablePermits(ctx) }).
				WithTimeout(1100 * time.Millisecond).Should(Equal(1))
		})

		It("testConcurrencyMultiPermits", Label("slow"), func() {
			const key = "testConcurrencyMultiPermits"
			semaphore := c.NewPermitExpirableSemaphore(key)
			Expect(semaphore.TrySetPermits(ctx, 2)).To(BeTrue())
			var successCount atomic.Int64
			worker := func() {
				permitList, _, err := semaphore.TryAcquireN(ctx, 2, 2000*time.Millisecond, 0)
				Expect(err).NotTo(HaveOccurred())
				time.Sleep(500 * time.Millisecond)
				if len(permitList) > 0 {
					successCount.Add(1)
					_, err := semaphore.TryReleaseN(ctx, permitList)
					Expect(err).NotTo(HaveOccurred())
				}
			}
			t1, t2 := javaThread(worker), javaThread(worker)
			joined(t1, 10*time.Second)
			joined(t2, 10*time.Second)
			Expect(successCount.Load()).To(BeEquivalentTo(2))
		})

		It("testConcurrencyMultiPermits2", Label("slow"), func() {
			const key = "testConcurrencyMultiPermits2"
			semaphore := c.NewPermitExpirableSemaphore(key)
			Expect(semaphore.TrySetPermits(ctx, 2)).To(BeTrue())
			var successCount atomic.Int64
			worker := func(n int) func() {
				return func() {
					permitList, _, err := semaphore.TryAcquireN(ctx, n, 2000*time.Millisecond, 0)
					Expect(err).NotTo(HaveOccurred())
					time.Sleep(500 * time.Millisecond)
					if len(permitList) > 0 {
						successCount.Add(1)
						_, err := semaphore.TryReleaseN(ctx, permitList)
						Expect(err).NotTo(HaveOccurred())
					}
				}
			}
			t1 := javaThread(worker(1))
			time.Sleep(100 * time.Millisecond)
			t2 := javaThread(worker(2))
			joined(t1, 10*time.Second)
			joined(t2, 10*time.Second)
			Expect(successCount.Load()).To(BeEquivalentTo(2))
		})
	})

	Describe("RedissonCountDownLatchTest", func() {
		It("testAwaitTimeout", func() {
			latch := c.NewCountDownLatch("latch1")
			Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
			t1 := javaThread(func() {
				time.Sleep(500 * time.Millisecond)
				Expect(latch.CountDown(ctx)).To(Succeed())
			})
			t2 := javaThread(func() {
				Expect(latch.Count(ctx)).To(BeEquivalentTo(1))
				// Redisson: 550 ms, 50 ms after the count-down; the margin is
				// widened for a loaded machine.
				Expect(latch.TryAwait(ctx, 1500*time.Millisecond)).To(BeTrue())
			})
			joined(t1, 10*time.Second)
			joined(t2, 10*time.Second)
		})

		It("testAwaitTimeoutFail", Label("slow"), func() {
			latch := c.NewCountDownLatch("latch1")
			Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
			t1 := javaThread(func() {
				time.Sleep(time.Second)
				Expect(latch.CountDown(ctx)).To(Succeed())
			})
			t2 := javaThread(func() {
				Expect(latch.Count(ctx)).To(BeEquivalentTo(1))
				Expect(latch.TryAwait(ctx, 500*time.Millisecond)).To(BeFalse())
			})
			joined(t1, 10*time.Second)
			joined(t2, 10*time.Second)
		})

		It("testMultiAwait", Label("slow"), func() {
			latch := c.NewCountDownLatch("latch")
			Expect(latch.TrySetCount(ctx, 5)).To(BeTrue())
			var counter atomic.Int64
			for range 5 {
				go func() {
					defer GinkgoRecover()
					if ok, err := c.NewCountDownLatch("latch").TryAwait(ctx, 10*time.Second); err == nil && ok {
						counter.Add(1)
					}
				}()
			}
			for range 5 {
				time.AfterFunc(time.Second, func() {
					defer GinkgoRecover()
					Expect(c.NewCountDownLatch("latch").CountDown(ctx)).To(Succeed())
				})
			}
			Eventually(func() (int64, error) { return latch.Count(ctx) }).WithTimeout(7 * time.Second).Should(BeZero())
			Eventually(counter.Load).Should(BeEquivalentTo(5))
		})

		It("testCountDown", func() {
			latch := c.NewCountDownLatch("latch")
			Expect(latch.TrySetCount(ctx, 2)).To(BeTrue())
			Expect(latch.Count(ctx)).To(BeEquivalentTo(2))
			Expect(latch.CountDown(ctx)).To(Succeed())
			Expect(latch.Count(ctx)).To(BeEquivalentTo(1))
			Expect(latch.CountDown(ctx)).To(Succeed())
			Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
			Expect(latch.Await(ctx)).To(Succeed())
			Expect(latch.CountDown(ctx)).To(Succeed())
			Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
			Expect(latch.Await(ctx)).To(Succeed())
			Expect(latch.CountDown(ctx)).To(Succeed())
			Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
			Expect(latch.Await(ctx)).To(Succeed())

			latch1 := c.NewCountDownLatch("latch1")
			Expect(latch1.TrySetCount(ctx, 1)).To(BeTrue())
			Expect(latch1.CountDown(ctx)).To(Succeed())
			Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
			Expect(latch1.CountDown(ctx)).To(Succeed())
			Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
			Expect(latch1.Await(ctx)).To(Succeed())

			latch2 := c.NewCountDownLatch("latch2")
			Expect(latch2.TrySetCount(ctx, 1)).To(BeTrue())
			Expect(latch2.CountDown(ctx)).To(Succeed())
			Expect(latch2.Await(ctx)).To(Succeed())
			Expect(latch2.Await(ctx)).To(Succeed())

			latch3 := c.NewCountDownLatch("latch3")
			Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
			Expect(latch3.Await(ctx)).To(Succeed())

			latch4 := c.NewCountDownLatch("latch4")
			Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
			Expect(latch4.CountDown(ctx)).To(Succeed())
			Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
			Expect(latch4.Await(ctx)).To(Succeed())
		})

		It("testDelete", func() {
			latch := c.NewCountDownLatch("latch")
			Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
			Expect(latch.Delete(ctx)).To(BeTrue())
		})

		It("testDeleteFailed", func() {
			latch := c.NewCountDownLatch("latch")
			Expect(latch.Delete(ctx)).To(BeFalse())
		})

		It("testTrySetCount", func() {
			latch := c.NewCountDownLatch("latch")
			Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
			Expect(latch.TrySetCount(ctx, 2)).To(BeFalse())
		})

		It("testCount", func() {
			latch := c.NewCountDownLatch("latch")
			Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
		})
	})

	Describe("RedissonCountDownLatchConcurrentTest", func() {
		It("testSingleCountDownAwait_SingleInstance", func() {
			iterations := runtime.NumCPU() * 3
			latch := c.NewCountDownLatch("latch")
			Expect(latch.TrySetCount(ctx, int64(iterations))).To(BeTrue())
			var counter atomic.Int64
			var awaiters sync.WaitGroup
			for range iterations {
				awaiters.Add(1)
				go func() {
					defer GinkgoRecover()
					defer awaiters.Done()
					Expect(latch.Await(ctx)).To(Succeed())
					Expect(latch.Count(ctx)).To(BeEquivalentTo(0))
				}()
			}
			for range iterations {
				go func() {
					defer GinkgoRecover()
					Expect(latch.CountDown(ctx)).To(Succeed())
					counter.Add(1)
				}()
			}
			done := make(chan struct{})
			go func() { awaiters.Wait(); close(done) }()
			Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed())
			Eventually(counter.Load).Should(BeEquivalentTo(iterations))
		})
	})

	// RedissonLockHeavyTest runs each method with (threads, loops) of (2,
	// 5000) up to (20, 50000); the port keeps the shape (a lock per loop
	// index, a bucket set under it, a semaphore released and acquired) at
	// sizes a 2-core CI machine runs in seconds.
	Describe("RedissonLockHeavyTest (its semaphore part)", func() {
		heavy := func(threads, loops int, try bool) {
			var wg sync.WaitGroup
			var acquired atomic.Int64
			for range threads {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					for j := range loops {
						lock := c.NewLock("RLOCK_" + strconv.Itoa(j))
						if try {
							ok, err := lock.TryLock(ctx, time.Duration(rand.IntN(10))*time.Millisecond, 0)
							Expect(err).NotTo(HaveOccurred())
							if !ok {
								continue
							}
						} else {
							Expect(lock.Lock(ctx)).To(Succeed())
						}
						acquired.Add(1)
						Expect(e.Raw.Set(ctx, "RBUCKET_"+strconv.Itoa(j), "TEST", 30*time.Second).Err()).To(Succeed())
						semaphore := c.NewSemaphore("SEMAPHORE_" + strconv.Itoa(j))
						Expect(semaphore.Release(ctx, 1)).To(Succeed())
						Expect(semaphore.Acquire(ctx, 1)).To(Succeed())
						Expect(lock.Unlock(ctx)).To(Succeed())
					}
				}()
			}
			spectest.WaitAll(&wg)
			if !try {
				Expect(acquired.Load()).To(BeEquivalentTo(threads * loops))
			}
			for j := range loops {
				Expect(e.Raw.Get(ctx, "SEMAPHORE_"+strconv.Itoa(j)).Val()).To(Equal("0"), "every release was acquired again")
			}
		}
		DescribeTable("lockUnlockRLock", func(threads, loops int) { heavy(threads, loops, false) },
			Entry("2 threads x 500 loops", 2, 500),
			Entry("10 threads x 100 loops", 10, 100),
		)
		DescribeTable("tryLockUnlockRLock", func(threads, loops int) { heavy(threads, loops, true) },
			Entry("2 threads x 500 loops", 2, 500),
			Entry("10 threads x 100 loops", 10, 100),
		)
	})
})
