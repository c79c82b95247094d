package pubsub_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/pubsub"
)

// Both kinds of pub/sub (pubsub.Both): what a Client for a fleet of mixed
// Redisson releases needs. On one server (Redis 7 has sharded pub/sub
// there too) the Hub's one connection carries both subscriptions, as the
// master's connection does on a Cluster (cluster_bothkinds_spec_test.go in
// the module root runs them there). Messages are published by hand, as a
// Redisson client of either kind, or a publisher of both, would.
var _ = Describe("Hub with both kinds of pub/sub", func() {
	var (
		raw *redis.Client
		hub *pubsub.Hub
		ctx context.Context
	)
	type outcome struct {
		woken bool
		err   error
	}
	waitFor := func(s *pubsub.Sub, timeout time.Duration) chan outcome {
		ch := make(chan outcome, 1)
		go func() {
			w, err := s.Wait(ctx, timeout)
			ch <- outcome{w, err}
		}()
		return ch
	}
	waitIn := func(s *pubsub.Sub) chan outcome { return waitFor(s, -1) }
	subscribe := func(name string) *pubsub.Sub {
		GinkgoHelper()
		s, err := hub.Subscribe(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		return s
	}
	counts := func(ch string) func() [2]int64 {
		return func() [2]int64 {
			return [2]int64{raw.PubSubNumSub(ctx, ch).Val()[ch], raw.PubSubShardNumSub(ctx, ch).Val()[ch]}
		}
	}
	// twin publishes message on channel with PUBLISH and SPUBLISH in one
	// script, as goredisson's scripts do in PubSubBoth.
	twin := func(channel, message string) {
		GinkgoHelper()
		Expect(raw.Eval(ctx, "redis.call('publish', KEYS[1], ARGV[1]); redis.call('spublish', KEYS[1], ARGV[1]); return 1",
			[]string{channel}, message).Err()).To(Succeed())
	}
	// blocked waits until n Subs of channel are blocked in Wait.
	blocked := func(channel string, n int) {
		GinkgoHelper()
		Eventually(func() int { return hub.Waiters(channel) }).Should(Equal(n))
	}

	BeforeEach(func() {
		before := gleak.Goroutines()
		ctx = context.Background()
		raw = server.Client()
		rdb := server.Client()
		hub = pubsub.New(rdb, pubsub.WithLinger(0),
			pubsub.WithKindsFunc(func(context.Context) (pubsub.Kinds, error) { return pubsub.Both, nil }),
			pubsub.WithWake(func(channel, p string) int {
				if p == "1" {
					return pubsub.WakeAll
				}
				return 1
			}),
			pubsub.WithExclusive(func(channel, p string) bool { return strings.HasPrefix(channel, "lock:") && p == "0" }))
		DeferCleanup(func() {
			_ = hub.Close()
			Expect(rdb.Close()).To(Succeed())
			Expect(raw.Close()).To(Succeed())
			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
	})

	It("subscribes with SUBSCRIBE and SSUBSCRIBE, ready once both are confirmed, and unsubscribes both", func() {
		a, b := subscribe("lock:a"), subscribe("lock:b")
		Expect(counts("lock:a")()).To(Equal([2]int64{1, 1}))
		Expect(counts("lock:b")()).To(Equal([2]int64{1, 1}))
		a.Close() // lock:b keeps the connection: UNSUBSCRIBE and SUNSUBSCRIBE
		Eventually(counts("lock:a")).Should(Equal([2]int64{0, 0}))
		Expect(counts("lock:b")()).To(Equal([2]int64{1, 1}))
		// Subscribed again on the same connection: both confirmations are
		// counted after the two unsubscribe confirmations.
		a = subscribe("lock:a")
		Expect(counts("lock:a")()).To(Equal([2]int64{1, 1}))
		w := waitIn(a)
		blocked("lock:a", 1)
		Expect(raw.SPublish(ctx, "lock:a", "0").Err()).To(Succeed())
		Eventually(w).Should(Receive(Equal(outcome{true, nil})))
		b.Close()
		a.Close()
		Eventually(counts("lock:b")).Should(Equal([2]int64{0, 0}))
		Eventually(counts("lock:a")).Should(Equal([2]int64{0, 0}))
	})

	It("is woken by a classic PUBLISH and by an SPUBLISH, as from a Redisson client of either kind", func() {
		s := subscribe("lock:either")
		for _, publish := range []func() error{
			func() error { return raw.Publish(ctx, "lock:either", "0").Err() },
			func() error { return raw.SPublish(ctx, "lock:either", "0").Err() },
		} {
			w := waitIn(s)
			blocked("lock:either", 1)
			Expect(publish()).To(Succeed())
			Eventually(w).Should(Receive(Equal(outcome{true, nil})))
			s.Used()
		}
	})

	It("wakes one waiter for an unlock published with both kinds, whether the woken one has tried yet or taken the lock", func() {
		for round := range 10 {
			a, b := subscribe("lock:twin"), subscribe("lock:twin")
			wa := waitIn(a)
			blocked("lock:twin", 1)
			wb := waitFor(b, 500*time.Millisecond) // not woken: it times out
			blocked("lock:twin", 2)
			twin("lock:twin", "0")
			Eventually(wa).Should(Receive(Equal(outcome{true, nil})), "round %d", round)
			if round%2 == 1 {
				time.Sleep(20 * time.Millisecond) // the twin surely came before the attempt
			}
			a.Used() // its attempt took the lock
			a.Took()
			a.Close()
			Eventually(wb).WithTimeout(2*time.Second).Should(Receive(Equal(outcome{false, nil})), "round %d: the twin woke a second waiter", round)
			b.Close()
		}
	})

	It("wakes the same waiter again, not another, for a second unlock of the other kind after its attempt failed", func() {
		a, b := subscribe("lock:second"), subscribe("lock:second")
		wa := waitIn(a)
		blocked("lock:second", 1)
		wb := waitIn(b)
		blocked("lock:second", 2)
		Expect(raw.Publish(ctx, "lock:second", "0").Err()).To(Succeed()) // a classic Redisson client's unlock
		Eventually(wa).Should(Receive(Equal(outcome{true, nil})))
		a.Used() // its attempt failed: a sharded Redisson client had taken the lock
		wa = waitIn(a)
		blocked("lock:second", 2)
		Expect(raw.SPublish(ctx, "lock:second", "0").Err()).To(Succeed()) // that client's unlock
		Eventually(wa).Should(Receive(Equal(outcome{true, nil})), "the second unlock was lost")
		Consistently(wb).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
	})

	It("delivers a second unlock whose first waiter left without the lock", func() {
		a, b := subscribe("lock:left"), subscribe("lock:left")
		wa := waitIn(a)
		blocked("lock:left", 1)
		wb := waitIn(b)
		blocked("lock:left", 2)
		Expect(raw.Publish(ctx, "lock:left", "0").Err()).To(Succeed())
		Eventually(wa).Should(Receive(Equal(outcome{true, nil})))
		a.Used()
		a.Close() // its attempt failed, and its wait ended
		Expect(raw.SPublish(ctx, "lock:left", "0").Err()).To(Succeed())
		Eventually(wb).Should(Receive(Equal(outcome{true, nil})))
	})

	It("delivers the twin of a message that is not exclusive while a waiter it could wake has acted", func() {
		a, b := subscribe("sem:s"), subscribe("sem:s")
		wa := waitIn(a)
		blocked("sem:s", 1)
		Expect(raw.Publish(ctx, "sem:s", "0").Err()).To(Succeed()) // a release of one permit
		Eventually(wa).Should(Receive(Equal(outcome{true, nil})))
		a.Used() // a took that permit
		wb := waitIn(b)
		blocked("sem:s", 1)
		Expect(raw.SPublish(ctx, "sem:s", "0").Err()).To(Succeed()) // another release, or the twin: b may not miss it
		Eventually(wb).Should(Receive(Equal(outcome{true, nil})))
	})
})
