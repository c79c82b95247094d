package faultproxy_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/faultproxy"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

func TestFaultproxy(t *testing.T) {
	suite.Run(t, "faultproxy")
}

var _ = Describe("Proxy", func() {
	var (
		proxy *faultproxy.Proxy
		rdb   *redis.Client
		ctx   = context.Background()
	)
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() { // registered first: runs last
			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		proxy, err = faultproxy.Start(srv.Addr)
		Expect(err).NotTo(HaveOccurred())
		rdb = redis.NewClient(&redis.Options{Addr: proxy.Addr, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
		DeferCleanup(func() {
			Expect(rdb.Close()).To(Succeed())
			Expect(proxy.Close()).To(Succeed())
		})
	})

	It("relays, and adds latency to every round trip", func() {
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		proxy.SetLatency(50 * time.Millisecond)
		start := time.Now()
		Expect(rdb.Set(ctx, "k", "v", 0).Err()).To(Succeed())
		Expect(time.Since(start)).To(BeNumerically(">=", 100*time.Millisecond), "50 ms each way")
		proxy.SetLatency(0)
		Expect(rdb.Get(ctx, "k").Val()).To(Equal("v"))
	})

	It("loses responses of commands that ran, then resets those connections", func() {
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		proxy.DropResponses(true)
		err := rdb.Set(ctx, "ran", "yes", 0).Err()
		Expect(err).To(HaveOccurred(), "the reply never came")
		proxy.DropResponses(false)
		Expect(rdb.Get(ctx, "ran").Val()).To(Equal("yes"), "the command ran")
		Expect(proxy.Stats().DroppedBytes).To(BeNumerically(">", 0))
	})

	It("cuts clients off during a partition and lets them back after", func() {
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		proxy.Partition(true)
		Expect(rdb.Set(ctx, "cut", "1", 0).Err()).To(HaveOccurred())
		Expect(rdb.Ping(ctx).Err()).To(HaveOccurred(), "new connections hang too")
		proxy.Partition(false)
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		Expect(rdb.Exists(ctx, "cut").Val()).To(BeZero(), "the request never reached Redis")
	})

	It("resets connections on demand", func() {
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		proxy.ResetConnections()
		Eventually(func() error { return rdb.Ping(ctx).Err() }).Should(Succeed())
		Expect(proxy.Stats().Accepted).To(BeNumerically(">=", 2))
	})

	// A reset while the proxy dials the server for a new connection: the
	// race detector saw the dial's result and the reset's close meet (a
	// loaded CI run); the proxy must close the late server end too.
	It("resets connections while new ones are being made", func() {
		stop := make(chan struct{})
		resets := make(chan struct{})
		go func() {
			defer close(resets)
			for {
				select {
				case <-stop:
					return
				default:
					proxy.ResetConnections()
				}
			}
		}()
		made := 0
		for range 300 {
			// A reset can meet the connect itself (connection reset by
			// peer): only the connections made count.
			if c, err := net.Dial("tcp", proxy.Addr); err == nil {
				made++
				_ = c.Close()
			}
		}
		Expect(made).To(BeNumerically(">", 0))
		Eventually(func() int { return proxy.Stats().Accepted }).WithTimeout(20 * time.Second).Should(BeNumerically(">=", made))
		close(stop)
		<-resets
	})
})
