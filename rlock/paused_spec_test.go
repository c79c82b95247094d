package rlock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// lookRing is how many of its last live looks the paused-holder helper
// reports.
const lookRing = 256

func init() {
	// paused-holder takes the lock HELPER_LOCK (HELPER_KIND=lock), the
	// kept permit of the semaphore HELPER_LOCK (HELPER_KIND=permit) or a
	// permit hold of it with a fixed lease of HELPER_WATCHDOG_MS
	// (HELPER_KIND=permithold, rlock.AcquirePermit), prints
	// "held", and loops on the Err of its loss signal as code that reads
	// ctx.Err() before each write does. At the first look that sees the
	// loss it prints "lost <ns> <looks> <live looks>": the wall-clock time
	// (ns) of that look, how many looks saw the signal live, and the start
	// times of the last lookRing of those, comma-separated; then "cause
	// <cause>". It stays until killed.
	helpers["paused-holder"] = func(ctx context.Context, c *rlock.Client) error {
		var held context.Context
		switch name := os.Getenv("HELPER_LOCK"); os.Getenv("HELPER_KIND") {
		case "permit":
			k, err := c.NewPermitExpirableSemaphore(name).AcquireKept(ctx)
			if err != nil {
				return err
			}
			held, _ = k.LostContext(ctx)
		case "permithold": // a fixed lease of the watchdog timeout
			lease, _ := strconv.Atoi(os.Getenv("HELPER_WATCHDOG_MS"))
			p, err := rlock.AcquirePermit(ctx, c.NewPermitExpirableSemaphore(name), 0, time.Duration(lease)*time.Millisecond)
			if err != nil {
				return err
			}
			held = p.Context()
		default:
			l := c.NewLock(name)
			if err := l.Lock(ctx); err != nil {
				return err
			}
			held, _ = rlock.LostContext(ctx, l)
		}
		fmt.Println("held")
		var ring [lookRing]int64
		looks := 0
		for {
			// The time is read before the look: a live look reported
			// after a time t started after t.
			t := time.Now().UnixNano()
			if held.Err() != nil {
				break
			}
			ring[looks%lookRing] = t
			looks++
		}
		lost := time.Now().UnixNano()
		live := make([]string, 0, lookRing)
		for i := max(0, looks-lookRing); i < looks; i++ {
			live = append(live, strconv.FormatInt(ring[i%lookRing], 10))
		}
		fmt.Printf("lost %d %d %s\n", lost, looks, strings.Join(live, ","))
		fmt.Println("cause", context.Cause(held))
		select {}
	}
}

// pausedKey is a context key of the paused-holder specs.
type pausedKey struct{}

// pausedReport is what a paused-holder helper said after it resumed.
type pausedReport struct {
	lost   time.Time   // its first look that saw the loss
	looks  int         // looks that saw the signal live, in all
	live   []time.Time // the start times of the last of those
	cause  string
	takeAt time.Time // when the spec's takeover had returned
}

// liveAfterTakeover returns the live looks that started after the takeover.
func (r pausedReport) liveAfterTakeover() []time.Duration {
	var out []time.Duration
	for _, t := range r.live {
		if t.After(r.takeAt) {
			out = append(out, t.Sub(r.takeAt))
		}
	}
	return out
}

// A holder whose process is stopped past its watchdog lease (SIGSTOP: a
// stopped VM, a long GC pause) while another client takes the lock must see
// its loss signal ended at its first look after it resumes: the signal is
// live only while the local deadline has not passed, not until a goroutine
// of the watchdog gets to run (issue 39, item 2).
var _ = Describe("The loss signal of a paused holder", func() {
	const (
		lease    = 2 * time.Second // the helpers' watchdog timeout
		runs     = 20
		perRound = 4 // helpers at a time
	)
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// pausedRuns runs the paused-holder helper runs times (perRound at a
	// time, each on its own lock or semaphore): each is stopped (SIGSTOP)
	// at a random moment of its first lease, take takes the lock (or the
	// permit) from this process once Redis let the helper's hold expire,
	// and the helper is continued (SIGCONT) then. It returns the reports.
	// take runs on a goroutine of its own and returns how to give back
	// what it took.
	pausedRuns := func(kind string, prepare func(name string), take func(name string) (release func())) []pausedReport {
		GinkgoHelper()
		var reports []pausedReport
		for round := range runs / perRound {
			names := make([]string, perRound)
			procs := make([]*spectest.HelperProc, perRound)
			releases := make([]func(), perRound)
			for i := range perRound {
				names[i] = spectest.UniqueName(fmt.Sprintf("paused-%s-%d-%d", kind, round, i))
				prepare(names[i])
				procs[i] = spectest.StartHelper("paused-holder", "HELPER_LOCK="+names[i], "HELPER_KIND="+kind,
					fmt.Sprintf("HELPER_WATCHDOG_MS=%d", lease.Milliseconds()))
			}
			out := make([]pausedReport, perRound)
			var wg sync.WaitGroup
			for i, h := range procs {
				wg.Go(func() {
					defer GinkgoRecover()
					Eventually(h.Lines).WithTimeout(10 * time.Second).Should(Receive(Equal("held")))
					// Anywhere in the first lease: before, during or
					// after a renewal.
					time.Sleep(rand.N(lease / 2))
					Expect(syscall.Kill(h.Pid(), syscall.SIGSTOP)).To(Succeed())
					releases[i] = take(names[i])
					out[i].takeAt = time.Now()
					Expect(syscall.Kill(h.Pid(), syscall.SIGCONT)).To(Succeed())
					var line, cause string
					Eventually(h.Lines).WithTimeout(10 * time.Second).Should(Receive(&line))
					Eventually(h.Lines).WithTimeout(time.Second).Should(Receive(&cause))
					f := strings.Fields(line)
					Expect(f).To(HaveLen(4), line) // a helper that looked at least once
					Expect(f[0]).To(Equal("lost"))
					ns, err := strconv.ParseInt(f[1], 10, 64)
					Expect(err).NotTo(HaveOccurred())
					out[i].lost = time.Unix(0, ns)
					out[i].looks, err = strconv.Atoi(f[2])
					Expect(err).NotTo(HaveOccurred())
					for _, s := range strings.Split(f[3], ",") {
						ns, err := strconv.ParseInt(s, 10, 64)
						Expect(err).NotTo(HaveOccurred())
						out[i].live = append(out[i].live, time.Unix(0, ns))
					}
					out[i].cause = cause
				})
			}
			spectest.WaitAll(&wg)
			for i, h := range procs {
				h.Kill()
				if releases[i] != nil {
					releases[i]()
				}
			}
			reports = append(reports, out...)
		}
		return reports
	}

	// expectNoLiveLook checks that no helper looked at a live signal after
	// the takeover, and that each saw the loss with ErrLockLost.
	expectNoLiveLook := func(reports []pausedReport) {
		GinkgoHelper()
		Expect(reports).To(HaveLen(runs))
		var bad []string
		for i, r := range reports {
			after := r.liveAfterTakeover()
			GinkgoWriter.Printf("run %d: %d live looks, the loss seen %v after the takeover, %d of the last %d live looks after it\n",
				i, r.looks, r.lost.Sub(r.takeAt), len(after), len(r.live))
			if len(after) > 0 {
				bad = append(bad, fmt.Sprintf("run %d: %d of its last %d live looks after the takeover, from %v to %v after it; the loss seen %v after it",
					i, len(after), len(r.live), after[0], after[len(after)-1], r.lost.Sub(r.takeAt)))
			}
			// ErrLockLost's words, or a kept permit's ("permit <id> lost").
			Expect(r.cause).To(Or(ContainSubstring(rlock.ErrLockLost.Error()), MatchRegexp(`permit [0-9a-f]+ lost`)), "run %d", i)
		}
		Expect(bad).To(BeEmpty(), "the loss signal was live after another client took the lock")
	}

	It("never shows a stopped holder's LostContext live after another client took the lock (20 runs)", Label("slow", "fault"), func() {
		owner := ctxowner.New(ctx)
		c := e.Client()
		reports := pausedRuns("lock", func(string) {}, func(name string) func() {
			l := c.NewLock(name)
			tctx, cancel := context.WithTimeout(owner, 20*time.Second)
			defer cancel()
			Expect(l.Lock(tctx)).To(Succeed())
			return func() { Expect(l.Unlock(owner)).To(Succeed()) }
		})
		expectNoLiveLook(reports)
	})

	// onePermit sets one permit of a semaphore per name; takePermit takes
	// it once the helper's lease ran out in Redis.
	onePermit := func(c *rlock.Client) func(string) {
		return func(name string) {
			Expect(c.NewPermitExpirableSemaphore(name).TrySetPermits(ctx, 1)).To(BeTrue())
		}
	}
	takePermit := func(c *rlock.Client) func(string) func() {
		return func(name string) func() {
			sem := c.NewPermitExpirableSemaphore(name)
			tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			id, err := sem.Acquire(tctx, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			return func() { Expect(sem.Release(ctx, id)).To(Succeed()) }
		}
	}

	It("never shows a stopped holder's kept permit live after another client took the only permit (20 runs)", Label("slow", "fault"), func() {
		c := e.Client()
		expectNoLiveLook(pausedRuns("permit", onePermit(c), takePermit(c)))
	})

	It("never shows a stopped holder's permit hold live after another client took the only permit (20 runs)", Label("slow", "fault"), func() {
		c := e.Client()
		expectNoLiveLook(pausedRuns("permithold", onePermit(c), takePermit(c)))
	})

	// The same without a process pause, deterministically: the Client's
	// watchdog goroutine waits on a renewal that Redis (SIGSTOPped) does not
	// answer, as it can in a paused process, while fixed leases pass their
	// local deadlines. Every look after a deadline sees the loss, derived
	// contexts end at once, and no renewal or goroutine had to run first.
	It("ends the loss signals at the local deadline while the watchdog's goroutine waits on a hung renewal", Label("slow", "fault"), func() {
		const (
			wd    = 9 * time.Second // renewed every 3 s; a hung renewal waits 3 s
			fixed = 4500 * time.Millisecond
		)
		srv := spectest.StartServers(1)[0]
		c, _ := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(wd))
		owner := ctxowner.New(ctx)
		name := spectest.UniqueName("hung")
		// A watchdog hold whose renewal, 3 s from now, hangs for 3 s.
		renewed := c.NewLock(name + ":renewed")
		Expect(renewed.Lock(owner)).To(Succeed())
		single := c.NewLock(name + ":single")
		multi, err := rlock.NewMultiLock(c.NewLock(name+":m1"), c.NewLock(name+":m2"))
		Expect(err).NotTo(HaveOccurred())
		red, err := rlock.NewRedLock(c.NewLock(name+":r1"), c.NewLock(name+":r2"), c.NewLock(name+":r3"))
		Expect(err).NotTo(HaveOccurred())
		before := time.Now()
		for _, l := range []rlock.Locker{single, multi, red} {
			Expect(l.LockLease(owner, fixed)).To(Succeed())
		}
		after := time.Now() // every fixed lease's deadline is before after+fixed
		signals := map[string]context.Context{}
		for n, l := range map[string]rlock.Locker{"Lock": single, "MultiLock": multi, "RedLock": red} {
			lctx, stop := rlock.LostContext(owner, l)
			DeferCleanup(stop)
			signals[n] = lctx
		}
		// A LostContext made from another (nested critical sections), and
		// contexts derived from one.
		nested, stopNested := rlock.LostContext(signals["Lock"], renewed)
		DeferCleanup(stopNested)
		signals["LostContext of a LostContext"] = nested
		signals["WithValue"] = context.WithValue(signals["Lock"], pausedKey{}, 1)
		child, cancelChild := context.WithCancel(signals["Lock"])
		DeferCleanup(cancelChild)
		for n, s := range signals {
			Expect(s.Err()).NotTo(HaveOccurred(), n)
		}
		Expect(child.Err()).NotTo(HaveOccurred())
		Expect(nested.Deadline()).To(BeZero(), "no deadline: ctx had none")

		Expect(srv.Pause()).To(Succeed())
		DeferCleanup(srv.Resume)
		Expect(time.Since(before)).To(BeNumerically("<", wd/3), "paused before the first renewal")
		// At the upper bound of the fixed leases' deadlines the watchdog's
		// goroutine is still waiting for the renewal sent at 3 s (until 6 s).
		time.Sleep(time.Until(after.Add(fixed)))
		looked := time.Now()
		for n, s := range signals {
			Expect(s.Err()).To(MatchError(context.Canceled), "%s: a look after the deadline", n)
			Expect(context.Cause(s)).To(MatchError(rlock.ErrLockLost), n)
			Expect(s.Done()).To(BeClosed(), n)
		}
		// The derived child ended by the deadline timer, or the looks.
		Eventually(child.Done()).WithTimeout(time.Second).Should(BeClosed())
		Expect(context.Cause(child)).To(MatchError(rlock.ErrLockLost))
		// The hung renewal gives up 6 s after the start: a look before
		// then is one no goroutine of the watchdog could have prepared.
		GinkgoWriter.Printf("looked %v after the upper bound of the deadlines, %v after the start (the hung renewal gives up at 6 s)\n",
			looked.Sub(after.Add(fixed)), looked.Sub(before))
	})

	It("ends a derived context at the deadline without a look, while the watchdog's goroutine waits on a hung renewal", Label("slow", "fault"), func() {
		const (
			wd    = 9 * time.Second
			fixed = 4500 * time.Millisecond
		)
		srv := spectest.StartServers(1)[0]
		c, _ := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(wd))
		owner := ctxowner.New(ctx)
		name := spectest.UniqueName("hung-timer")
		Expect(c.NewLock(name + ":renewed").Lock(owner)).To(Succeed())
		l := c.NewLock(name)
		Expect(l.LockLease(owner, fixed)).To(Succeed())
		after := time.Now()
		lctx, stop := rlock.LostContext(owner, l)
		DeferCleanup(stop)
		child, cancel := context.WithTimeout(lctx, time.Hour)
		DeferCleanup(cancel)
		ended := make(chan time.Time, 1)
		context.AfterFunc(child, func() { ended <- time.Now() })
		Expect(srv.Pause()).To(Succeed())
		DeferCleanup(srv.Resume)
		// Without a timer of its own at the deadline the child would end
		// only when the hung renewal (sent at 3 s) gives up at 6 s.
		var at time.Time
		Eventually(ended).WithTimeout(fixed + 1500*time.Millisecond).Should(Receive(&at))
		Expect(at.Sub(after)).To(BeNumerically("<", fixed+time.Second), "ended at the deadline, not when the renewal gave up")
		Expect(context.Cause(child)).To(MatchError(rlock.ErrLockLost))
	})
})
