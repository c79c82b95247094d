package engine

import (
	"context"
	"time"

	"github.com/goredisson/goredisson/internal/transport"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"
)

// Close ends the Client's goroutines at once: an idle batch flusher waits
// flusherIdle for the next call, and must not outlive Close by that long.
// Here the wait is an hour, so that only Close can end it.
var _ = Describe("Core.Close", func() {
	It("ends an idle batch flusher at once, not when its idle wait runs out", func() {
		rdb := redis.NewClient(&redis.Options{Addr: specServerAddr})
		DeferCleanup(rdb.Close)
		Expect(rdb.Ping(context.Background()).Err()).To(Succeed())
		before := gleak.Goroutines()
		c := New(rdb, testConfig())
		c.send.SetIdle(time.Hour)
		// Calls that queue (as a watchdog's renewals do) start the flusher;
		// an uncontended call would go inline (inline_internal_test.go).
		ctx := context.Background()
		o := transport.NewOp(ctx, "ping")
		c.send.SubmitAll([]*transport.Op{o})
		Eventually(o.Done()).WithTimeout(10 * time.Second).Should(BeClosed())
		Eventually(gleak.Goroutines).WithTimeout(10*time.Second).Should(ContainElement(gleak.IgnoringTopFunction("github.com/goredisson/goredisson/internal/transport.(*batcher).loop")), "the flusher waits for the next call")
		Expect(c.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
})
