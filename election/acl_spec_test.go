package election_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Redis ACL users (docs/layout.md, "ACL users"): the election needs its
// channel to tell observers of new terms, and INFO to tell its own records
// from older copies; without them it still elects one leader at a time.
var _ = Describe("Election as an ACL user", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// aclCandidate makes the ACL user (rules after "reset on >pw"),
	// deleted at cleanup, and a candidate logged in as it on a 2 s
	// watchdog timeout.
	aclCandidate := func(user, name string, rules []string, opts ...election.Option) (*election.Election, *redis.Client, *spectest.LogBuffer) {
		GinkgoHelper()
		user = fmt.Sprintf("%s%d", user, GinkgoParallelProcess())
		args := []any{"acl", "setuser", user, "reset", "on", ">pw"}
		for _, r := range rules {
			args = append(args, r)
		}
		Expect(e.Raw.Do(ctx, args...).Err()).To(Succeed())
		DeferCleanup(func() { e.Raw.Do(context.Background(), "acl", "deluser", user) })
		logs := &spectest.LogBuffer{}
		c, rdb := spectest.ClientWith(&redis.Options{Addr: spectest.Server().Addr, Username: user, Password: "pw"},
			rlock.WithWatchdogTimeout(lease), rlock.WithLogger(logs.Logger()))
		el, err := election.New(rdb, c.NewLock(name), append(opts, election.WithMaxLease(lease), election.WithLogger(logs.Logger()))...)
		Expect(err).NotTo(HaveOccurred())
		return el, rdb, logs
	}

	It("elects, resigns and hands over at once for a user allowed only Redisson's channels; observers poll; each refusal is logged once", Label("slow"), func() {
		rules := []string{"~*", "resetchannels", "&redisson*", "+@all"} // may lock and unlock
		name := spectest.UniqueName("el-acl")
		a, rdbA, logsA := aclCandidate("elacla", name, rules, election.WithPollInterval(100*time.Millisecond))
		b, _, logsB := aclCandidate("elaclb", name, rules)
		leadsAtOnce(e.Raw, name)
		octx, cancel := context.WithCancel(ctx)
		defer cancel()
		seen := a.Observe(octx)

		leadA, err := a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Leader(ctx)).To(Equal("a"))
		Eventually(seen).WithTimeout(5*time.Second).Should(Receive(Equal("a")), "Observe reads the leader when it may not subscribe")

		wonB := campaignIn(ctx, b, "b", leadA)
		Consistently(wonB).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		resigned := time.Now()
		Expect(a.Resign(ctx)).To(Succeed())
		var w won
		Eventually(wonB).WithTimeout(5 * time.Second).Should(Receive(&w))
		Expect(w.prevErr).To(HaveOccurred())
		Expect(w.at.Sub(resigned)).To(BeNumerically("<", lease), "after a Resign, no lease to wait out")
		Eventually(seen).WithTimeout(5 * time.Second).Should(Receive(Equal("b")))
		Expect(b.Resign(ctx)).To(Succeed())
		Expect(rdbA.Get(ctx, name+":leader").Val()).To(HavePrefix("R "), "every write took effect")

		// a wrote four records (P, L, R), b three: one warning each.
		Expect(logsA.Count("may not publish on the election's channel")).To(Equal(1))
		Expect(logsB.Count("may not publish on the election's channel")).To(Equal(1))
		Expect(logsA.Count("refused the subscription to the election's channel")).To(Equal(1))
		Expect(logsA.Count("goredisson_election__channel:"+name+":leader")).To(BeNumerically(">=", 2), "the warnings name the channel")
	})

	It("still elects one leader at a time for a user that may not run INFO, waiting the max lease at each hand-over, and says so once", Label("slow"), func() {
		rules := []string{"~*", "&*", "+@all", "-info"}
		name := spectest.UniqueName("el-acl-info")
		a, rdbA, logsA := aclCandidate("elinfoa", name, rules)
		b, _, _ := aclCandidate("elinfob", name, rules)
		leadsAtOnce(e.Raw, name) // written by the default user, with the server's identity
		began := time.Now()
		leadA, err := a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(began)).To(BeNumerically(">=", lease), "a cannot know this server: the max lease")
		Expect(rdbA.Get(ctx, name+":leader").Val()).To(MatchRegexp(`^L \S+ 1 \d+ \S+ -\n`), "the record names no server")

		wonB := campaignIn(ctx, b, "b", leadA)
		Consistently(wonB).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		resigned := time.Now()
		Expect(a.Resign(ctx)).To(Succeed())
		var w won
		Eventually(wonB).WithTimeout(3 * lease).Should(Receive(&w))
		Expect(w.at.Sub(resigned)).To(BeNumerically(">=", lease), "b waited the max lease after the Resign")
		Expect(w.prevErr).To(HaveOccurred())
		Expect(b.Resign(ctx)).To(Succeed())
		Expect(logsA.Count("may not run INFO")).To(Equal(1))
	})
})
