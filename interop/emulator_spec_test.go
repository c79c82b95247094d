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

	// LockPubSub keeps the permit of a "0" that arrives while no thread is
	// blocked yet; a "1" reaches only threads blocked at that moment. So a
	// release that must wake one waiter has to publish "0", or a Redisson
	// waiter caught between its attempt and its wait sleeps a whole lease.
	DescribeTable("wakes a Redisson waiter that has not blocked yet (between its failed attempt and its wait) within 200 ms",
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
			var t0 time.Time
			var once sync.Once
			jl.beforeWait = func(int64) {
				once.Do(func() {
					t0 = time.Now()
					Expect(release()).To(Succeed())
				})
			}
			done := make(chan time.Time, 1)
			go func() {
				defer GinkgoRecover()
				if err := jl.Lock(ctx, r.thread(), 0); err == nil {
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
