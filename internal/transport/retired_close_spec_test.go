package transport

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"
)

// Close ends every call in flight inline, also one on the lane of a
// batcher that was retired (go-redis replaced its node's client) while the
// call was in flight: its caller does the I/O, so only a cut ends it.
var _ = Describe("Close and a retired inline lane", Label("cluster"), func() {
	It("cuts the call in flight on a retired lane", func() {
		rdb := startCluster(40 * time.Second) // the read timeout outlasts the BLPOP below
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		node, err := rdb.MasterForKey(ctx, "{rc}q")
		Expect(err).NotTo(HaveOccurred())
		Expect(rdb.Del(ctx, "{rc}q").Err()).To(Succeed())
		before := gleak.Goroutines()
		done := make(chan struct{})
		s := NewSender(testConfig(done), rdb)
		addr := node.Options().Addr

		pop := NewOp(ctx, "blpop", "{rc}q", 25)
		popped := make(chan error, 1)
		go func() { popped <- s.Exec(ctx, pop) }()
		inlineBatcher(s, addr) // its call is in flight inline

		fresh := redis.NewClient(&redis.Options{Addr: addr})
		s.batcherFor(fresh, addr) // the old batcher is retired, its call still in flight

		expectCutByClose(s, done, popped, node, "{rc}q")
		Expect(fresh.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(20 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
})
