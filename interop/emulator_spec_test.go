package interop_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// The emulator suite: no Java, runs with every `go test ./...`.
var _ = Describe("goredisson and the Redisson emulator", func() {
	interopSpecs(emulated, false)

	Context("goredisson's messages are Redisson's", func() {
		var w *world
		BeforeEach(func() { w = newWorld(emulated) })
		for _, c := range msgCases {
			It(c.what, func() { publishes(w, c.msgCase, false) })
		}
	})

	// The same table the probe suite checks on the real Redisson: the
	// emulator's restated scripts publish what Redisson publishes.
	Context("the emulator's own messages", func() {
		var w *world
		BeforeEach(func() { w = newWorld(emulated) })
		for _, c := range msgCases {
			It(c.what, func() { publishes(w, c.msgCase, true) })
		}
	})

	// Redisson's testAbandonedTimeoutDrift_Descrete, across clients: a
	// waiter that vanished (its process died after it queued) keeps its
	// place until its timeout passes, then is purged, and the waiter behind
	// it gets the lock then, without any message.
	It("purges a vanished Redisson waiter once its timeout passes; the goredisson waiter behind it gets the lock then, not before", Label("slow"), func() {
		w := newWorld(emulated)
		r := w.j.(*emuSide).r
		name := lockName("ghost")
		holder := ctxowner.New(w.ctx)
		Expect(w.g.NewFairLock(name).TryLock(holder, 0, time.Second)).To(BeTrue())
		ghost := r.getFairLock(name)
		// One attempt of a tryLock(1 s) whose process then died: no retry,
		// no give-up.
		held, _, _, err := ghost.attempt(w.ctx, r.thread(), time.Second, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(held).To(BeFalse())
		q, scores := w.fairQueue(name)
		Expect(q).To(HaveLen(1))
		timeout := time.UnixMilli(scores[q[0]])
		owner, field := w.owner("")
		got := w.goAcquire(func() error { return w.g.NewFairLock(name).Lock(owner) })
		w.awaitQueued(name, field)
		a := received(got, 5*time.Second, "the goredisson waiter behind the vanished one")
		Expect(a.at).To(BeTemporally(">", timeout.Add(-20*time.Millisecond)), "got the lock before the vanished waiter's timeout passed")
		expectWake("emulator", "FairLock: a vanished Redisson waiter's timeout passes, the goredisson waiter behind it in after (ms past the timeout)", a.at.Sub(timeout))
		Expect(w.g.NewFairLock(name).Unlock(owner)).To(Succeed())
	})

	// LockPubSub keeps the permit of a "0" that arrives while no thread is
	// blocked yet; a "1" reaches only threads blocked at that moment. So a
	// release that must wake one waiter has to publish "0", or a Redisson
	// waiter caught between its attempt and its wait sleeps a whole lease.
	DescribeTable("wakes a Redisson waiter that has not blocked yet (between its failed attempt and its wait) within a second (a missed message would cost its TTL)",
		func(kind lockKind, hold func(gc *rlock.Client, name string, owner context.Context) func() error) {
			e := newEnv()
			r := e.emu()
			g := e.goClient()
			ctx, cancel := context.WithCancel(context.Background())
			DeferCleanup(cancel)
			name := lockName("notyet")
			owner := ctxowner.New(ctx)
			release := hold(g, name, owner)
			jl := r.newLock(kind, name)
			tid := r.thread()
			var t0 time.Time
			var once sync.Once
			// The release runs, and its message is handled, before the
			// thread blocks.
			jl.beforeWait = func(int64) {
				once.Do(func() {
					before := r.pubsub.handled(jl.channel(tid))
					t0 = time.Now()
					Expect(release()).To(Succeed())
					Eventually(func() int64 { return r.pubsub.handled(jl.channel(tid)) }).
						WithTimeout(2*time.Second).WithPolling(time.Millisecond).Should(BeNumerically(">", before), "no message reached the Redisson waiter")
				})
			}
			done := make(chan time.Time, 1)
			go func() {
				defer GinkgoRecover()
				if err := jl.Lock(ctx, tid, 0); err == nil {
					done <- time.Now()
				}
			}()
			var at time.Time
			Eventually(done).WithTimeout(3*time.Second).Should(Receive(&at), "the Redisson waiter slept through the release")
			expectWake("emulator", fmt.Sprintf("%s not yet blocked when goredisson releases", kindTitle(kind)), at.Sub(t0))
		},
		Entry("RLock, goredisson unlock", kindLock, func(gc *rlock.Client, name string, o context.Context) func() error {
			l := gc.NewLock(name)
			Expect(l.Lock(o)).To(Succeed())
			return func() error { return l.Unlock(o) }
		}),
		Entry("FencedLock, goredisson unlock", kindFenced, func(gc *rlock.Client, name string, o context.Context) func() error {
			l := gc.NewFencedLock(name)
			Expect(l.Lock(o)).To(Succeed())
			return func() error { return l.Unlock(o) }
		}),
		Entry("FairLock, goredisson unlock", kindFair, func(gc *rlock.Client, name string, o context.Context) func() error {
			l := gc.NewFairLock(name)
			Expect(l.Lock(o)).To(Succeed())
			return func() error { return l.Unlock(o) }
		}),
		Entry("RLock, goredisson force unlock", kindLock, func(gc *rlock.Client, name string, o context.Context) func() error {
			l := gc.NewLock(name)
			Expect(l.Lock(o)).To(Succeed())
			return func() error { _, err := l.ForceUnlock(o); return err }
		}),
		Entry("write lock, goredisson's last read unlock", kindWrite, func(gc *rlock.Client, name string, o context.Context) func() error {
			l := gc.NewReadWriteLock(name).ReadLock()
			Expect(l.Lock(o)).To(Succeed())
			return func() error { return l.Unlock(o) }
		}),
		Entry("write lock, goredisson's read force unlock", kindWrite, func(gc *rlock.Client, name string, o context.Context) func() error {
			l := gc.NewReadWriteLock(name).ReadLock()
			Expect(l.Lock(o)).To(Succeed())
			return func() error { _, err := l.ForceUnlock(o); return err }
		}),
	)
})

func kindTitle(k lockKind) string {
	return [...]string{"RLock waiter", "FairLock waiter", "read lock waiter", "write lock waiter", "FencedLock waiter", "SpinLock waiter"}[k]
}
