package rlock

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"
)

// An uncontended call goes out in its caller's goroutine (issue 32 item 1):
// no flusher goroutine is started for it, so the call costs no goroutine
// hand-off; calls that queue still go through the flusher.
var _ = Describe("The inline transport", func() {
	It("sends an uncontended Lock and Unlock in the caller's goroutine, starting no flusher", func() {
		rdb := redis.NewClient(&redis.Options{Addr: specServerAddr})
		DeferCleanup(rdb.Close)
		before := gleak.Goroutines()
		c, err := NewClient(rdb)
		Expect(err).NotTo(HaveOccurred())
		c.send.SetIdle(time.Hour) // a flusher, once started, stays
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l := c.NewLock("inline-uncontended")
		for range 20 {
			Expect(l.Lock(ctx)).To(Succeed())
			Expect(l.Unlock(ctx)).To(Succeed())
		}
		Expect(gleak.Goroutines()).NotTo(ContainElement(gleak.IgnoringTopFunction("github.com/goredisson/goredisson/internal/transport.(*batcher).loop")), "no flusher was started")
		Expect(c.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
})
