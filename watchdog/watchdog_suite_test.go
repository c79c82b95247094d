package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"

	"github.com/goredisson/goredisson/watchdog"
)

func TestWatchdog(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "watchdog")
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
	var (
		rec *recorder
		s   *watchdog.Scheduler
	)
	BeforeEach(func() {
		before := gleak.Goroutines()
		rec = &recorder{status: map[string]watchdog.Status{}}
		s = watchdog.New(rec.renew, 50*time.Millisecond)
		DeferCleanup(func() {
			s.Close()
			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
	})
	count := func(key string) func() int {
		return func() int { n, _ := rec.renewals(key); return n }
	}

	It("renews a lease every interval until it is stopped", func() {
		start := time.Now()
		e := s.Add(watchdog.Lease{Key: "a", Field: "f"})
		Eventually(count("a")).Should(BeNumerically(">=", 4))
		Expect(time.Since(start)).To(BeNumerically(">=", 200*time.Millisecond), "not faster than the interval")
		Expect(s.Len()).To(Equal(1))
		e.Stop()
		e.Stop()
		n := count("a")()
		Consistently(count("a")).WithTimeout(200 * time.Millisecond).Should(BeNumerically("<=", n+1))
		Expect(e.Lost()).NotTo(BeClosed(), "a stop is not a loss")
		Expect(e.Err()).NotTo(HaveOccurred())
		Expect(s.Len()).To(BeZero())
	})

	It("renews leases due together in one call, in chunks of MaxBatch", func() {
		// A long interval so that the 2,500 leases fall due within a tenth
		// of it, even under the race detector.
		slow := watchdog.New(rec.renew, 2*time.Second)
		DeferCleanup(slow.Close)
		for i := range 2500 {
			slow.Add(watchdog.Lease{Key: fmt.Sprint("k", i)})
		}
		Eventually(slow.Rounds).WithTimeout(4 * time.Second).Should(BeNumerically(">=", 3))
		_, sizes := rec.renewals("")
		Expect(sizes[:3]).To(ConsistOf(watchdog.MaxBatch, watchdog.MaxBatch, 500))
	})

	It("stops renewing and signals a lost lease", func() {
		e := s.Add(watchdog.Lease{Key: "lost"})
		other := s.Add(watchdog.Lease{Key: "kept"})
		rec.set("lost", watchdog.Lost)
		Eventually(e.Lost()).Should(BeClosed())
		Expect(e.Err()).To(MatchError(watchdog.ErrLost))
		Expect(count("lost")()).To(Equal(1))
		Consistently(count("lost")).WithTimeout(200 * time.Millisecond).Should(Equal(1))
		Expect(other.Lost()).NotTo(BeClosed())
		Expect(count("kept")()).To(BeNumerically(">=", 3))
	})

	It("retries a failed renewal sooner than the interval and keeps the lease", func() {
		e := s.Add(watchdog.Lease{Key: "flaky"})
		rec.fail(errors.New("redis down"))
		Eventually(count("flaky")).Should(BeNumerically(">=", 4))
		Expect(e.Lost()).NotTo(BeClosed())
		rec.fail(nil)
		n := count("flaky")()
		Eventually(count("flaky")).Should(BeNumerically(">", n))
		Expect(e.Lost()).NotTo(BeClosed())
	})

	It("reports the leases it still watched as lost with ErrClosed when closed", func() {
		e := s.Add(watchdog.Lease{Key: "open"})
		s.Close()
		Expect(e.Lost()).To(BeClosed())
		Expect(e.Err()).To(MatchError(watchdog.ErrClosed))
		late := s.Add(watchdog.Lease{Key: "late"})
		Expect(late.Lost()).To(BeClosed())
		Expect(late.Err()).To(MatchError(watchdog.ErrClosed))
		s.Close()
	})

	It("rejects a non-positive interval", func() {
		Expect(func() { watchdog.New(rec.renew, 0) }).To(Panic())
	})
})
