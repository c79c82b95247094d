package rlock_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// A wait's call bound (a call made for a TryLock is given up callGrace past
// the wait's end) must not carry over into the clean-up after the wait: a
// fair waiter whose wait ran out while Redis hangs still leaves the queue
// once Redis answers, within cleanupTimeout, instead of giving up 250 ms
// later with a warning.
var _ = Describe("a clean-up after a bounded wait", Label("fault"), func() {
	It("is not given up at the wait's call bound: a fair waiter whose wait ran out while Redis hung leaves the queue once Redis answers", func() {
		srv := spectest.StartServers(1)[0]
		log, out := bufferLogger()
		ca, raw := spectest.ClientAndRedis(srv.Addr)
		cb, _ := spectest.ClientAndRedis(srv.Addr, rlock.WithLogger(log))
		name := spectest.UniqueName("fair-bound")
		holder, waiter := ctxowner.New(context.Background()), ctxowner.New(context.Background())
		Expect(ca.NewFairLock(name).Lock(holder)).To(Succeed())
		DeferCleanup(func() { _ = ca.NewFairLock(name).Unlock(holder) })

		type result struct {
			ok   bool
			err  error
			took time.Duration
		}
		done := make(chan result, 1)
		go func() {
			defer GinkgoRecover()
			start := time.Now()
			ok, err := cb.NewFairLock(name).TryLock(waiter, 2*time.Second, 0)
			done <- result{ok, err, time.Since(start)}
		}()
		queue := "redisson_lock_queue:{" + name + "}"
		Eventually(func() int64 { return raw.LLen(context.Background(), queue).Val() }).
			WithTimeout(5*time.Second).Should(BeEquivalentTo(1), "the waiter is queued")

		Expect(srv.Pause()).To(Succeed())
		resumed := false
		DeferCleanup(func() {
			if !resumed {
				_ = srv.Resume()
			}
		})
		var r result
		Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&r))
		Expect(r.ok).To(BeFalse())
		Expect(r.took).To(BeNumerically("<", 4*time.Second), "the wait (2 s) is not held up by its clean-up")
		// Without the fix the background leave was given up 250 ms past
		// the wait's end, with a warning; with it, it waits up to 5 s.
		Consistently(out.String).WithTimeout(1500 * time.Millisecond).ShouldNot(ContainSubstring("level=WARN"))
		Expect(srv.Resume()).To(Succeed())
		resumed = true
		Eventually(func() int64 { return raw.LLen(context.Background(), queue).Val() }).
			WithTimeout(5*time.Second).Should(BeZero(), "the waiter left the queue")
		Expect(out.String()).NotTo(ContainSubstring("level=WARN"))
	})
})
