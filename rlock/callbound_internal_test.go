package rlock

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A clean-up after a bounded wait (TryLock, TryAcquire with a wait) must
// get cleanupTimeout, not the wait's callGrace: context.WithoutCancel keeps
// values, so the bound has to be dropped explicitly.
var _ = Describe("a clean-up context derived from a bounded wait's context", func() {
	var bounded context.Context
	BeforeEach(func() {
		bounded = boundCalls(context.Background(), time.Now().Add(time.Second))
		_, ok := callBound(bounded)
		Expect(ok).To(BeTrue(), "the wait's context carries its bound")
	})

	DescribeTable("carries no call bound and ends only at cleanupTimeout",
		func(derive func(context.Context) (context.Context, context.CancelFunc)) {
			ctx, cancel := derive(bounded)
			defer cancel()
			_, ok := callBound(ctx)
			Expect(ok).To(BeFalse())
			d, ok := ctx.Deadline()
			Expect(ok).To(BeTrue())
			Expect(time.Until(d)).To(BeNumerically(">", cleanupTimeout-time.Second))
		},
		Entry("cleanupCtx", cleanupCtx),
		Entry("cleanupCall", cleanupCall),
	)

	It("leaves a context without a bound as it is", func() {
		plain := context.Background()
		Expect(unbound(plain)).To(BeIdenticalTo(plain))
	})
})
