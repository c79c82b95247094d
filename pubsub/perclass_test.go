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

// WakePerClass: a faster multilock's unlock wakes one waiter per value set
// (class) of a Hub.
var _ = Describe("Hub with waiters in classes", func() {
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
	subscribe := func(class string) *pubsub.Sub {
		GinkgoHelper()
		s, err := hub.SubscribeAs(ctx, "fm", pubsub.Role{Class: class})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		return s
	}
	blocked := func(n int) {
		GinkgoHelper()
		Eventually(func() int { return hub.Waiters("fm") }).Should(Equal(n))
	}
	BeforeEach(func() {
		before := gleak.Goroutines()
		ctx = context.Background()
		raw = server.Client()
		rdb := server.Client()
		hub = pubsub.New(rdb, pubsub.WithLinger(0), pubsub.WithWake(func(string, string) int { return pubsub.WakePerClass }))
		DeferCleanup(func() {
			_ = hub.Close()
			Expect(rdb.Close()).To(Succeed())
			Expect(raw.Close()).To(Succeed())
			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
	})

	// The owner that unlocked and locks again at once joins the channel
	// (SubscribeIfReadyAs) before its first attempt, as the message of its
	// unlock may be delivered: it is in its class from the join, so the
	// message wakes the waiter of its class blocked longest, not it too.
	It("wakes one Sub per class, and takes a Sub in the class it joined with from the start", func() {
		a, o := subscribe("jack,mary"), subscribe("ann")
		wa := waitIn(a)
		blocked(1)
		wo := waitIn(o)
		blocked(2)
		Expect(hub.Ready("fm")).To(BeTrue())
		b := hub.SubscribeIfReadyAs("fm", pubsub.Role{Class: "jack,mary"})
		Expect(b).NotTo(BeNil())
		DeferCleanup(b.Close)
		Expect(raw.Publish(ctx, "fm", "0").Err()).To(Succeed())
		Eventually(wa).Should(Receive(Equal(outcome{true, nil})), "the longest waiter of its class")
		Eventually(wo).Should(Receive(Equal(outcome{true, nil})), "the other class's")
		Expect(b.QueueBehind()).To(BeTrue(), "b queues behind a, which tried")
		Expect(b.Wait(ctx, 100*time.Millisecond)).To(BeFalse(), "the message was a's, not b's")
	})

	It("counts a Sub joined without a class as a class of its own", func() {
		a := subscribe("jack,mary")
		wa := waitIn(a)
		blocked(1)
		b := hub.SubscribeIfReady("fm")
		Expect(b).NotTo(BeNil())
		DeferCleanup(b.Close)
		Expect(raw.Publish(ctx, "fm", "0").Err()).To(Succeed())
		Eventually(wa).Should(Receive(Equal(outcome{true, nil})))
		Expect(b.QueueBehind()).To(BeFalse(), "no other Sub without a class")
		Expect(b.Wait(ctx, 0)).To(BeTrue(), "its class's wake, kept for its next Wait")
	})

	It("does not join a channel that is not ready, and says so", func() {
		Expect(hub.Ready("fm")).To(BeFalse())
		Expect(hub.SubscribeIfReadyAs("fm", pubsub.Role{Class: "x"})).To(BeNil())
	})
})
