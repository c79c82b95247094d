package rlock_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Redisson's object listeners on a lock (RObservable, 3.43.0+) and on the
// synchronizers (RObject): DeletedObjectListener and ExpiredObjectListener,
// fed by keyevent notifications.

var _ = Describe("Listen, Redisson's addListener(Deleted/ExpiredObjectListener)", func() {
	var (
		e   *spectest.Env
		ctx context.Context
		c   *rlock.Client
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = ctxowner.New(context.Background())
		was := e.Raw.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]
		Expect(e.Raw.ConfigSet(ctx, "notify-keyspace-events", "Egx").Err()).To(Succeed())
		DeferCleanup(func() {
			Expect(spectest.Server().Client().ConfigSet(context.Background(), "notify-keyspace-events", was).Err()).To(Succeed())
		})
		c = e.Client()
	})

	// collect returns a listener that sends its events to the channel.
	collect := func() (chan rlock.KeyEvent, func(rlock.KeyEvent)) {
		events := make(chan rlock.KeyEvent, 16)
		return events, func(ev rlock.KeyEvent) { events <- ev }
	}

	It("delivers one deleted event for an unlock and one expired event for a lease that ran out", Label("slow"), func() {
		lock := c.NewLock("listen-lock")
		other := c.NewLock("listen-other")
		events, fn := collect()
		stop, err := lock.Listen(ctx, fn)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)

		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		Expect(other.Lock(ctx)).To(Succeed())
		Expect(other.Unlock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(events).WithTimeout(5 * time.Second).Should(Receive(Equal(rlock.KeyEvent{Name: "listen-lock"})))
		Consistently(events, 500*time.Millisecond).ShouldNot(Receive(), "one event: a partial unlock and another lock's unlock deliver none")

		Expect(lock.LockLease(ctxowner.New(ctx), 1500*time.Millisecond)).To(Succeed())
		Eventually(events).WithTimeout(10 * time.Second).Should(Receive(Equal(rlock.KeyEvent{Name: "listen-lock", Expired: true})))
		Consistently(events, 500*time.Millisecond).ShouldNot(Receive())
	})

	It("delivers a force unlock, a fenced lock's, a semaphore's and a latch's events", func() {
		fenced := c.NewFencedLock("listen-fenced")
		sem := c.NewSemaphore("listen-sem")
		fevents, ffn := collect()
		sevents, sfn := collect()
		stopF, err := fenced.Listen(ctx, ffn)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stopF)
		stopS, err := sem.Listen(ctx, sfn)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stopS)

		_, err = fenced.LockToken(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(fenced.ForceUnlock(ctx)).To(BeTrue())
		Eventually(fevents).WithTimeout(5 * time.Second).Should(Receive(Equal(rlock.KeyEvent{Name: "listen-fenced"})))

		Expect(sem.TrySetPermitsTTL(ctx, 1, 100*time.Millisecond)).To(BeTrue())
		Eventually(sevents).WithTimeout(10 * time.Second).Should(Receive(Equal(rlock.KeyEvent{Name: "listen-sem", Expired: true})))
		Consistently(fevents, 300*time.Millisecond).ShouldNot(Receive())

		latch := c.NewCountDownLatch("listen-latch")
		levents, lfn := collect()
		stopL, err := latch.Listen(ctx, lfn)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stopL)
		Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
		Expect(latch.CountDown(ctx)).To(Succeed())
		Eventually(levents).WithTimeout(5*time.Second).Should(Receive(Equal(rlock.KeyEvent{Name: "listen-latch"})), "the last countDown deletes the key")
	})

	It("ends with stop, with ctx and with Close: no event after, no goroutine left", func() {
		lock := c.NewLock("listen-stop")
		Expect(lock.Lock(ctx)).To(Succeed()) // the Client's own goroutines start before the snapshot
		Expect(lock.Unlock(ctx)).To(Succeed())
		before := gleak.Goroutines()

		events, fn := collect()
		stop, err := lock.Listen(ctx, fn)
		Expect(err).NotTo(HaveOccurred())
		lctx, cancel := context.WithCancel(ctx)
		byCtx, fnCtx := collect()
		_, err = lock.Listen(lctx, fnCtx)
		Expect(err).NotTo(HaveOccurred())

		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(events).WithTimeout(5 * time.Second).Should(Receive())
		Eventually(byCtx).WithTimeout(5 * time.Second).Should(Receive())

		stop()
		stop() // a second stop is harmless
		cancel()
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		Eventually(func() int64 { return e.Raw.PubSubNumPat(ctx).Val() }).Should(BeZero(), "the subscriptions are gone")

		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		Consistently(events, 500*time.Millisecond).ShouldNot(Receive())
		Expect(byCtx).NotTo(Receive())

		closing := e.Client()
		byClose, fnClose := collect()
		_, err = closing.NewLock("listen-stop").Listen(ctx, fnClose)
		Expect(err).NotTo(HaveOccurred())
		Expect(closing.Close()).To(Succeed())
		Eventually(func() int64 { return e.Raw.PubSubNumPat(ctx).Val() }).WithTimeout(5 * time.Second).Should(BeZero())
		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		Consistently(byClose, 300*time.Millisecond).ShouldNot(Receive())
	})

	It("lets fn call stop: delivery ends after that event", func() {
		lock := c.NewLock("listen-self-stop")
		events := make(chan rlock.KeyEvent, 4)
		var stop func()
		ready := make(chan struct{})
		stop, err := lock.Listen(ctx, func(ev rlock.KeyEvent) {
			<-ready
			events <- ev
			stop()
		})
		Expect(err).NotTo(HaveOccurred())
		close(ready)
		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(events).WithTimeout(5 * time.Second).Should(Receive())
		Eventually(func() int64 { return e.Raw.PubSubNumPat(ctx).Val() }).WithTimeout(5 * time.Second).Should(BeZero())
		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		Consistently(events, 300*time.Millisecond).ShouldNot(Receive())
		stop() // and again from outside, after it ended
	})

	It("fails with errors.ErrUnsupported when Redis does not notify deletions and expiries", func() {
		Expect(e.Raw.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err()).To(Succeed())
		_, err := c.NewLock("listen-off").Listen(ctx, func(rlock.KeyEvent) {})
		Expect(err).To(MatchError(errors.ErrUnsupported))
		Expect(err.Error()).To(ContainSubstring("notify-keyspace-events"))
		Expect(e.Raw.PubSubNumPat(ctx).Val()).To(BeZero())
	})

	It("refuses a nil listener", func() {
		_, err := c.NewLock("listen-nil").Listen(ctx, nil)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})
})
