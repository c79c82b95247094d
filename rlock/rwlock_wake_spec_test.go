package rlock_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("ReadWriteLock wake-ups", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})
	scripts := func() int {
		GinkgoHelper()
		calls := e.CommandCalls()
		return calls["evalsha"] + calls["eval"]
	}

	It("hands the write lock on among 60 waiting writers of one Client with at most 3 scripts per acquisition, after 6 waiting readers went in on a downgrade", func() {
		const writers, readers = 60, 6
		c := e.Client()
		rw := c.NewReadWriteLock("rw-handoff")
		holder := ctxowner.New(ctx)
		Expect(rw.WriteLock().Lock(holder)).To(Succeed())
		Expect(rw.ReadLock().Lock(holder)).To(Succeed())
		var wg sync.WaitGroup
		var writing atomic.Bool
		var readersDone atomic.Int32
		for i := range writers + readers {
			write := i%11 != 5
			side := rw.ReadLock()
			if write {
				side = rw.WriteLock()
			}
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				owner := ctxowner.New(ctx)
				Expect(side.Lock(owner)).To(Succeed())
				if write {
					Expect(writing.Swap(true)).To(BeFalse(), "two writers at once")
					writing.Store(false)
				} else {
					Expect(writing.Load()).To(BeFalse(), "a reader beside a writer")
				}
				Expect(side.Unlock(owner)).To(Succeed())
				if !write {
					readersDone.Add(1)
				}
			}()
		}
		Eventually(func() int { return rlock.BlockedWaiters(c, layout.RWChannel("rw-handoff")) }).
			WithTimeout(30 * time.Second).Should(Equal(writers + readers))
		before := scripts()
		// The downgrade lets the readers in (and wakes one writer, which
		// finds the lock in read mode); the holder's read unlock, once they
		// are done, hands the lock to the writers, one after another.
		Expect(rw.WriteLock().Unlock(holder)).To(Succeed())
		Eventually(readersDone.Load).WithTimeout(10 * time.Second).Should(BeEquivalentTo(readers))
		Expect(rw.ReadLock().Unlock(holder)).To(Succeed())
		spectest.WaitAll(&wg)
		per := float64(scripts()-before) / float64(writers+readers)
		GinkgoWriter.Printf("%.2f scripts per acquisition\n", per)
		// 2 is the floor: one acquire and one release each. A write unlock
		// that woke every writer cost about writers/2 per acquisition.
		Expect(per).To(BeNumerically("<=", 3))
		Expect(e.Raw.Exists(ctx, "rw-handoff").Val()).To(BeZero())
	})

	It("lets every waiter in, writers and readers of two Clients, some giving up and coming back, without a lost wake-up", func() {
		const rounds = 6
		// A lost wake-up leaves its waiter asleep for the TTL its last
		// attempt saw: 40-60 s with this watchdog lease. Everything below
		// takes a few seconds even on a loaded machine.
		clients := []*rlock.Client{e.Client(rlock.WithWatchdogTimeout(time.Minute)), e.Client(rlock.WithWatchdogTimeout(time.Minute))}
		var (
			wg               sync.WaitGroup
			writing, reading atomic.Int32
			counter          int // guarded by the write lock only
			acquired         atomic.Int32
		)
		start := time.Now()
		for _, c := range clients {
			rw := c.NewReadWriteLock("rw-mixed")
			for i := range 14 {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					owner := ctxowner.New(ctx)
					write := i%7 != 0     // 12 writers and 2 readers per Client
					impatient := i%2 == 1 // TryLock with short waits, again and again
					side := rw.ReadLock()
					if write {
						side = rw.WriteLock()
					}
					for range rounds {
						if impatient {
							for {
								ok, err := side.TryLock(owner, time.Duration(1+rand.N(20))*time.Millisecond, 0)
								Expect(err).NotTo(HaveOccurred())
								if ok {
									break
								}
							}
						} else {
							Expect(side.Lock(owner)).To(Succeed())
						}
						acquired.Add(1)
						if write {
							Expect(writing.Add(1)).To(BeEquivalentTo(1), "two writers at once")
							Expect(reading.Load()).To(BeZero(), "a writer beside a reader")
							counter++
							writing.Add(-1)
						} else {
							reading.Add(1)
							Expect(writing.Load()).To(BeZero(), "a reader beside a writer")
							reading.Add(-1)
						}
						Expect(side.Unlock(owner)).To(Succeed())
					}
				}()
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		Eventually(done).WithTimeout(25*time.Second).Should(BeClosed(),
			"%d of %d acquisitions after %v: a waiter sleeps while the lock is free", acquired.Load(), 2*14*rounds, time.Since(start))
		Expect(counter).To(Equal(2 * 12 * rounds))
		Expect(e.Raw.Exists(ctx, "rw-mixed").Val()).To(BeZero())
	})
})
