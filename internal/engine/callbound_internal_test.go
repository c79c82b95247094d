package engine

import (
	"context"
	"errors"
	"time"

	"github.com/goredisson/goredisson/internal/transport"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A clean-up after a bounded wait (TryLock, TryAcquire with a wait) must
// get cleanupTimeout, not the wait's transport.CallGrace: context.WithoutCancel keeps
// values, so the bound has to be dropped explicitly.
var _ = Describe("a clean-up context derived from a bounded wait's context", func() {
	var bounded context.Context
	BeforeEach(func() {
		bounded = transport.BoundCalls(context.Background(), time.Now().Add(time.Second))
		_, ok := transport.CallBound(bounded)
		Expect(ok).To(BeTrue(), "the wait's context carries its bound")
	})

	DescribeTable("carries no call bound and ends only at cleanupTimeout",
		func(derive func(context.Context) (context.Context, context.CancelFunc)) {
			ctx, cancel := derive(bounded)
			defer cancel()
			_, ok := transport.CallBound(ctx)
			Expect(ok).To(BeFalse())
			d, ok := ctx.Deadline()
			Expect(ok).To(BeTrue())
			Expect(time.Until(d)).To(BeNumerically(">", cleanupTimeout-time.Second))
		},
		Entry("CleanupCtx", CleanupCtx),
		Entry("cleanupCall", func(ctx context.Context) (context.Context, context.CancelFunc) {
			c := cleanupCall(ctx)
			return c, c.stop
		}),
	)

	It("leaves a context without a bound as it is", func() {
		plain := context.Background()
		Expect(transport.Unbound(plain)).To(BeIdenticalTo(plain))
	})
})

// cleanupCall's context is built by hand (one allocation, its Done channel
// and timer only when asked for): it must still behave as a context.
var _ = Describe("cleanupCall's context", func() {
	type key struct{}
	It("keeps the values but not the end of its parent", func() {
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
		c := cleanupCall(parent)
		defer c.stop()
		cancel()
		Expect(c.Value(key{})).To(Equal("v"))
		Expect(c.Err()).To(Succeed())
		Consistently(c.Done(), "100ms").ShouldNot(BeClosed())
	})

	It("ends with context.Canceled at stop, Done asked for before or after", func() {
		before := cleanupCall(context.Background())
		done := before.Done()
		before.stop()
		Expect(done).To(BeClosed())
		Expect(before.Err()).To(MatchError(context.Canceled))

		after := cleanupCall(context.Background())
		after.stop()
		Expect(after.Done()).To(BeClosed())
		Expect(after.Err()).To(MatchError(context.Canceled))
		after.stop() // idempotent
	})

	It("ends at its deadline, with context.DeadlineExceeded", func() {
		c := &cleanupContext{values: context.Background(), deadline: time.Now().Add(50 * time.Millisecond)}
		defer c.stop()
		Eventually(c.Done(), "5s").Should(BeClosed())
		Expect(c.Err()).To(MatchError(context.DeadlineExceeded))

		late := &cleanupContext{values: context.Background(), deadline: time.Now().Add(-time.Millisecond)}
		Expect(late.Err()).To(MatchError(context.DeadlineExceeded))
		Expect(late.Done()).To(BeClosed())
	})

	It("keeps no cause of its parent's end, as context.WithoutCancel", func() {
		Expect(cancelCtxKey).NotTo(BeNil(), "the probe found package context's key")
		parent, cancel := context.WithCancelCause(context.Background())
		cancel(errors.New("the parent's"))
		c := cleanupCall(parent)
		Expect(context.Cause(c)).To(Succeed())
		c.stop()
		Expect(context.Cause(c)).To(MatchError(context.Canceled))
	})

	It("ends a context derived from it", func() {
		c := cleanupCall(context.Background())
		child, cancel := context.WithCancel(c)
		defer cancel()
		c.stop()
		Eventually(child.Done(), "5s").Should(BeClosed())
	})
})
