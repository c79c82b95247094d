package transport

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
)

// SubmitAll (the watchdog's renewals) hands its ops to their batchers and
// returns: they go out as one pipeline per node, never one by one inline
// in the caller's goroutine (a chunk of renewals would then cost one round
// trip per lease, in the Scheduler's goroutine).
var _ = Describe("SubmitAll on a Cluster", Label("cluster"), func() {
	It("returns before its ops are done: they are batched per node, not sent inline one by one", func() {
		rdb := startCluster(40 * time.Second) // the read timeout outlasts the BLPOP below
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		Expect(rdb.Del(ctx, "{sa}q").Err()).To(Succeed())
		before := gleak.Goroutines()
		done := make(chan struct{})
		s := NewSender(testConfig(done), rdb)

		// A call that blocks on its node until the list gets an element,
		// which is pushed only once SubmitAll has returned.
		pop := NewOp(ctx, "blpop", "{sa}q", 25)
		other := NewOp(ctx, "set", "{sa}k", "v")
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			s.SubmitAll([]*Op{pop, other})
		}()
		Eventually(returned).WithTimeout(10*time.Second).Should(BeClosed(), "SubmitAll returns while its BLPOP still blocks")
		Expect(pop.Done()).NotTo(BeClosed(), "nothing was pushed yet")

		Expect(rdb.RPush(ctx, "{sa}q", "x").Err()).To(Succeed())
		Eventually(pop.Done()).WithTimeout(20 * time.Second).Should(BeClosed())
		Eventually(other.Done()).WithTimeout(20 * time.Second).Should(BeClosed())
		Expect(pop.V).To(Equal([]any{"{sa}q", "x"}))
		Expect(other.V).To(Equal("OK"))

		close(done)
		s.Shut()
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
})
