package pubsub_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/pubsub"
)

func TestPubsub(t *testing.T) {
	suite.RunParallel(t, "pubsub", 2)
}

var server *redistest.Server

var _ = BeforeSuite(func() {
	var err error
	server, err = redistest.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(server.Close)
})

var _ = Describe("Hub", func() {
	var (
		raw *redis.Client
		hub *pubsub.Hub
		ctx context.Context
	)
	numSub := func(ch string) func() int64 {
		return func() int64 { return raw.PubSubNumSub(ctx, ch).Val()[ch] }
	}
	// waitIn starts a Wait on s and returns the channel of its outcome.
	type outcome struct {
		woken bool
		err   error
	}
	waitIn := func(s *pubsub.Sub, timeout time.Duration) chan outcome {
		ch := make(chan outcome, 1)
		go func() {
			w, err := s.Wait(ctx, timeout)
			ch <- outcome{w, err}
		}()
		return ch
	}
	subscribe := func(name string) *pubsub.Sub {
		s, err := hub.Subscribe(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		return s
	}

	BeforeEach(func() {
		before := gleak.Goroutines()
		ctx = context.Background()
		raw = server.Client()
		rdb := server.Client()
		hub = pubsub.New(rdb, pubsub.WithLinger(0), pubsub.WithWake(func(channel, p string) int {
			switch {
			case p == "1":
				return pubsub.WakeAll
			case strings.HasPrefix(channel, "n:"):
				n, _ := strconv.Atoi(p)
				return n
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

	It("returns from Subscribe only once Redis has confirmed, and delivers messages to the channel's waiters", func() {
		s := subscribe("c1")
		Expect(numSub("c1")()).To(BeEquivalentTo(1))
		w := waitIn(s, -1)
		Eventually(func() int { return hub.Waiters("c1") }).Should(Equal(1))
		Expect(raw.Publish(ctx, "c1", "0").Val()).To(BeEquivalentTo(1))
		Eventually(w).Should(Receive(Equal(outcome{true, nil})))
	})

	It("shares one subscription among many Subs and unsubscribes after the last leaves", func() {
		subs := []*pubsub.Sub{subscribe("shared"), subscribe("shared"), subscribe("shared")}
		Expect(numSub("shared")()).To(BeEquivalentTo(1))
		Expect(hub.Channels()).To(Equal(map[string]int{"shared": 3}))
		subs[0].Close()
		subs[1].Close()
		Consistently(numSub("shared")).WithTimeout(100 * time.Millisecond).Should(BeEquivalentTo(1))
		subs[2].Close()
		subs[2].Close() // idempotent
		Eventually(numSub("shared")).Should(BeZero())
		Expect(hub.Channels()).To(BeEmpty())
	})

	It("keeps a channel subscribed for the linger and reuses it", func() {
		lh := pubsub.New(raw, pubsub.WithLinger(300*time.Millisecond))
		DeferCleanup(lh.Close)
		s, err := lh.Subscribe(ctx, "lingering")
		Expect(err).NotTo(HaveOccurred())
		s.Close()
		Consistently(numSub("lingering")).WithTimeout(150 * time.Millisecond).Should(BeEquivalentTo(1))
		s, err = lh.Subscribe(ctx, "lingering") // reused: no new SUBSCRIBE needed
		Expect(err).NotTo(HaveOccurred())
		s.Close()
		Eventually(numSub("lingering")).WithTimeout(time.Second).Should(BeZero())
	})

	It("wakes one waiter per message, longest-waiting first", func() {
		var outs []chan outcome
		for i := range 3 {
			outs = append(outs, waitIn(subscribe("fifo"), -1))
			Eventually(func() int { return hub.Waiters("fifo") }).Should(Equal(i + 1))
		}
		for i := range 3 {
			raw.Publish(ctx, "fifo", "0")
			Eventually(outs[i]).Should(Receive(Equal(outcome{true, nil})))
			for _, later := range outs[i+1:] {
				Consistently(later).WithTimeout(50 * time.Millisecond).ShouldNot(Receive())
			}
		}
	})

	It("wakes every waiter for a wake-all message, and none of another channel", func() {
		var outs []chan outcome
		for range 3 {
			outs = append(outs, waitIn(subscribe("all"), -1))
		}
		other := waitIn(subscribe("other"), -1)
		Eventually(func() int { return hub.Waiters("all") }).Should(Equal(3))
		raw.Publish(ctx, "all", "1")
		for _, o := range outs {
			Eventually(o).Should(Receive(Equal(outcome{true, nil})))
		}
		Consistently(other).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
	})

	It("wakes as many waiters as a message asks for, and keeps the rest as permits for Subs not yet waiting", func() {
		subs := []*pubsub.Sub{subscribe("n:sem"), subscribe("n:sem"), subscribe("n:sem"), subscribe("n:sem")}
		w0, w1 := waitIn(subs[0], -1), waitIn(subs[1], -1)
		Eventually(func() int { return hub.Waiters("n:sem") }).Should(Equal(2))
		raw.Publish(ctx, "n:sem", "3") // three permits: two blocked waiters and one Sub about to wait
		Eventually(w0).Should(Receive(Equal(outcome{true, nil})))
		Eventually(w1).Should(Receive(Equal(outcome{true, nil})))
		Expect(subs[2].Wait(ctx, time.Second)).To(BeTrue())
		Expect(subs[3].Wait(ctx, 50*time.Millisecond)).To(BeFalse(), "no more than the message said")
		for _, s := range subs {
			s.Used()
		}
	})

	It("keeps a wake that found nobody waiting for the next Wait", func() {
		s := subscribe("permit")
		raw.Publish(ctx, "permit", "0")
		Eventually(func() (bool, error) { return s.Wait(ctx, 0) }).Should(BeTrue())
	})

	It("passes a wake on when a Sub closes without using it", func() {
		a, b := subscribe("pass"), subscribe("pass")
		// A wake-all reaches a while it is not waiting (in the lock: its
		// ctx ended as the message came) and b, which uses its wake.
		raw.Publish(ctx, "pass", "1")
		Eventually(func() (bool, error) { return b.Wait(ctx, 0) }).Should(BeTrue())
		Expect(b.Wait(ctx, 0)).To(BeFalse(), "no wake is left for b")
		a.Close()
		Expect(b.Wait(ctx, 0)).To(BeTrue(), "a's unused wake was passed on")
	})

	It("hands a wake on when the waiter it woke leaves without using it", func() {
		a, b := subscribe("handon"), subscribe("handon")
		wa := waitIn(a, -1)
		Eventually(func() int { return hub.Waiters("handon") }).Should(Equal(1))
		wb := waitIn(b, -1)
		Eventually(func() int { return hub.Waiters("handon") }).Should(Equal(2))
		raw.Publish(ctx, "handon", "0")
		Eventually(wa).Should(Receive(Equal(outcome{true, nil})), "the longest waiter is woken")
		Consistently(wb).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
		// a's caller left (its ctx ended) before its next attempt reached
		// Redis: the one wake of that unlock goes to b.
		a.Close()
		Eventually(wb).Should(Receive(Equal(outcome{true, nil})))
	})

	It("lets a new waiter queue only behind waiters that try, never two newcomers behind each other", func() {
		first := subscribe("queue")
		// Two newcomers arrive together on a subscribed channel.
		a, b := hub.SubscribeIfReady("queue"), hub.SubscribeIfReady("queue")
		Expect(a).NotTo(BeNil())
		Expect(b).NotTo(BeNil())
		DeferCleanup(a.Close)
		DeferCleanup(b.Close)
		first.Close()
		// a finds b, which has not queued (so it will try): a queues behind
		// it. b then finds only a newcomer, and must try itself.
		Expect(a.QueueBehind()).To(BeTrue())
		Expect(b.QueueBehind()).To(BeFalse())
		// Once a has made its attempt, it is one to queue behind.
		c := hub.SubscribeIfReady("queue")
		DeferCleanup(c.Close)
		b.Close()
		Expect(c.QueueBehind()).To(BeFalse())
		a.Tried()
		d := hub.SubscribeIfReady("queue")
		DeferCleanup(d.Close)
		Expect(d.QueueBehind()).To(BeTrue())
	})

	It("keeps a used wake: a waiter that tried does not wake another", func() {
		a, b := subscribe("used"), subscribe("used")
		wa := waitIn(a, -1)
		Eventually(func() int { return hub.Waiters("used") }).Should(Equal(1))
		wb := waitIn(b, -1)
		Eventually(func() int { return hub.Waiters("used") }).Should(Equal(2))
		raw.Publish(ctx, "used", "0")
		Eventually(wa).Should(Receive(Equal(outcome{true, nil})))
		a.Used()
		a.Close()
		Consistently(wb).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
	})

	It("does not take a wake once ctx has ended, and hands it on at Close", func() {
		a, b := subscribe("late"), subscribe("late")
		raw.Publish(ctx, "late", "1") // reaches both, neither waiting
		Eventually(func() (bool, error) { return b.Wait(ctx, 0) }).Should(BeTrue())
		b.Used()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := a.Wait(cctx, -1)
		Expect(err).To(MatchError(context.Canceled))
		a.Close()
		Expect(b.Wait(ctx, 0)).To(BeTrue(), "a's wake went to b")
	})

	It("refuses a redis.Ring with ErrUnsupported instead of panicking", func() {
		ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": server.Addr}})
		DeferCleanup(ring.Close)
		h := pubsub.New(ring)
		DeferCleanup(h.Close)
		_, err := h.Subscribe(ctx, "ring")
		Expect(err).To(MatchError(pubsub.ErrUnsupported))
	})

	// hangable returns a Hub on a client without read timeouts and the
	// server it uses, which a spec may pause.
	hangable := func() (*pubsub.Hub, *redistest.Server) {
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: -1})
		DeferCleanup(rdb.Close)
		return pubsub.New(rdb), srv
	}

	It("closes within its bound while the server hangs", func() {
		h, srv := hangable()
		s, err := h.Subscribe(ctx, "hung")
		Expect(err).NotTo(HaveOccurred())
		w := waitIn(s, -1)
		Expect(srv.Pause()).To(Succeed())
		DeferCleanup(srv.Resume)
		start := time.Now()
		Expect(h.Close()).To(Succeed())
		Expect(time.Since(start)).To(BeNumerically("<", 100*time.Millisecond))
		Eventually(w).WithTimeout(100 * time.Millisecond).Should(Receive(Equal(outcome{false, pubsub.ErrClosed})))
		s.Close()
	})

	It("closes within its bound while a first SUBSCRIBE is stuck on a hung server", func() {
		h, srv := hangable()
		Expect(srv.Pause()).To(Succeed())
		DeferCleanup(srv.Resume)
		subscribed := make(chan error, 1)
		go func() {
			_, err := h.Subscribe(ctx, "stuck") // dials, says HELLO and SUBSCRIBE to a server that never answers
			subscribed <- err
		}()
		Consistently(subscribed).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
		start := time.Now()
		Expect(h.Close()).To(Succeed())
		Expect(time.Since(start)).To(BeNumerically("<", 100*time.Millisecond))
		Eventually(subscribed).WithTimeout(100 * time.Millisecond).Should(Receive(MatchError(pubsub.ErrClosed)))
	})

	It("ends a Wait at its timeout, at ctx's end and at Close", func() {
		s := subscribe("ends")
		Expect(s.Wait(ctx, 50*time.Millisecond)).To(BeFalse())
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			defer GinkgoRecover()
			Eventually(func() int { return hub.Waiters("ends") }).Should(Equal(1))
			cancel()
		}()
		_, err := s.Wait(cctx, -1)
		Expect(err).To(MatchError(context.Canceled))
		w := waitIn(s, -1)
		Eventually(func() int { return hub.Waiters("ends") }).Should(Equal(1))
		Expect(hub.Close()).To(Succeed())
		Eventually(w).Should(Receive(Equal(outcome{false, pubsub.ErrClosed})))
		_, err = hub.Subscribe(ctx, "ends")
		Expect(err).To(MatchError(pubsub.ErrClosed))
		Expect(hub.Close()).To(MatchError(pubsub.ErrClosed))
	})

	It("gives up a Subscribe when ctx ends first and keeps nothing", func() {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := hub.Subscribe(cctx, "never")
		Expect(err).To(MatchError(context.Canceled))
		Eventually(hub.Channels).Should(BeEmpty())
		Eventually(numSub("never")).Should(BeZero())
	})

	It("subscribes again once a server that went away is back, however many dials failed meanwhile", Label("slow"), func() {
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
		DeferCleanup(rdb.Close)
		h := pubsub.New(rdb)
		DeferCleanup(h.Close)
		s, err := h.Subscribe(ctx, "back")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		w := waitIn(s, -1)
		Expect(srv.Stop()).To(Succeed())
		time.Sleep(700 * time.Millisecond) // several dials fail
		Expect(srv.Start()).To(Succeed())
		// Subscribed again (and woken: messages sent meanwhile are lost).
		Eventually(w).WithTimeout(5 * time.Second).Should(Receive(Equal(outcome{true, nil})))
		c := srv.Client()
		DeferCleanup(c.Close)
		Eventually(func() int64 { return c.PubSubNumSub(ctx, "back").Val()["back"] }).WithTimeout(5 * time.Second).Should(BeEquivalentTo(1))
		w = waitIn(s, -1)
		Eventually(func() int { return h.Waiters("back") }).Should(Equal(1))
		c.Publish(ctx, "back", "0")
		Eventually(w).Should(Receive(Equal(outcome{true, nil})))
	})

	It("wakes waiters at once and re-subscribes when the subscription connection is killed", func() {
		s := subscribe("reconnect")
		w := waitIn(s, -1)
		Eventually(func() int { return hub.Waiters("reconnect") }).Should(Equal(1))
		Expect(raw.ClientKillByFilter(ctx, "TYPE", "pubsub").Val()).To(BeEquivalentTo(1))
		Eventually(w).WithTimeout(5 * time.Second).Should(Receive(Equal(outcome{true, nil})))
		Eventually(numSub("reconnect")).WithTimeout(5 * time.Second).Should(BeEquivalentTo(1))
		w = waitIn(s, -1)
		Eventually(func() int { return hub.Waiters("reconnect") }).Should(Equal(1))
		raw.Publish(ctx, "reconnect", "0")
		Eventually(w).Should(Receive(Equal(outcome{true, nil})))
	})
})
