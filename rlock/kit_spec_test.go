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

// Frictions a new user meets (issue 33, item 4).
var _ = Describe("Client.Close twice", func() {
	It("returns nil the second time, as DeferCleanup(client.Close) after an explicit Close needs", func() {
		e := spectest.NewEnv()
		c := e.Client()
		lock := c.NewLock(spectest.UniqueName("close-twice"))
		Expect(c.Close()).To(Succeed())
		Expect(c.Close()).To(Succeed(), "a second Close is a no-op")
		Expect(lock.Lock(context.Background())).To(MatchError(rlock.ErrClosed), "calls after Close still fail")
	})
})

var _ = Describe("DoWait", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("waits until the lock is free, runs fn holding it, and unlocks", func() {
		c := e.Client()
		name := spectest.UniqueName("dowait")
		holder := ctxowner.New(ctx)
		Expect(c.NewLock(name).Lock(holder)).To(Succeed())
		done := make(chan error, 1)
		ran := make(chan struct{})
		go func() {
			done <- rlock.DoWait(ctx, c.NewLock(name), 0, func(held context.Context) error {
				close(ran)
				return held.Err()
			})
		}()
		Consistently(ran).WithTimeout(300*time.Millisecond).ShouldNot(BeClosed(), "fn waits while another owner holds the lock")
		Expect(c.NewLock(name).Unlock(holder)).To(Succeed())
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(Succeed()))
		Expect(ran).To(BeClosed())
		Expect(c.NewLock(name).IsLocked(ctx)).To(BeFalse(), "DoWait unlocked")
	})

	It("gives up when ctx ends, without running fn", func() {
		c := e.Client()
		name := spectest.UniqueName("dowait-ctx")
		Expect(c.NewLock(name).Lock(ctxowner.New(ctx))).To(Succeed())
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		ran := false
		err := rlock.DoWait(wctx, c.NewLock(name), 0, func(context.Context) error { ran = true; return nil })
		Expect(err).To(MatchError(context.DeadlineExceeded))
		Expect(ran).To(BeFalse())
	})

	It("refuses a nil lock, function or context", func() {
		c := e.Client()
		Expect(rlock.DoWait(ctx, nil, 0, func(context.Context) error { return nil })).To(MatchError(rlock.ErrInvalidArgument))
		Expect(rlock.DoWait(ctx, c.NewLock("x"), 0, nil)).To(MatchError(rlock.ErrInvalidArgument))
		var nilCtx context.Context
		Expect(rlock.DoWait(nilCtx, c.NewLock("x"), 0, func(context.Context) error { return nil })).To(MatchError(rlock.ErrInvalidArgument))
	})
})

var _ = Describe("A fixed lease left to run out", func() {
	It("is logged at Debug, not as a warning", Label("slow"), func() {
		e := spectest.NewEnv()
		log, out := bufferLogger()
		c := e.Client(rlock.WithLogger(log))
		ctx := ctxowner.New(context.Background())
		fixed := c.NewLock(spectest.UniqueName("fixed-ends"))
		Expect(fixed.LockLease(ctx, 1500*time.Millisecond)).To(Succeed())
		held, stop := rlock.LostContext(ctx, fixed)
		defer stop()
		Eventually(held.Done()).WithTimeout(6 * time.Second).Should(BeClosed())
		Eventually(out.String).Should(ContainSubstring("fixed lease ended"))
		Expect(out.String()).NotTo(ContainSubstring("level=WARN"))
	})
})
