package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"

	"github.com/goredisson/goredisson/watchdog"
)

func TestWatchdog(t *testing.T) {
	suite.RunParallel(t, "watchdog", 3)
}

// recorder is a RenewFunc that records its calls and answers with the
// status set per key (Renewed by default). The Redis side of renewals is
// specified in the root suite; here only the scheduling is.
type recorder struct {
	mu     sync.Mutex
	calls  [][]watchdog.Lease
	status map[string]watchdog.Status
	err    error
}

func (r *recorder) renew(_ context.Context, leases []watchdog.Lease) ([]watchdog.Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, append([]watchdog.Lease(nil), leases...))
	if r.err != nil {
		return nil, r.err
	}
	out := make([]watchdog.Status, len(leases))
	for i, l := range leases {
		out[i] = r.status[l.Key]
	}
	return out, nil
}

func (r *recorder) set(key string, st watchdog.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status[key] = st
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// renewals returns how often key was renewed and the sizes of the calls.
func (r *recorder) renewals(key string) (n int, sizes []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		sizes = append(sizes, len(c))
		for _, l := range c {
			if l.Key == key {
				n++
			}
		}
	}
	return n, sizes
}

var _ = Describe("Scheduler", func() {
	// The lease of most specs: renewed every 200 ms, so that a renewal late
	// by the scheduling noise of a loaded machine still comes in time.
	const lease = 600 * time.Millisecond
	var (
		rec *recorder
		s   *watchdog.Scheduler
	)
	BeforeEach(func() {
		before := gleak.Goroutines()
		rec = &recorder{status: map[string]watchdog.Status{}}
		s = watchdog.New(rec.renew, lease)
		DeferCleanup(func() {
			s.Close()
			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
	})
	count := func(key string) func() int {
		return func() int { n, _ := rec.renewals(key); return n }
	}
	renewed := func(key string) *watchdog.Entry {
		return s.Add(watchdog.Lease{Key: key, Field: "f"}, watchdog.Deadline(time.Now(), lease), true)
	}

	It("renews a lease every third of it until it is stopped", Label("slow"), func() {
		start := time.Now()
		e := renewed("a")
		Eventually(count("a")).Should(BeNumerically(">=", 4))
		Expect(time.Since(start)).To(BeNumerically(">=", 4*lease/3), "not faster than the interval")
		Expect(s.Len()).To(Equal(1))
		Expect(e.Deadline()).To(BeTemporally(">", time.Now().Add(lease/3)), "each renewal moves the deadline")
		e.Stop()
		e.Stop()
		n := count("a")()
		Consistently(count("a")).WithTimeout(lease).Should(BeNumerically("<=", n+1))
		Expect(e.Lost()).NotTo(BeClosed(), "a stop is not a loss")
		Expect(e.Err()).NotTo(HaveOccurred())
		Expect(s.Len()).To(BeZero())
	})

	It("renews leases due together in one call, in chunks of MaxBatch", Label("slow"), func() {
		// A long lease so that the 2,500 leases fall due within a tenth of
		// the interval, even under the race detector.
		slow := watchdog.New(rec.renew, 6*time.Second)
		DeferCleanup(slow.Close)
		for i := range 2500 {
			slow.Add(watchdog.Lease{Key: fmt.Sprint("k", i)}, watchdog.Deadline(time.Now(), 6*time.Second), true)
		}
		Eventually(slow.Rounds).WithTimeout(4 * time.Second).Should(BeNumerically(">=", 3))
		_, sizes := rec.renewals("")
		Expect(sizes[:3]).To(ConsistOf(watchdog.MaxBatch, watchdog.MaxBatch, 500))
	})

	It("stops renewing and signals a lease that a renewal found lost", func() {
		e := renewed("lost")
		other := renewed("kept")
		rec.set("lost", watchdog.Lost)
		Eventually(e.Lost()).Should(BeClosed())
		Expect(e.Err()).To(MatchError(watchdog.ErrLost))
		Expect(count("lost")()).To(Equal(1))
		Consistently(count("lost")).WithTimeout(lease).Should(Equal(1))
		Expect(other.Lost()).NotTo(BeClosed())
		Expect(count("kept")()).To(BeNumerically(">=", 3))
	})

	It("retries a failed renewal sooner than the interval and keeps the lease when a retry succeeds in time", Label("slow"), func() {
		long := watchdog.New(rec.renew, 3*time.Second) // interval 1 s, retries every 500 ms
		DeferCleanup(long.Close)
		e := long.Add(watchdog.Lease{Key: "flaky"}, watchdog.Deadline(time.Now(), 3*time.Second), true)
		rec.fail(errors.New("redis down"))
		Eventually(count("flaky")).WithTimeout(3 * time.Second).Should(BeNumerically(">=", 2))
		rec.fail(nil)
		n := count("flaky")()
		Eventually(count("flaky")).WithTimeout(3 * time.Second).Should(BeNumerically(">", n))
		Expect(e.Lost()).NotTo(BeClosed())
	})

	It("loses a renewed lease at its local deadline while renewals fail, before Redis could expire it", Label("slow"), func() {
		// A 3 s lease: its allowance (32 ms) exceeds a loaded machine's
		// timer delay.
		const long = 3 * time.Second
		ls := watchdog.New(rec.renew, long)
		DeferCleanup(ls.Close)
		start := time.Now()
		e := ls.Add(watchdog.Lease{Key: "unreachable"}, watchdog.Deadline(start, long), true)
		deadline := e.Deadline()
		Expect(deadline).To(BeTemporally("<", start.Add(long)), "the local deadline comes before the key could expire")
		rec.fail(errors.New("redis down"))
		lostAt := make(chan time.Duration, 1)
		go func() { <-e.Lost(); lostAt <- time.Since(start) }()
		var at time.Duration
		Eventually(lostAt).WithTimeout(2 * long).Should(Receive(&at))
		Expect(e.Err()).To(MatchError(watchdog.ErrLost))
		Expect(at).To(BeNumerically(">=", long-watchdog.Allowance(long)), "not before the deadline")
		// When the timer that closes Lost runs is up to the scheduler (a
		// loaded machine ran it 20 ms past the key's expiry); what holds
		// whatever it delays is that every look after the local deadline
		// sees the loss.
		Expect(time.Now()).To(BeTemporally(">", deadline))
		Expect(e.IsLost()).To(BeTrue(), "a look after the local deadline")
	})

	It("loses a fixed lease at its deadline and never renews it", Label("slow"), func() {
		start := time.Now()
		e := s.Add(watchdog.Lease{Key: "fixed"}, watchdog.Deadline(start, time.Second), false)
		Eventually(e.Lost()).WithTimeout(3 * time.Second).Should(BeClosed())
		Expect(time.Since(start)).To(BeNumerically(">=", time.Second-watchdog.Allowance(time.Second)))
		Expect(count("fixed")()).To(BeZero())
		Expect(e.Err()).To(MatchError(watchdog.ErrLost))
	})

	It("moves a lease's deadline on Confirm and starts renewing a fixed lease confirmed as renewed", Label("slow"), func() {
		e := s.Add(watchdog.Lease{Key: "re"}, watchdog.Deadline(time.Now(), time.Second), false)
		later := time.Now().Add(time.Hour)
		e.Confirm(later, false)
		Expect(e.Deadline()).To(Equal(later))
		Consistently(count("re")).WithTimeout(lease).Should(BeZero())
		e.Confirm(watchdog.Deadline(time.Now(), lease), true)
		Eventually(count("re")).Should(BeNumerically(">=", 2))
		Expect(e.Lost()).NotTo(BeClosed())
	})

	It("stops renewing a drained lease and closes its Lost at the deadline, quietly", func() {
		var lostCalls sync.Map
		quiet := watchdog.New(rec.renew, lease, watchdog.WithOnLost(func(l watchdog.Lease, _ error) { lostCalls.Store(l.Key, true) }))
		DeferCleanup(quiet.Close)
		e := quiet.Add(watchdog.Lease{Key: "drained"}, watchdog.Deadline(time.Now(), lease), true)
		Eventually(count("drained")).Should(BeNumerically(">=", 1))
		e.Drain()
		n := count("drained")()
		deadline := e.Deadline()
		Eventually(e.Lost()).WithTimeout(lease + time.Second).Should(BeClosed())
		Expect(time.Now()).To(BeTemporally(">=", deadline), "not before its deadline")
		Expect(count("drained")()).To(BeNumerically("<=", n+1), "renewed after Drain (one renewal may have been in flight)")
		Expect(e.Err()).To(MatchError(watchdog.ErrLost))
		_, called := lostCalls.Load("drained")
		Expect(called).To(BeFalse(), "the WithOnLost function was called for a lease its holder gave up")

		early := quiet.Add(watchdog.Lease{Key: "settled"}, watchdog.Deadline(time.Now(), time.Hour), true)
		early.Drain()
		early.Lose()
		Expect(early.Lost()).To(BeClosed())
		_, called = lostCalls.Load("settled")
		Expect(called).To(BeFalse())
	})

	It("reports the leases it still watched as lost with ErrClosed when closed", func() {
		e := renewed("open")
		s.Close()
		Expect(e.Lost()).To(BeClosed())
		Expect(e.Err()).To(MatchError(watchdog.ErrClosed))
		late := renewed("late")
		Expect(late.Lost()).To(BeClosed())
		Expect(late.Err()).To(MatchError(watchdog.ErrClosed))
		s.Close()
	})

	It("closes at once while a renewal hangs, and the hung renewal changes nothing", Label("slow"), func() {
		release := make(chan struct{})
		hung := watchdog.New(func(ctx context.Context, l []watchdog.Lease) ([]watchdog.Status, error) {
			<-release
			return make([]watchdog.Status, len(l)), nil
		}, 3*time.Second)
		e := hung.Add(watchdog.Lease{Key: "stuck"}, watchdog.Deadline(time.Now(), 3*time.Second), true)
		Eventually(hung.Rounds).WithTimeout(3*time.Second).Should(BeZero(), "the first renewal is in flight")
		time.Sleep(1100 * time.Millisecond) // past the first renewal's start
		start := time.Now()
		hung.Close()
		Expect(time.Since(start)).To(BeNumerically("<", 50*time.Millisecond))
		Expect(e.Lost()).To(BeClosed())
		Expect(e.Err()).To(MatchError(watchdog.ErrClosed))
		close(release)
		Eventually(hung.Done()).Should(BeClosed())
		Expect(e.Err()).To(MatchError(watchdog.ErrClosed))
	})

	It("rejects a lease too short for an interval", func() {
		Expect(func() { watchdog.New(rec.renew, 2) }).To(Panic())
	})
})
