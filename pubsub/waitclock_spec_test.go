package pubsub_test

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/pubsub"
)

// A timed Wait's timeout and the Hub's Close ring the blocked Sub (one
// Hub-wide timer for the earliest deadline; Close rings every blocked Wait),
// so a parked Wait waits on its wake channel and ctx only.
var _ = Describe("Hub timeouts and Close of blocked Waits", func() {
	var (
		raw *redis.Client
		hub *pubsub.Hub
		ctx context.Context
	)
	type outcome struct {
		Woken   bool
		Err     error
		Elapsed time.Duration
	}
	waitIn := func(c context.Context, s *pubsub.Sub, timeout time.Duration) chan outcome {
		ch := make(chan outcome, 1)
		go func() {
			start := time.Now()
			w, err := s.Wait(c, timeout)
			ch <- outcome{w, err, time.Since(start)}
		}()
		return ch
	}
	subscribe := func(name string) *pubsub.Sub {
		GinkgoHelper()
		s, err := hub.Subscribe(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		return s
	}
	blocked := func(name string, n int) {
		GinkgoHelper()
		Eventually(func() int { return hub.Waiters(name) }).WithTimeout(3 * time.Second).Should(Equal(n))
	}
	BeforeEach(func() {
		before := gleak.Goroutines()
		ctx = context.Background()
		raw = server.Client()
		rdb := server.Client()
		hub = pubsub.New(rdb, pubsub.WithLinger(0))
		DeferCleanup(func() {
			_ = hub.Close()
			Expect(rdb.Close()).To(Succeed())
			Expect(raw.Close()).To(Succeed())
			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
	})

	It("ends every blocked Wait at Close, also one whose Sub was closed while it blocked", func() {
		a, b := subscribe("close:a"), subscribe("close:b")
		wa, wb := waitIn(ctx, a, -1), waitIn(ctx, b, 10*time.Minute)
		blocked("close:a", 1)
		blocked("close:b", 1)
		b.Close() // its Wait goes on blocking: no wake can reach it now
		Expect(hub.Waiters("close:b")).To(BeZero())
		Consistently(wb).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		Expect(hub.Close()).To(Succeed())
		Eventually(wa).WithTimeout(3 * time.Second).Should(Receive(HaveField("Err", pubsub.ErrClosed)))
		Eventually(wb).WithTimeout(3 * time.Second).Should(Receive(HaveField("Err", pubsub.ErrClosed)))
		_, err := a.Wait(ctx, time.Minute)
		Expect(err).To(MatchError(pubsub.ErrClosed))
	})

	It("ends each of many timed Waits, in any order of arrival, no sooner than its own timeout", func() {
		const n = 20
		var outs []chan outcome
		var timeouts []time.Duration
		for _, i := range rand.Perm(n) {
			timeouts = append(timeouts, time.Duration(100+50*i)*time.Millisecond)
			outs = append(outs, waitIn(ctx, subscribe("order"), timeouts[len(timeouts)-1]))
		}
		untimed := waitIn(ctx, subscribe("order"), -1)
		for i, out := range outs {
			var o outcome
			Eventually(out).WithTimeout(timeouts[i]+5*time.Second).Should(Receive(&o), "wait %d", i)
			Expect(o.Woken).To(BeFalse())
			Expect(o.Err).NotTo(HaveOccurred())
			Expect(o.Elapsed).To(BeNumerically(">=", timeouts[i]), "wait %d", i)
		}
		blocked("order", 1) // the untimed Wait is not rung by the others' timer
		Expect(raw.Publish(ctx, "order", "0").Err()).To(Succeed())
		Eventually(untimed).WithTimeout(3 * time.Second).Should(Receive(HaveField("Woken", true)))
	})

	It("ends a short Wait that arrives after a long one at its own timeout, not the long one's", func() {
		long := waitIn(ctx, subscribe("rearm:long"), 10*time.Minute)
		blocked("rearm:long", 1)
		s := subscribe("rearm:short")
		// The first Wait on s is woken: its deadline leaves the timer's heap
		// and a second, shorter Wait arms it again.
		first := waitIn(ctx, s, 10*time.Minute)
		blocked("rearm:short", 1)
		Expect(raw.Publish(ctx, "rearm:short", "0").Err()).To(Succeed())
		Eventually(first).WithTimeout(3 * time.Second).Should(Receive(HaveField("Woken", true)))
		s.Used()
		var o outcome
		Eventually(waitIn(ctx, s, 300*time.Millisecond)).WithTimeout(5 * time.Second).Should(Receive(&o))
		Expect(o.Woken).To(BeFalse())
		Expect(o.Err).NotTo(HaveOccurred())
		Expect(o.Elapsed).To(BeNumerically(">=", 300*time.Millisecond))
		Expect(hub.Waiters("rearm:long")).To(Equal(1))
		Consistently(long).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
	})

	It("blocks a Wait whose timeout is the longest Duration until it is woken", func() {
		s := subscribe("forever")
		w := waitIn(ctx, s, math.MaxInt64)
		blocked("forever", 1)
		// A short Wait beside it: the Hub's timer fires and looks at the heap.
		Eventually(waitIn(ctx, subscribe("forever:short"), 100*time.Millisecond)).WithTimeout(5 * time.Second).Should(Receive())
		Consistently(w).WithTimeout(500 * time.Millisecond).ShouldNot(Receive())
		Expect(raw.Publish(ctx, "forever", "0").Err()).To(Succeed())
		Eventually(w).WithTimeout(3 * time.Second).Should(Receive(HaveField("Woken", true)))
	})

	It("does not let an ended Wait's deadline end the Sub's next Wait", func() {
		s := subscribe("late")
		cctx, cancel := context.WithCancel(ctx)
		first := waitIn(cctx, s, 300*time.Millisecond)
		blocked("late", 1)
		cancel()
		Eventually(first).WithTimeout(3 * time.Second).Should(Receive(HaveField("Err", context.Canceled)))
		next := waitIn(ctx, s, -1)
		blocked("late", 1)
		// Well past the first Wait's deadline: the next one still blocks.
		Consistently(next).WithTimeout(time.Second).ShouldNot(Receive())
		Expect(raw.Publish(ctx, "late", "0").Err()).To(Succeed())
		Eventually(next).WithTimeout(3 * time.Second).Should(Receive(HaveField("Woken", true)))
	})
})
