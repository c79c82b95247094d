package rlock_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/onsi/gomega/types"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("MultiLock", func() {
	var (
		e     *spectest.Env
		ctx   context.Context
		other *redistest.Server
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
		other = spectest.StartServers(1)[0]
	})

	It("takes locks on two deployments all or nothing, reentrantly", func() {
		a := e.Client().NewLock("multi-a")
		b := spectest.ClientOn(other.Addr).NewFairLock("multi-b")
		m, err := rlock.NewMultiLock(a, b)
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Name()).To(Equal("multilock[multi-a,multi-b]"))

		rival := ctxowner.New(ctx)
		Expect(b.Lock(rival)).To(Succeed())
		owner := ctxowner.New(ctx)
		ok, err := m.TryLock(owner, 300*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse())
		Expect(a.IsLocked(ctx)).To(BeFalse(), "what it took was given back")

		done := make(chan error, 1)
		go func() { done <- m.Lock(owner) }()
		Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		Expect(b.Unlock(rival)).To(Succeed())
		Eventually(done).Should(Receive(BeNil()))
		Expect(a.HoldCount(owner)).To(Equal(1))
		Expect(b.HoldCount(owner)).To(Equal(1))

		Expect(m.Lock(owner)).To(Succeed())
		Expect(m.HoldCount(owner)).To(Equal(2))
		Expect(m.IsHeldByCurrent(owner)).To(BeTrue())
		Expect(m.Unlock(owner)).To(Succeed())
		Expect(m.Unlock(owner)).To(Succeed())
		Expect(m.IsLocked(ctx)).To(BeFalse())
		Expect(m.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
	})

	It("never deadlocks against a MultiLock taking the same locks in the other order", func() {
		c1, c2 := e.Client(), spectest.ClientOn(other.Addr)
		ab, err := rlock.NewMultiLock(c1.NewLock("order-a"), c2.NewLock("order-b"))
		Expect(err).NotTo(HaveOccurred())
		ba, err := rlock.NewMultiLock(c2.NewLock("order-b"), c1.NewLock("order-a"))
		Expect(err).NotTo(HaveOccurred())
		var (
			wg      sync.WaitGroup
			inside  sync.Mutex
			entries int
		)
		for i := range 8 {
			m := ab
			if i%2 == 1 {
				m = ba
			}
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for range 10 {
					Expect(m.Lock(ctx)).To(Succeed()) // goroutine owners, pinned
					Expect(inside.TryLock()).To(BeTrue(), "two holders at once")
					entries++
					inside.Unlock()
					Expect(m.Unlock(ctx)).To(Succeed())
				}
			}()
		}
		spectest.WaitAll(&wg)
		Expect(entries).To(Equal(80))
	})

	It("ends a wait with ctx's error and keeps nothing", func() {
		a, b := e.Client().NewLock("multi-c1"), spectest.ClientOn(other.Addr).NewLock("multi-c2")
		Expect(b.Lock(ctxowner.New(ctx))).To(Succeed())
		m, _ := rlock.NewMultiLock(a, b)
		cctx, cancel := context.WithTimeout(ctxowner.New(ctx), 300*time.Millisecond)
		defer cancel()
		Expect(m.Lock(cctx)).To(MatchError(context.DeadlineExceeded))
		Expect(a.IsLocked(ctx)).To(BeFalse())
	})

	It("rejects an empty list, a nil lock and the same lock twice", func() {
		c := e.Client()
		_, err := rlock.NewMultiLock()
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = rlock.NewMultiLock(c.NewLock("x"), nil)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		var nilLock *rlock.Lock
		_, err = rlock.NewMultiLock(c.NewLock("x"), nilLock)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		l := c.NewLock("x")
		_, err = rlock.NewMultiLock(l, l)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = rlock.NewMultiLock(c.NewLock("x"), c.NewFencedLock("x"))
		Expect(err).To(MatchError(ContainSubstring("same Redis key")))
		Expect(e.Raw.DBSize(ctx).Val()).To(BeZero())
	})
})

var _ = Describe("RedLock over 5 independent masters", Label("slow"), func() {
	var (
		ctx     context.Context
		masters []*redistest.Server
		clients []*rlock.Client
	)
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		ctx = context.Background()
		masters = spectest.StartServers(5)
		clients = make([]*rlock.Client, 5)
		for i, m := range masters {
			clients[i] = spectest.ClientOn(m.Addr)
		}
	})
	redLock := func(name string) *rlock.RedLock {
		locks := make([]rlock.Locker, len(clients))
		for i, c := range clients {
			locks[i] = c.NewLock(name)
		}
		r, err := rlock.NewRedLock(locks...)
		Expect(err).NotTo(HaveOccurred())
		return r
	}
	holders := func(name string) int {
		n := 0
		for _, m := range masters {
			if m.Pid() == 0 {
				continue
			}
			raw := m.Client()
			n += int(raw.Exists(ctx, name).Val())
			_ = raw.Close()
		}
		return n
	}

	// heldByMajority takes the RedLock on 5 masters and checks it, with
	// at least `granted` masters holding it.
	heldByMajority := func(granted types.GomegaMatcher) {
		r := redLock("red")
		Expect(r.Quorum()).To(Equal(3))
		owner := ctxowner.New(ctx)
		validity, ok, err := r.TryLockValidity(owner, 0, 10*time.Second)
		Expect(ok, err).To(BeTrue())
		Expect(validity).To(And(BeNumerically(">", 9*time.Second), BeNumerically("<", 10*time.Second-100*time.Millisecond)))
		Expect(holders("red")).To(granted)
		ok, err = redLock("red").TryLock(ctxowner.New(ctx), 100*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse())
		Expect(r.IsHeldByCurrent(owner)).To(BeTrue())
		Expect(r.Unlock(owner)).To(Succeed())
		Expect(holders("red")).To(BeZero())
	}

	It("is held when a majority grants it, within a validity shorter than the lease", func() {
		// A master that answers after its attempt's timeout (a loaded
		// machine) is not counted; the quorum still holds the lock.
		heldByMajority(BeNumerically(">=", 3))
	})

	It("is held on every master that answers in time, on a machine not loaded", Label("timing"), func() {
		heldByMajority(Equal(5))
	})

	It("releases every master when the quorum is missed", func() {
		// Someone else holds the lock on 3 of the 5 masters.
		rival := ctxowner.New(ctx)
		for _, c := range clients[:3] {
			Expect(c.NewLock("split").Lock(rival)).To(Succeed())
		}
		ok, err := redLock("split").TryLock(ctxowner.New(ctx), 0, 0)
		Expect(ok, err).To(BeFalse())
		Expect(holders("split")).To(Equal(3), "the two masters it got were released")
	})

	It("works with 2 masters killed and fails with ErrNoQuorum, not a hang, with 3 killed", func() {
		Expect(masters[0].Kill()).To(Succeed())
		Expect(masters[1].Kill()).To(Succeed())
		owner := ctxowner.New(ctx)
		r := redLock("degraded")
		Expect(r.Lock(owner)).To(Succeed())
		Expect(holders("degraded")).To(Equal(3))
		Expect(r.Unlock(owner)).To(Succeed())

		Expect(masters[2].Kill()).To(Succeed())
		start := time.Now()
		err := r.Lock(owner) // no deadline: it must still return, after the retry budget
		Expect(err).To(MatchError(rlock.ErrNoQuorum))
		Expect(time.Since(start)).To(BeNumerically("<", 20*time.Second))
		Expect(holders("degraded")).To(BeZero())
		ok, err := r.TryLock(owner, 0, 0)
		Expect(ok).To(BeFalse())
		Expect(err).To(MatchError(rlock.ErrNoQuorum), "a single round fails at once")
	})

	It("keeps trying rounds, as Redisson's lock loop, while a majority of masters is too slow to answer", func() {
		for _, m := range masters[:3] {
			Expect(m.Pause()).To(Succeed())
		}
		paused := true
		DeferCleanup(func() {
			if paused {
				for _, m := range masters[:3] {
					_ = m.Resume()
				}
			}
		})
		owner := ctxowner.New(ctx)
		r := redLock("slow-majority")
		done := make(chan error, 1)
		go func() { done <- r.Lock(owner) }()
		Consistently(done).WithTimeout(1500*time.Millisecond).ShouldNot(Receive(), "every round times out on 3 of 5 masters: no quorum, but no giving up either")
		for _, m := range masters[:3] {
			Expect(m.Resume()).To(Succeed())
		}
		paused = false
		Eventually(done).WithTimeout(15 * time.Second).Should(Receive(BeNil()))
		Expect(r.Unlock(owner)).To(Succeed())
	})

	It("keeps a counter exact between owners of 2 Client sets", func() {
		others := make([]*rlock.Client, 5)
		for i, m := range masters {
			others[i] = spectest.ClientOn(m.Addr)
		}
		var lockers []rlock.Locker
		for i := range 8 {
			cs := clients
			if i%2 == 1 {
				cs = others
			}
			locks := make([]rlock.Locker, 5)
			for j, c := range cs {
				locks[j] = c.NewLock("red-counter")
			}
			r, err := rlock.NewRedLock(locks...)
			Expect(err).NotTo(HaveOccurred())
			// The default 200 ms attempt timeout: under load (past 15 on
			// 2 cores) rounds whose attempts time out leave no quorum, and
			// Lock must ride them out (RedLock's retry budget) instead of
			// returning ErrNoQuorum.
			lockers = append(lockers, r)
		}
		Expect(spectest.CountInside(lockers, 10)).To(Equal(80))
	})

	It("rejects bad settings", func() {
		r := redLock("red-bad")
		_, err := r.With(rlock.RedLockAttemptTimeout(0))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = r.With(rlock.RedLockDriftFactor(0.7))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		tuned, err := r.With(rlock.RedLockAttemptTimeout(50*time.Millisecond), rlock.RedLockDriftFactor(0.02))
		Expect(err).NotTo(HaveOccurred())
		Expect(tuned.Quorum()).To(Equal(r.Quorum()))
	})
})
