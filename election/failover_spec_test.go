package election_test

import (
	"context"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/watchdog"
)

// The failover bounds docs/election.md states.
var _ = Describe("Election failover", Label("slow", "fault"), func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("replaces a crashed leader after at most two of its leases: its lock runs out, then its recorded lease is waited out", func() {
		name := spectest.UniqueName("el-crash")
		leadsAtOnce(e.Raw, name)
		h := spectest.StartHelper("leader", "HELPER_LOCK="+name, "HELPER_VALUE=crashes", "HELPER_WATCHDOG_MS=2000")
		helperAt(h, "leader")
		b, _ := candidate(e, name, lease, election.WithMaxLease(lease))
		wonB := campaignIn(ctx, b, "successor", context.Background())
		Consistently(wonB).WithTimeout(time.Second).ShouldNot(Receive())
		crashed := time.Now()
		h.Kill()
		var w won
		Eventually(wonB).WithTimeout(4 * lease).Should(Receive(&w))
		took := w.at.Sub(crashed)
		AddReportEntry("crashed leader replaced after", took.String())
		// The lock has 2/3 to 1 lease left at the crash, then the lease is
		// waited out: 5/3 to 2 leases, plus the allowance and round trips.
		Expect(took).To(BeNumerically(">=", lease+lease/2))
		Expect(took).To(BeNumerically("<=", 2*lease+watchdog.Allowance(lease)+1500*time.Millisecond))
		Expect(b.Resign(ctx)).To(Succeed())
	})

	It("lets the next leader lead without a wait once a leader whose Client closed has written the end of its term", func() {
		const l = 3 * time.Second
		name := spectest.UniqueName("el-closed")
		a, ca := candidate(e, name, l, election.WithMaxLease(l))
		b, cb := candidate(e, name, l, election.WithMaxLease(l))
		leadsAtOnce(e.Raw, name)
		leadA, err := a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		wonB := campaignIn(ctx, b, "b", context.Background())
		Expect(ca.Close()).To(Succeed()) // the lock stays until its lease runs out; a's context ends now
		Eventually(leadA.Done()).Should(BeClosed())
		Expect(context.Cause(leadA)).To(MatchError(rlock.ErrClosed))
		Eventually(func() string { return e.Raw.Get(ctx, name+":leader").Val() }).WithTimeout(5*time.Second).
			Should(HavePrefix("E "), "a wrote the end of its term")
		Eventually(func() []string { return e.Raw.HKeys(ctx, name).Val() }).WithTimeout(2 * l).
			Should(ContainElement(HavePrefix(cb.ID())))
		took := time.Now()
		var w won
		Eventually(wonB).WithTimeout(2 * l).Should(Receive(&w))
		Expect(w.at.Sub(took)).To(BeNumerically("<", l), "no lease waited out")
		Expect(strings.HasPrefix(e.Raw.Get(ctx, name+":leader").Val(), "L ")).To(BeTrue())
		Expect(b.Resign(ctx)).To(Succeed())
	})

	It("keeps a crashed leader's record out of Leader once its lock ran out", func() {
		name := spectest.UniqueName("el-crash-leader")
		leadsAtOnce(e.Raw, name)
		h := spectest.StartHelper("leader", "HELPER_LOCK="+name, "HELPER_VALUE=crashes", "HELPER_WATCHDOG_MS=2000")
		helperAt(h, "leader")
		el, err := election.New(e.Raw, e.Client().NewLock(name))
		Expect(err).NotTo(HaveOccurred())
		Expect(el.Leader(ctx)).To(Equal("crashes"))
		h.Kill()
		Eventually(func() error { _, err := el.Leader(ctx); return err }).WithTimeout(4 * lease).
			Should(MatchError(election.ErrNoLeader))
		Expect(e.Raw.Get(ctx, name+":leader").Val()).To(HavePrefix("L "), "the record stays: the next leader waits out its lease")
	})

	It("hands over at once when a leader shuts down on SIGTERM as docs/election.md shows, and a campaigning candidate stops on SIGTERM", func() {
		name := spectest.UniqueName("el-sigterm")
		leadsAtOnce(e.Raw, name)
		ha := spectest.StartHelper("shutdown", "HELPER_LOCK="+name, "HELPER_VALUE=a", "HELPER_WATCHDOG_MS=2000")
		helperAt(ha, "leader")
		hc := spectest.StartHelper("shutdown", "HELPER_LOCK="+name, "HELPER_VALUE=c", "HELPER_WATCHDOG_MS=2000")
		Consistently(hc.Lines).WithTimeout(500*time.Millisecond).ShouldNot(Receive(), "c campaigns while a leads")
		hc.Signal(syscall.SIGTERM)
		var line string
		Eventually(hc.Lines).WithTimeout(5 * time.Second).Should(Receive(&line))
		Expect(line).To(And(HavePrefix("campaign "), ContainSubstring("context canceled")))
		Eventually(hc.Lines).WithTimeout(5*time.Second).Should(BeClosed(), "c exited")

		b, _ := candidate(e, name, lease, election.WithMaxLease(lease))
		wonB := campaignIn(ctx, b, "b", context.Background())
		Consistently(wonB).WithTimeout(500*time.Millisecond).ShouldNot(Receive(), "b waits while a leads")
		term := time.Now()
		ha.Signal(syscall.SIGTERM)
		stopped := helperAt(ha, "stopped")
		var w won
		Eventually(wonB).WithTimeout(5 * time.Second).Should(Receive(&w))
		Expect(stopped).To(BeTemporally("<", w.at))
		Expect(w.at.Sub(term)).To(BeNumerically("<", lease), "a resigned: no lease waited out")
		Eventually(ha.Lines).WithTimeout(5*time.Second).Should(BeClosed(), "a exited")
		Expect(b.Leader(ctx)).To(Equal("b"))
		Expect(b.Resign(ctx)).To(Succeed())
	})
})
