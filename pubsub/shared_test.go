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
// Sub) and one writer of a Hub. WakePerClass: a faster multilock's unlock
// wakes one waiter per value set (class).
var _ = Describe("Hub with shared waiters, and with waiters in classes", func() {
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
	subscribeAs := func(name string, r pubsub.Role) *pubsub.Sub {
		GinkgoHelper()
		s, err := hub.SubscribeAs(ctx, name, r)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		return s
	}
	subscribe := func(shared bool) *pubsub.Sub {
		GinkgoHelper()
		return subscribeAs("rw", pubsub.Role{Shared: shared})
	}
	blockedOn := func(name string, n int) {
		GinkgoHelper()
		Eventually(func() int { return hub.Waiters(name) }).Should(Equal(n))
	}
	blocked := func(n int) {
		GinkgoHelper()
		blockedOn("rw", n)
	}
	BeforeEach(func() {
		before := gleak.Goroutines()
		ctx = context.Background()
		raw = server.Client()
		rdb := server.Client()
		hub = pubsub.New(rdb, pubsub.WithLinger(0), pubsub.WithWake(func(ch, p string) int {
			switch {
			case ch == "fm":
				return pubsub.WakePerClass
			case p == "1":
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

	// The owner that unlocked and locks again at once joins the channel
	// (SubscribeIfReadyAs) before its first attempt, as the message of its
	// unlock may be delivered: it is in its class from the join, so the
	// message wakes the waiter of its class blocked longest, not it too.
	It("wakes one Sub per class, and takes a Sub in the class it joined with from the start", func() {
		a, o := subscribeAs("fm", pubsub.Role{Class: "jack,mary"}), subscribeAs("fm", pubsub.Role{Class: "ann"})
		wa := waitIn(a)
		blockedOn("fm", 1)
		wo := waitIn(o)
		blockedOn("fm", 2)
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
		a := subscribeAs("fm", pubsub.Role{Class: "jack,mary"})
		wa := waitIn(a)
		blockedOn("fm", 1)
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
