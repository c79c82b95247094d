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
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// An unlock of a faster multilock publishes one message on its group's
// channel, whatever values it freed. A Client wakes one of its waiters per
// value set waited on (not every waiter): the waiters on the same values
// are kept out by the same holds, so the one woken stands for them all.
var _ = Describe("FasterMultiLock wake-ups", func() {
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

	It("lets 120 waiters of two Clients on three overlapping value sets in, one try per value set and Client per unlock, without a lost wake-up", func() {
		const perClient = 60
		// A lost wake-up leaves its waiter asleep for the TTL its last
		// attempt saw: up to 60 s with this watchdog lease. Everything
		// below takes a few seconds even on a loaded machine.
		clients := []*rlock.Client{e.Client(rlock.WithWatchdogTimeout(time.Minute)), e.Client(rlock.WithWatchdogTimeout(time.Minute))}
		sets := [][]string{{"Jack_001", "Mary_002"}, {"Mary_002", "Ann_003"}, {"Ann_003", "Jack_001"}}
		holder := ctxowner.New(ctx)
		all := clients[0].NewFasterMultiLock("class_300", "Jack_001", "Mary_002", "Ann_003")
		Expect(all.Lock(holder)).To(Succeed())
		var (
			wg     sync.WaitGroup
			inside atomic.Int32 // any two sets overlap: one holder at a time
			done   atomic.Int32
		)
		for i := range 2 * perClient {
			c := clients[i%2]
			lock := c.NewFasterMultiLock("class_300", sets[(i/2)%len(sets)]...)
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				owner := ctxowner.New(ctx)
				Expect(lock.Lock(owner)).To(Succeed())
				Expect(inside.Add(1)).To(BeEquivalentTo(1), "two holders of overlapping values")
				inside.Add(-1)
				Expect(lock.Unlock(owner)).To(Succeed())
				done.Add(1)
			}()
		}
		channel := spectest.LockChannel("class_300")
		Eventually(func() int {
			return rlock.BlockedWaiters(clients[0], channel) + rlock.BlockedWaiters(clients[1], channel)
		}).
			WithTimeout(30 * time.Second).Should(Equal(2 * perClient))
		before := scripts()
		start := time.Now()
		Expect(all.Unlock(holder)).To(Succeed())
		Eventually(done.Load).WithTimeout(20*time.Second).Should(BeEquivalentTo(2*perClient), "every waiter got in long before a lease")
		spectest.WaitAll(&wg)
		per := float64(scripts()-before) / float64(2*perClient)
		GinkgoWriter.Printf("%d hand-offs in %v, %.2f scripts per hand-off\n", 2*perClient, time.Since(start), per)
		// An unlock wakes, in each Client, a waiter per value set: at most
		// 1 release + 2 Clients x 3 sets tries. Waking every waiter cost
		// about 30 per hand-off here (each Client's remaining waiters).
		Expect(per).To(BeNumerically("<=", 7))
		Expect(e.Raw.Exists(ctx, "class_300").Val()).To(BeZero())
	})

	It("hands the values on among 100 waiters of two Clients on the same values, some giving up and coming back, without a lost wake-up", func() {
		const rounds = 3
		clients := []*rlock.Client{e.Client(rlock.WithWatchdogTimeout(time.Minute)), e.Client(rlock.WithWatchdogTimeout(time.Minute))}
		var (
			wg       sync.WaitGroup
			inside   atomic.Int32
			acquired atomic.Int32
		)
		start := time.Now()
		for i := range 100 {
			lock := clients[i%2].NewFasterMultiLock("class_301", "Jack_001", "Mary_002")
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				owner := ctxowner.New(ctx)
				impatient := i%3 == 1 // TryLock with short waits, again and again: wakes taken and left
				for range rounds {
					if impatient {
						for {
							ok, err := lock.TryLock(owner, time.Duration(1+rand.N(20))*time.Millisecond, 0)
							Expect(err).NotTo(HaveOccurred())
							if ok {
								break
							}
						}
					} else {
						Expect(lock.Lock(owner)).To(Succeed())
					}
					Expect(inside.Add(1)).To(BeEquivalentTo(1), "two holders")
					inside.Add(-1)
					acquired.Add(1)
					Expect(lock.Unlock(owner)).To(Succeed())
				}
			}()
		}
		// A lost wake-up costs its waiter the TTL its last attempt saw, up
		// to a minute here.
		Eventually(acquired.Load).WithTimeout(40*time.Second).Should(BeEquivalentTo(100*rounds), "no waiter slept while the values were free")
		spectest.WaitAll(&wg)
		GinkgoWriter.Printf("%d acquisitions in %v\n", 100*rounds, time.Since(start))
		Expect(e.Raw.Exists(ctx, "class_301").Val()).To(BeZero())
	})

	// An owner that holds some of the values itself (through another of
	// its faster multilocks) is not kept out by them, where the other
	// waiters on the same values are: it is a class of its own.
	It("wakes an owner that holds part of the values itself, though another waiter on the same values has waited longer", func() {
		clients := []*rlock.Client{e.Client(), e.Client()} // 30 s watchdog: a lost wake-up costs ~30 s
		a, b := clients[0], clients[1]
		x, y, z := ctxowner.New(ctx), ctxowner.New(ctx), ctxowner.New(ctx)
		jack := a.NewFasterMultiLock("class_302", "Jack_001")
		Expect(jack.Lock(x)).To(Succeed()) // X holds Jack_001
		mary := b.NewFasterMultiLock("class_302", "Mary_002")
		Expect(mary.Lock(z)).To(Succeed()) // Z (another Client) holds Mary_002
		both := a.NewFasterMultiLock("class_302", "Jack_001", "Mary_002")

		// Y waits for both first (kept out by X and Z), then X (kept out by
		// Z only).
		yDone := make(chan error, 1)
		go func() { yDone <- both.Lock(y) }()
		channel := spectest.LockChannel("class_302")
		Eventually(func() int { return rlock.BlockedWaiters(a, channel) }).Should(Equal(1))
		xDone := make(chan time.Time, 1)
		go func() {
			defer GinkgoRecover()
			Expect(both.Lock(x)).To(Succeed())
			xDone <- time.Now()
		}()
		Eventually(func() int { return rlock.BlockedWaiters(a, channel) }).Should(Equal(2))

		unlocked := time.Now()
		Expect(mary.Unlock(z)).To(Succeed())
		var at time.Time
		Eventually(xDone).WithTimeout(10 * time.Second).Should(Receive(&at))
		Expect(at.Sub(unlocked)).To(BeNumerically("<", 2*time.Second), "X went in at once")
		Consistently(yDone).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "Jack_001 is X's")
		Expect(both.Unlock(x)).To(Succeed())
		Expect(jack.Unlock(x)).To(Succeed())
		Eventually(yDone).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
		Expect(both.Unlock(y)).To(Succeed())
	})
})
