package pubsub

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// A spec for the race detector: it fails under -race only, when a
// connection's dead flag is read outside Hub.mu.
var _ = Describe("a subscription connection given up while a new channel looks it up", func() {
	It("is looked up under the Hub's lock (go test -race)", func() {
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		before := gleak.Goroutines()
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
		h := New(rdb)
		DeferCleanup(func() {
			_ = h.Close()
			Expect(rdb.Close()).To(Succeed())
			Eventually(gleak.Goroutines).WithTimeout(5 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		h.sendMu <- struct{}{}
		c, err := h.connFor("", rdb)
		h.unlockSend()
		Expect(err).NotTo(HaveOccurred())

		// The connection's reader gives it up (as on a read error) while
		// a subscriber finds it in the Hub: nothing but Hub.mu orders the
		// two, and the give-up comes after the lookup's critical section.
		lost := make(chan struct{})
		go func() {
			defer close(lost)
			time.Sleep(100 * time.Millisecond) // after the lookup below; not a sync
			h.lost(c, errors.New("connection failed (staged)"))
		}()
		h.sendMu <- struct{}{}
		got, err := h.connFor("", rdb)
		h.unlockSend()
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(BeIdenticalTo(c), "alive when looked up")
		Eventually(lost).Should(BeClosed())
		h.mu.Lock()
		dead := c.dead
		h.mu.Unlock()
		Expect(dead).To(BeTrue())
	})
})
