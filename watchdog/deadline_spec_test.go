package watchdog_test

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"

	"github.com/goredisson/goredisson/watchdog"
)

// hungRenewals is a RenewFunc that blocks each call until the spec lets it
// go, then answers with status for every lease: the Scheduler's goroutine
// waits on Redis meanwhile, as it does on a hung server or in a process
// paused with a renewal in flight.
type hungRenewals struct {
	entered chan struct{} // one value per call, when it starts
	release chan struct{} // closed to let every call return
	status  atomic.Int32  // the status the calls return
}

func newHungRenewals() *hungRenewals {
	return &hungRenewals{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (h *hungRenewals) renew(_ context.Context, leases []watchdog.Lease) ([]watchdog.Status, error) {
	h.entered <- struct{}{}
	<-h.release
	out := make([]watchdog.Status, len(leases))
	for i := range out {
		out[i] = watchdog.Status(h.status.Load())
	}
	return out, nil
}

// The local deadline is the end of a lease whatever the Scheduler's
// goroutine is doing: a look after it finds the lease lost, Lost closes at
// it without a look, and a renewal recorded after it does not revive it.
var _ = Describe("Local deadlines", func() {
	var before []gleak.Goroutine
	BeforeEach(func() {
		before = gleak.Goroutines()
	})
	// scheduler starts a Scheduler whose renewals hang until released (then
	// say Renewed), and waits until the first one is in flight for a lease
	// it adds; it returns the Scheduler and that lease.
	scheduler := func(lease time.Duration, opts ...watchdog.Option) (*watchdog.Scheduler, *hungRenewals, *watchdog.Entry) {
		GinkgoHelper()
		h := newHungRenewals()
		s := watchdog.New(h.renew, lease, opts...)
		DeferCleanup(func() {
			select {
			case <-h.release:
			default:
				close(h.release)
			}
			s.Close()
			Eventually(s.Done()).Should(BeClosed())
			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
		renewed := s.Add(watchdog.Lease{Key: "renewed", Field: "f"}, watchdog.Deadline(time.Now(), lease), true)
		Eventually(h.entered).WithTimeout(lease).Should(Receive(), "the first renewal is in flight")
		return s, h, renewed
	}
	afterDeadline := func(e *watchdog.Entry) {
		GinkgoHelper()
		d := e.Deadline()
		time.Sleep(time.Until(d))
		Expect(time.Now()).To(BeTemporally(">=", d))
	}

	It("finds a fixed lease lost at the first look after its deadline while a renewal hangs", Label("slow"), func() {
		s, _, _ := scheduler(3 * time.Second)
		fixed := s.Add(watchdog.Lease{Key: "fixed", Field: "f"}, watchdog.Deadline(time.Now(), 300*time.Millisecond), false)
		Expect(fixed.IsLost()).To(BeFalse(), "before its deadline")
		afterDeadline(fixed)
		Expect(fixed.IsLost()).To(BeTrue(), "a look after the deadline")
		Expect(fixed.Err()).To(MatchError(watchdog.ErrLost))
		Expect(fixed.Lost()).To(BeClosed())
	})

	It("closes Lost at the deadline without a look while a renewal hangs", Label("slow"), func() {
		s, _, _ := scheduler(3 * time.Second)
		start := time.Now()
		fixed := s.Add(watchdog.Lease{Key: "fixed", Field: "f"}, watchdog.Deadline(start, 300*time.Millisecond), false)
		lost := fixed.Lost()
		called := make(chan time.Time, 1)
		fixed.AfterLost(func() { called <- time.Now() })
		// The hung renewal is let go only at cleanup: the timer of the
		// deadlines ends the lease.
		Eventually(lost).WithTimeout(2 * time.Second).Should(BeClosed())
		var at time.Time
		Eventually(called).WithTimeout(time.Second).Should(Receive(&at))
		Expect(at.Sub(start)).To(BeNumerically("<", 2300*time.Millisecond), "AfterLost ran at the loss")
		Expect(at).To(BeTemporally(">=", start.Add(300*time.Millisecond-watchdog.Allowance(300*time.Millisecond))), "not before the deadline")
	})

	It("loses a renewed lease whose renewal is in flight at its deadline, and the renewal confirmed after it does not revive it", Label("slow"), func() {
		var onLost atomic.Int32
		s, h, renewed := scheduler(1500*time.Millisecond, watchdog.WithOnLost(func(watchdog.Lease, error) { onLost.Add(1) }))
		h.status.Store(int32(watchdog.Renewed))
		afterDeadline(renewed)
		Expect(renewed.IsLost()).To(BeTrue(), "a look after the deadline, the renewal still in flight")
		Eventually(onLost.Load).Should(Equal(int32(1)), "WithOnLost is told of a loss a look found")
		close(h.release) // the renewal that was sent in time is confirmed now
		Eventually(s.Rounds).Should(BeNumerically(">=", 1))
		Expect(renewed.IsLost()).To(BeTrue(), "not revived")
		Expect(renewed.Err()).To(MatchError(watchdog.ErrLost))
		Expect(s.Len()).To(BeZero(), "no longer watched nor renewed")
		Expect(renewed.Deadline()).To(BeTemporally("<", time.Now()), "the deadline did not move")
	})

	It("loses a lease at Stop, Confirm or Reset when its deadline has passed unseen", Label("slow"), func() {
		s, _, _ := scheduler(3 * time.Second)
		add := func(key string) *watchdog.Entry {
			return s.Add(watchdog.Lease{Key: key, Field: "f"}, watchdog.Deadline(time.Now(), 200*time.Millisecond), false)
		}
		stopped, confirmed, reset := add("stop"), add("confirm"), add("reset")
		afterDeadline(reset)
		// The deadline timer may have lost them already; either way none is
		// live after its deadline, and none comes back.
		stopped.Stop()
		confirmed.Confirm(time.Now().Add(time.Hour), true)
		Expect(reset.Reset(time.Now().Add(time.Hour))).To(BeFalse())
		for _, e := range []*watchdog.Entry{stopped, confirmed, reset} {
			Expect(e.IsLost()).To(BeTrue())
			Expect(e.Lost()).To(BeClosed())
			Expect(e.Err()).To(MatchError(watchdog.ErrLost))
		}
	})

	It("moves the deadline with a renewal recorded in time, and a look before it finds the lease live", func() {
		rec := &recorder{status: map[string]watchdog.Status{}}
		s := watchdog.New(rec.renew, 600*time.Millisecond)
		DeferCleanup(s.Close)
		e := s.Add(watchdog.Lease{Key: "k", Field: "f"}, watchdog.Deadline(time.Now(), 600*time.Millisecond), true)
		first := e.Deadline()
		Eventually(e.Deadline).Should(BeTemporally(">", first))
		Expect(e.IsLost()).To(BeFalse())
	})

	It("runs AfterLost's function once at the loss, at once after it, never after a Stop, and not once unregistered", func() {
		rec := &recorder{status: map[string]watchdog.Status{}}
		s := watchdog.New(rec.renew, time.Minute)
		DeferCleanup(s.Close)
		add := func() *watchdog.Entry {
			return s.Add(watchdog.Lease{Key: "k", Field: "f"}, watchdog.Deadline(time.Now(), time.Minute), true)
		}
		var mu sync.Mutex
		ran := map[string]int{}
		note := func(k string) func() {
			return func() { mu.Lock(); ran[k]++; mu.Unlock() }
		}
		runs := func(k string) func() int {
			return func() int { mu.Lock(); defer mu.Unlock(); return ran[k] }
		}
		lost := add()
		lost.AfterLost(note("lost"))
		unreg := lost.AfterLost(note("unregistered"))
		Expect(unreg()).To(BeTrue())
		Expect(unreg()).To(BeFalse())
		lost.Lose()
		Eventually(runs("lost")).Should(Equal(1))
		lost.AfterLost(note("late"))
		Eventually(runs("late")).Should(Equal(1))

		stopped := add()
		stopped.AfterLost(note("stopped"))
		stopped.Stop()
		stopped.AfterLost(note("after stop"))
		s.Close()
		Consistently(runs("stopped")).WithTimeout(100 * time.Millisecond).Should(BeZero())
		Expect(runs("after stop")()).To(BeZero())
		Expect(runs("unregistered")()).To(BeZero())
		Expect(runs("lost")()).To(Equal(1), "once")
	})
})
