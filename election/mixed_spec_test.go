package election_test

import (
	"context"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Candidates on different watchdog timeouts (issue 39 item 3): a leader on
// a long timeout learns of a loss only at its next renewal (a third of its
// lease) or when its lease runs out; a successor on a short timeout must
// not lead before then. These specs use only the API election had before
// the fix, so that they run (and fail) on it too.
var _ = Describe("Election with candidates on different watchdog timeouts", Label("slow", "fault"), func() {
	const (
		long  = 30 * time.Second // the leader's: renewed every 10 s
		short = time.Second      // the successor's
	)
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// endOf returns a channel that gets the time ctx ended.
	endOf := func(lead context.Context) <-chan time.Time {
		ch := make(chan time.Time, 1)
		go func() { <-lead.Done(); ch <- time.Now() }()
		return ch
	}
	// holds waits until the lock's hash has a field of Client c.
	holds := func(rdb *redis.Client, name string, c *rlock.Client) {
		GinkgoHelper()
		Eventually(func() []string { return rdb.HKeys(ctx, name).Val() }).WithTimeout(15 * time.Second).
			Should(ContainElement(HavePrefix(c.ID())))
	}

	// aLeadsBWaits makes a lead and b campaign: a's leadership context,
	// the time it ends, what b sees when it leads.
	aLeadsBWaits := func(a, b *election.Election) (context.Context, <-chan time.Time, <-chan won) {
		GinkgoHelper()
		leadA, err := a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		lostA := endOf(leadA)
		wonB := campaignIn(ctx, b, "b", leadA)
		Consistently(wonB).WithTimeout(short).ShouldNot(Receive(), "b waits while a holds the lock")
		return leadA, lostA, wonB
	}
	// endedFirst waits for b to lead and checks that a's context had
	// ended (lost) by then.
	endedFirst := func(wonB <-chan won, leadA context.Context, lostA <-chan time.Time) {
		GinkgoHelper()
		var w won
		Eventually(wonB).WithTimeout(2 * long).Should(Receive(&w))
		Expect(w.prevErr).To(HaveOccurred(), "a's leadership context had ended when b's Campaign returned")
		Expect(context.Cause(leadA)).To(MatchError(rlock.ErrLockLost))
		var lostAt time.Time
		Expect(lostA).To(Receive(&lostAt))
		Expect(lostAt).To(BeTemporally("<", w.at))
	}

	It("never has two leaders when the leader's lock is force-unlocked: the successor on a 1 s timeout waits out the leader's 30 s lease", func() {
		name := spectest.UniqueName("el-mixed-force")
		a, _ := candidate(e, name, long)
		b, cb := candidate(e, name, short)
		leadsAtOnce(e.Raw, name)
		leadA, lostA, wonB := aLeadsBWaits(a, b)

		Expect(cb.NewLock(name).ForceUnlock(ctx)).To(BeTrue()) // a learns of it at its next renewal, 10 s after it took the lock
		holds(e.Raw, name, cb)
		_, err := b.Leader(ctx)
		Expect(err).To(MatchError(election.ErrNoLeader), "b holds the lock and has not taken office; a's hold is gone")
		endedFirst(wonB, leadA, lostA)
		Expect(b.Leader(ctx)).To(Equal("b"))
		Expect(a.Resign(ctx)).To(MatchError(election.ErrNotLeader))
		Expect(b.Resign(ctx)).To(Succeed())
	})

	It("never has two leaders across a Redis restart that loses the lock and the leader key: the successor on a 1 s timeout waits out the longest lease it knows of", func() {
		name := spectest.UniqueName("el-mixed-restart")
		srv := spectest.StartServers(1)[0]
		ca, rdbA := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(long))
		cb, rdbB := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(short))
		a, err := election.New(rdbA, ca.NewLock(name))
		Expect(err).NotTo(HaveOccurred())
		b, err := election.New(rdbB, cb.NewLock(name))
		Expect(err).NotTo(HaveOccurred())
		leadsAtOnce(rdbA, name)
		leadA, lostA, wonB := aLeadsBWaits(a, b)

		Expect(srv.Restart()).To(Succeed()) // the lock and the leader key are gone; a learns of it at its next renewal
		holds(rdbB, name, cb)
		endedFirst(wonB, leadA, lostA)
		Expect(b.Leader(ctx)).To(Equal("b"))
		Expect(b.Resign(ctx)).To(Succeed())
	})

	It("never has two leaders when the leader on a 4 s timeout is stopped past its lease: the successor on a 1 s timeout leads only after the stopped leader's lease", func() {
		name := spectest.UniqueName("el-mixed-paused")
		leadsAtOnce(e.Raw, name)
		h := spectest.StartHelper("leader", "HELPER_LOCK="+name, "HELPER_VALUE=paused", "HELPER_WATCHDOG_MS=4000")
		helperAt(h, "leader")
		b, cb := candidate(e, name, short)
		h.Signal(syscall.SIGSTOP)
		stopped := true
		DeferCleanup(func() {
			if stopped {
				h.Signal(syscall.SIGCONT)
			}
		})
		wonB := campaignIn(ctx, b, "b", context.Background())
		holds(e.Raw, name, cb) // the stopped leader's lease ran out in Redis
		Consistently(wonB).WithTimeout(2*time.Second).ShouldNot(Receive(), "b waits out the stopped leader's 4 s lease, not its own 1 s")
		h.Signal(syscall.SIGCONT)
		stopped = false
		lost := helperAt(h, "lost")
		var w won
		Eventually(wonB).WithTimeout(10 * time.Second).Should(Receive(&w))
		Expect(lost).To(BeTemporally("<", w.at), "the stopped leader's context ended before b led")
		Expect(b.Leader(ctx)).To(Equal("b"))
		Expect(b.Resign(ctx)).To(Succeed())
	})

	It("makes a candidate that replaces a waiting one wait out what that one waited for: the previous leader's lease, not the waiting one's", func() {
		const leaderLease = 6 * time.Second // renewed every 2 s
		name := spectest.UniqueName("el-mixed-chain")
		a, _ := candidate(e, name, leaderLease)
		c, cc := candidate(e, name, short)
		b, cb := candidate(e, name, short)
		leadsAtOnce(e.Raw, name)
		leadA, err := a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		// Force-unlocked at once, a learns of it at its first renewal, 2 s
		// after it took the lock: c has taken the lock well before.
		cctx, cancelC := context.WithCancel(ctx)
		defer cancelC()
		doneC := make(chan error, 1)
		go func() { _, err := c.Campaign(cctx, "c"); doneC <- err }()
		Expect(cb.NewLock(name).ForceUnlock(ctx)).To(BeTrue())
		holds(e.Raw, name, cc) // c took the lock and waits out a's lease
		wonB := campaignIn(ctx, b, "b", leadA)
		Consistently(wonB).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		gaveUp := time.Now()
		cancelC() // c gives up; b takes the lock from it
		Eventually(doneC).WithTimeout(5 * time.Second).Should(Receive(MatchError(context.Canceled)))
		var w won
		Eventually(wonB).WithTimeout(3 * leaderLease).Should(Receive(&w))
		Expect(w.at.Sub(gaveUp)).To(BeNumerically(">", leaderLease), "b waited out a's lease, which c had not finished waiting out")
		Expect(w.prevErr).To(HaveOccurred())
		Expect(b.Resign(ctx)).To(Succeed())
	})
})
