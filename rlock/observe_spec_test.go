package rlock_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/spectest"
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
		Expect(lock.TryLock(holder, 10, 0)).Error().To(MatchError(rlock.ErrInvalidArgument))
		Expect(rec.last("trylock").Err).To(MatchError(rlock.ErrInvalidArgument), "bad input is reported too")
	})

	It("refuses a nil observer", func() {
		_, err := rlock.NewClient(e.RDB(), rlock.WithObserver(nil))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})
})
