package rlock_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// recorder is an rlock.Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []rlock.Event
}

func (r *recorder) Observe(_ context.Context, e rlock.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) ops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Kind+" "+e.Op)
	}
	return out
}

func (r *recorder) last(op string) rlock.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].Op == op {
			return r.events[i]
		}
	}
	return rlock.Event{}
}

var _ = Describe("Observer", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("reports waits, contention, hold times, losses and errors", func() {
		rec := &recorder{}
		c := e.Client(rlock.WithObserver(rec), rlock.WithWatchdogTimeout(time.Second))
		lock := c.NewLock("observed")
		holder := ctxowner.New(ctx)
		Expect(lock.Lock(holder)).To(Succeed())
		acq := rec.last("lock")
		Expect(acq).To(And(HaveField("Kind", "lock"), HaveField("Lock", "observed"), HaveField("Acquired", true), HaveField("Attempts", 1)))
		Expect(acq.Err).NotTo(HaveOccurred())

		waiter := ctxowner.New(ctx)
		ok, err := c.NewLock("observed").TryLock(waiter, 200*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse())
		busy := rec.last("trylock")
		Expect(busy.Acquired).To(BeFalse())
		Expect(busy.Attempts).To(BeNumerically(">=", 2))
		Expect(busy.Contended).To(Equal(busy.Attempts), "every attempt found the lock taken")
		Expect(busy.Duration).To(BeNumerically(">=", 200*time.Millisecond))

		time.Sleep(50 * time.Millisecond) // a hold time to see, not a wait for a result
		Expect(lock.Unlock(holder)).To(Succeed())
		rel := rec.last("unlock")
		Expect(rel.Held).To(BeNumerically(">=", 250*time.Millisecond))
		Expect(rel.Err).NotTo(HaveOccurred())

		Expect(lock.Unlock(holder)).To(MatchError(rlock.ErrNotHeld))
		Expect(rec.last("unlock").Err).To(MatchError(rlock.ErrNotHeld))

		fair := c.NewFairLock("observed:fair")
		Expect(fair.Lock(holder)).To(Succeed())
		Expect(fair.ForceUnlock(ctx)).To(BeTrue())
		Eventually(func() rlock.Event { return rec.last("lost") }).WithTimeout(2 * time.Second).
			Should(And(HaveField("Kind", "fairlock"), HaveField("Lock", "observed:fair"), HaveField("Err", MatchError(rlock.ErrLockLost))))
		Expect(rec.ops()).To(ContainElements("lock lock", "lock trylock", "lock unlock", "fairlock lock", "fairlock forceunlock", "fairlock lost"))
		Expect(lock.TryLock(holder, 0, 10)).Error().To(MatchError(rlock.ErrInvalidArgument)) // a 10 ns lease
		Expect(rec.last("trylock").Err).To(MatchError(rlock.ErrInvalidArgument), "bad input is reported too")
	})

	It("pairs every wait with the acquisition's end, and every hold with a free or a loss, on every path", func() {
		rec := &recorder{}
		c := e.Client(rlock.WithObserver(rec), rlock.WithWatchdogTimeout(time.Second))
		other := e.Client()
		holder, owner := ctxowner.New(ctx), ctxowner.New(ctx)
		// balance is what the events say is going on now: waits less
		// acquisition ends, holds less frees and losses.
		balance := func() (waiting, holding int) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			for _, ev := range rec.events {
				switch ev.Op {
				case "wait":
					waiting++
				case "lock", "trylock", "locktoken", "trylocktoken", "acquire", "tryacquire", "await":
					waiting--
				case "hold":
					holding++
				case "free", "lost":
					holding--
				}
			}
			return waiting, holding
		}
		both := func() []int { w, h := balance(); return []int{w, h} }
		lock := c.NewLock("pairs")
		Expect(lock.Lock(holder)).To(Succeed())
		Expect(lock.Lock(holder)).To(Succeed())
		Expect(both()).To(Equal([]int{0, 1}), "no wait left, one hold: a re-entry is no new hold")
		Expect(rec.last("hold")).To(And(HaveField("Kind", "lock"), HaveField("Lock", "pairs")))

		waitCtx, cancel := context.WithTimeout(owner, 200*time.Millisecond)
		defer cancel()
		Expect(lock.Lock(waitCtx)).To(MatchError(context.DeadlineExceeded))
		Expect(lock.TryLock(owner, 100*time.Millisecond, 0)).To(BeFalse())
		Expect(lock.TryLock(owner, 0, 10)).Error().To(MatchError(rlock.ErrInvalidArgument)) // a 10 ns lease
		Expect(lock.Unlock(holder)).To(Succeed())
		Expect(lock.Unlock(holder)).To(Succeed())
		Expect(rec.last("free")).To(And(HaveField("Kind", "lock"), HaveField("Held", BeNumerically(">", 0))))
		Expect(both()).To(Equal([]int{0, 0}))

		fenced := c.NewFencedLock("pairs:fenced")
		_, err := fenced.LockToken(owner)
		Expect(err).NotTo(HaveOccurred())
		Expect(fenced.ForceUnlock(ctx)).To(BeTrue())
		Eventually(func() int { _, h := balance(); return h }).WithTimeout(5 * time.Second).Should(BeZero())
		Expect(fenced.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))

		Expect(other.NewLock("pairs:other").Lock(holder)).To(Succeed())
		Expect(c.NewSpinLock("pairs:spin").Lock(owner)).To(Succeed())
		blocked := make(chan error, 1)
		go func() { blocked <- c.NewLock("pairs:other").Lock(ctxowner.New(ctx)) }()
		Eventually(func() int { w, _ := balance(); return w }).WithTimeout(5 * time.Second).Should(Equal(1))
		Expect(c.Close()).To(Succeed())
		Eventually(blocked).WithTimeout(5 * time.Second).Should(Receive(MatchError(rlock.ErrClosed)))
		Expect(lock.Lock(owner)).To(MatchError(rlock.ErrClosed))
		Eventually(both).WithTimeout(5 * time.Second).Should(Equal([]int{0, 0}))
		Expect(rec.last("lost").Err).To(MatchError(rlock.ErrClosed), "the spin lock held when the Client closed")
	})

	It("refuses a nil observer", func() {
		_, err := rlock.NewClient(e.RDB(), rlock.WithObserver(nil))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})
})
