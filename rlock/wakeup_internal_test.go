package rlock

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/internal/testkit/suite"
)

// Specs that need to see inside a Client (how many waiters block on a
// channel) to stage a race exactly. They run in the package's one Ginkgo
// suite (suite_test.go), on its server (specServerAddr).

// internalClient returns a Client made with opts on a go-redis client of
// its own; both are closed at cleanup.
func internalClient(opts ...Option) *Client {
	GinkgoHelper()
	rdb := redis.NewClient(&redis.Options{Addr: specServerAddr})
	c, err := NewClient(rdb, opts...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(c.Close()).To(Succeed())
		Expect(rdb.Close()).To(Succeed())
	})
	return c
}

// blockedOn waits until n waiters of c block on channel.
func blockedOn(c *Client, channel string, n int) {
	GinkgoHelper()
	Eventually(func() int { return c.e.Waiters(channel) }).WithPolling(200 * time.Microsecond).Should(Equal(n))
}

// lockThenUnlock starts owner's Lock of l on a goroutine of its own, which
// closes got once it holds the lock, and unlocks it.
func lockThenUnlock(l Locker, owner context.Context) (got chan struct{}) {
	got = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		Expect(l.Lock(owner)).To(Succeed())
		close(got)
		Expect(l.Unlock(owner)).To(Succeed())
	}()
	return got
}

var _ = Describe("a wake taken by a waiter whose context ends at the same moment", Label("slow"), func() {
	const trials = 1000
	var c *Client
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(5 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		// B queues behind A without an attempt of its own: with the default
		// 100 ms bound on that first wait, a lost wake would cost B only
		// 100 ms and slip under the limits below. Make it cost 3 s.
		c = internalClient(withQueuePause(3 * time.Second))
	})

	// race runs the trials: a holder H holds the lock; waiter A (Lock, its
	// ctx cancelled 0-600 µs after H unlocks) queued first, waiter B
	// (TryLock, 3 s) second, both blocked; H unlocks. B must get the lock
	// within a round trip or two every time: the one wake of the unlock,
	// if A took it and left, goes on to B.
	race := func(name string, hold, wait func(ctx context.Context) Locker, blocked func(a, b context.Context) bool) {
		ctx := context.Background()
		var lat []time.Duration
		for i := range trials {
			holder, a, b := ctxowner.New(ctx), ctxowner.New(ctx), ctxowner.New(ctx)
			h := hold(holder)
			Expect(h.Lock(holder)).To(Succeed())
			actx, cancel := context.WithCancel(a)
			aDone := make(chan error, 1)
			go func() {
				err := wait(actx).Lock(actx)
				if err == nil {
					// A got the lock as its ctx ended (its reply came
					// first): it is A's, and A gives it back at once.
					err = wait(a).Unlock(a)
				}
				aDone <- err
			}()
			Eventually(func() bool { return blocked(a, nil) }).WithPolling(200 * time.Microsecond).Should(BeTrue())
			bDone := make(chan time.Time, 1)
			go func() {
				defer GinkgoRecover()
				ok, err := wait(b).TryLock(b, 3*time.Second, 0)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue(), "trial %d: B slept its whole wait while the lock was free", i)
				bDone <- time.Now()
			}()
			Eventually(func() bool { return blocked(a, b) }).WithPolling(200 * time.Microsecond).Should(BeTrue())

			jitter := time.Duration(rand.N(600)) * time.Microsecond
			unlocked := time.Now()
			Expect(h.Unlock(holder)).To(Succeed())
			time.Sleep(jitter) // the race under test, not a wait for a result
			cancel()
			var at time.Time
			Eventually(bDone).WithTimeout(5 * time.Second).WithPolling(200 * time.Microsecond).Should(Receive(&at))
			lat = append(lat, at.Sub(unlocked))
			Eventually(aDone).WithPolling(200 * time.Microsecond).Should(Receive())
			Expect(wait(b).Unlock(b)).To(Succeed())
		}
		slices.Sort(lat)
		p50, p99, worst := lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
		AddReportEntry(name+" second waiter after unlock", map[string]time.Duration{"p50": p50, "p99": p99, "max": worst})
		GinkgoWriter.Printf("%s: %d trials, second waiter got the lock p50 %v, p99 %v, max %v after the unlock\n", name, trials, p50, p99, worst)
		// The hand-over takes a few ms (p99 under 100 ms on a machine
		// nothing else loads, checked with GOREDISSON_TIMING=1); a loaded
		// machine's scheduling delays reach 130 ms (load 23, in CI beside a
		// second suite), still far from the 3 s wait a lost wake would cost.
		p99Bound := 500 * time.Millisecond
		if os.Getenv(suite.TimingEnv) == "1" {
			p99Bound = 100 * time.Millisecond
		}
		Expect(p99).To(BeNumerically("<", p99Bound))
		Expect(worst).To(BeNumerically("<", time.Second), "no waiter slept while the lock was free")
	}
	// waiters returns how many waiters block on channel in this Client.
	waiters := func(channel string) int { return c.e.Waiters(channel) }

	It("is handed on for a Lock", func() {
		l := c.NewLock("race:lock")
		ch := layout.Channel("race:lock")
		race("Lock", func(context.Context) Locker { return l }, func(context.Context) Locker { return l },
			func(a, b context.Context) bool { return waiters(ch) == map[bool]int{false: 1, true: 2}[b != nil] })
	})

	It("is handed on for a FencedLock", func() {
		l := c.NewFencedLock("race:fenced")
		ch := layout.Channel("race:fenced")
		race("FencedLock", func(context.Context) Locker { return l }, func(context.Context) Locker { return l },
			func(a, b context.Context) bool { return waiters(ch) == map[bool]int{false: 1, true: 2}[b != nil] })
	})

	It("is handed on for a WriteLock", func() {
		rw := c.NewReadWriteLock("race:write")
		ch := layout.RWChannel("race:write")
		race("WriteLock", func(context.Context) Locker { return rw.WriteLock() }, func(context.Context) Locker { return rw.WriteLock() },
			func(a, b context.Context) bool { return waiters(ch) == map[bool]int{false: 1, true: 2}[b != nil] })
	})

	It("is handed on for a ReadLock waiting on a writer", func() {
		rw := c.NewReadWriteLock("race:read")
		ch := layout.RWChannel("race:read")
		race("ReadLock", func(context.Context) Locker { return rw.WriteLock() }, func(context.Context) Locker { return rw.ReadLock() },
			func(a, b context.Context) bool { return waiters(ch) == map[bool]int{false: 1, true: 2}[b != nil] })
	})

	It("is handed on for a WriteLock waiting on a reader (a read unlock wakes one waiter)", func() {
		rw := c.NewReadWriteLock("race:reader")
		ch := layout.RWChannel("race:reader")
		race("WriteLock after a reader", func(context.Context) Locker { return rw.ReadLock() }, func(context.Context) Locker { return rw.WriteLock() },
			func(a, b context.Context) bool { return waiters(ch) == map[bool]int{false: 1, true: 2}[b != nil] })
	})

	It("is handed on for a FairLock (each waiter on its own channel)", func() {
		f := c.NewFairLock("race:fair")
		own := func(ctx context.Context) string { return layout.FairChannel("race:fair", c.e.Field(ctx)) }
		race("FairLock", func(context.Context) Locker { return f }, func(context.Context) Locker { return f },
			func(a, b context.Context) bool { return waiters(own(a)) == 1 && (b == nil || waiters(own(b)) == 1) })
	})
})

var _ = Describe("a goroutine that unlocks and locks again at once", func() {
	const trials = 30
	var c *Client
	BeforeEach(func() { c = internalClient() })

	It("queues behind the waiter its unlock woke, for a Lock, a FencedLock and a WriteLock", func() {
		kinds := map[string]func(name string) Locker{
			"Lock":       func(name string) Locker { return c.NewLock(name) },
			"FencedLock": func(name string) Locker { return c.NewFencedLock(name) },
			"WriteLock":  func(name string) Locker { return c.NewReadWriteLock(name).WriteLock() },
		}
		for kind, newLock := range kinds {
			ctx := context.Background()
			for i := range trials {
				// A lock of its own per trial: the last unlocks of a trial
				// publish messages that must not reach the next one.
				l := newLock("queue:" + kind + ":" + strconv.Itoa(i))
				ch := layout.Channel(l.Name())
				if kind == "WriteLock" {
					ch = layout.RWChannel(l.Name())
				}
				h, w := ctxowner.New(ctx), ctxowner.New(ctx)
				Expect(l.Lock(h)).To(Succeed())
				got := lockThenUnlock(l, w)
				blockedOn(c, ch, 1)
				Expect(l.Unlock(h)).To(Succeed())
				Expect(l.Lock(h)).To(Succeed()) // returns once the waiter has had its turn
				Expect(got).To(BeClosed(), "%s trial %d: the goroutine that unlocked took the lock again before the waiter its unlock woke", l.Name(), i)
				Expect(l.IsHeldByCurrent(h)).To(BeTrue())
				Expect(l.HoldCount(h)).To(Equal(1))
				Expect(l.Unlock(h)).To(Succeed())
			}
		}
	})

	It("queues behind a waiter that has not tried yet, once its own unlock is on the way to wake it", func() {
		ctx := context.Background()
		// w2 must not have tried yet when w1's unlock wakes it: its
		// queued first wait (queuePause, 100 ms) must not run out first,
		// as it may on a loaded machine (then w2 is out trying when the
		// spec looks, and has tried when the unlock comes).
		c := internalClient(withQueuePause(time.Minute))
		for i := range trials {
			// A lock of its own per trial: the last unlocks of a trial
			// publish messages that must not reach the next one.
			l := c.NewLock("queue:newcomer:" + strconv.Itoa(i))
			ch := layout.Channel(l.Name())
			h, w1, w2 := ctxowner.New(ctx), ctxowner.New(ctx), ctxowner.New(ctx)
			Expect(l.Lock(h)).To(Succeed())
			// w1 waits after an attempt of its own; w2 comes later and
			// queues behind w1 without one.
			got1, release1 := make(chan struct{}), make(chan struct{})
			var got2 chan struct{}
			w2First := make(chan bool, 1)
			go func() {
				defer GinkgoRecover()
				Expect(l.Lock(w1)).To(Succeed())
				close(got1)
				<-release1
				// Unlock and lock again at once: w2 has not tried yet, but
				// this unlock's message is on its way to wake it.
				Expect(l.Unlock(w1)).To(Succeed())
				Expect(l.Lock(w1)).To(Succeed())
				select {
				case <-got2:
					w2First <- true
				default:
					w2First <- false
				}
				Expect(l.Unlock(w1)).To(Succeed())
			}()
			blockedOn(c, ch, 1)
			got2 = lockThenUnlock(l, w2)
			blockedOn(c, ch, 2)
			Expect(l.Unlock(h)).To(Succeed())
			Eventually(got1).Should(BeClosed())
			Expect(c.e.Waiters(ch)).To(Equal(1), "w2 is still queued")
			close(release1)
			Eventually(w2First).Should(Receive(BeTrue()), "trial %d: w1 took the lock back before the waiter its unlock woke", i)
			Eventually(func() (bool, error) { return l.IsLocked(ctx) }).Should(BeFalse())
		}
	})
})
