package pubsub_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/pubsub"
)

// WakeShared: a read-write lock's write unlock wakes every reader (shared
// Sub) and one writer of a Hub.
var _ = Describe("Hub with shared waiters", func() {
	var (
		raw *redis.Client
		hub *pubsub.Hub
		ctx context.Context
	)
	type outcome struct {
		woken bool
		err   error
	}
	waitIn := func(s *pubsub.Sub) chan outcome {
		ch := make(chan outcome, 1)
		go func() {
			w, err := s.Wait(ctx, -1)
			ch <- outcome{w, err}
		}()
		return ch
	}
	subscribe := func(shared bool) *pubsub.Sub {
		GinkgoHelper()
		s, err := hub.Subscribe(ctx, "rw")
		Expect(err).NotTo(HaveOccurred())
		if shared {
			s.Share()
		}
		DeferCleanup(s.Close)
		return s
	}
	blocked := func(n int) {
		GinkgoHelper()
		Eventually(func() int { return hub.Waiters("rw") }).Should(Equal(n))
	}
	BeforeEach(func() {
		before := gleak.Goroutines()
		ctx = context.Background()
		raw = server.Client()
		rdb := server.Client()
		hub = pubsub.New(rdb, pubsub.WithLinger(0), pubsub.WithWake(func(_, p string) int {
			if p == "1" {
				return pubsub.WakeShared
			}
			return 1
		}))
		DeferCleanup(func() {
			_ = hub.Close()
			Expect(rdb.Close()).To(Succeed())
			Expect(raw.Close()).To(Succeed())
			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
	})

	It("wakes every shared Sub, waiting or not, and of the others only the one blocked longest", func() {
		r1, r2 := subscribe(true), subscribe(true)
		w1, w2, w3 := subscribe(false), subscribe(false), subscribe(false)
		var others []chan outcome
		for i, w := range []*pubsub.Sub{w1, w2, w3} {
			others = append(others, waitIn(w))
			blocked(i + 1)
		}
		r1w := waitIn(r1)
		blocked(4)
		// r2 is not waiting (its attempt is on its way): it is woken all the same.
		raw.Publish(ctx, "rw", "1")
		Eventually(r1w).Should(Receive(Equal(outcome{true, nil})))
		Eventually(others[0]).Should(Receive(Equal(outcome{true, nil})), "the writer blocked longest")
		Expect(r2.Wait(ctx, 0)).To(BeTrue(), "a reader between two waits")
		Consistently(others[1]).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
		Expect(others[2]).NotTo(Receive())
		Expect(hub.Waiters("rw")).To(Equal(2))
		raw.Publish(ctx, "rw", "0") // a read unlock: the next writer
		Eventually(others[1]).Should(Receive(Equal(outcome{true, nil})))
		Consistently(others[2]).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
	})

	It("keeps the wake of the others for the next to wait when none is blocked", func() {
		r, w := subscribe(true), subscribe(false)
		rw := waitIn(r)
		blocked(1)
		// w is between an attempt and its Wait when the message comes.
		raw.Publish(ctx, "rw", "1")
		Eventually(rw).Should(Receive(Equal(outcome{true, nil})))
		Eventually(func() (bool, error) { return w.Wait(ctx, 0) }).Should(BeTrue())
	})

	It("keeps no wake for later when every Sub is shared (only readers wait)", func() {
		r1, r2 := subscribe(true), subscribe(true)
		o1 := waitIn(r1)
		blocked(1)
		raw.Publish(ctx, "rw", "1")
		Eventually(o1).Should(Receive(Equal(outcome{true, nil})))
		Expect(r2.Wait(ctx, 0)).To(BeTrue(), "woken between two waits")
		r1.Used()
		r2.Used()
		Expect(r1.Wait(ctx, 50*time.Millisecond)).To(BeFalse(), "no permit: it would cost a reader a needless attempt")
		Expect(r2.Wait(ctx, 0)).To(BeFalse())
	})

	It("hands the woken writer's wake on to the next writer when it leaves without using it", func() {
		r := subscribe(true)
		w1, w2 := subscribe(false), subscribe(false)
		o1 := waitIn(w1)
		blocked(1)
		o2 := waitIn(w2)
		blocked(2)
		or := waitIn(r)
		blocked(3)
		raw.Publish(ctx, "rw", "1")
		Eventually(or).Should(Receive(Equal(outcome{true, nil})))
		Eventually(o1).Should(Receive(Equal(outcome{true, nil})))
		Consistently(o2).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
		r.Used()
		w1.Close() // its caller's ctx ended before its attempt reached Redis
		Eventually(o2).Should(Receive(Equal(outcome{true, nil})))
	})
})
