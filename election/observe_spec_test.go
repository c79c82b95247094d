package election_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Leader and Observe tell the truth at each instant (issue 39 item 7):
// Leader reads the lock and the record at one instant, Observe is told of
// each term. These specs use only the API election had before, so that
// they run (and fail) on it too.
var _ = Describe("Election's Leader and Observe", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})
	// started returns a candidate on a new lock whose last leader
	// resigned: its first Campaign leads at once.
	started := func(prefix string, c *rlock.Client) (*election.Election, string) {
		GinkgoHelper()
		name := spectest.UniqueName(prefix)
		leadsAtOnce(e.Raw, name)
		el, err := election.New(e.Raw, c.NewLock(name))
		Expect(err).NotTo(HaveOccurred())
		return el, name
	}

	It("Leader reports no leader once the leader's hold is gone, even while another owner holds the lock", func() {
		c := e.Client(rlock.WithWatchdogTimeout(30 * time.Second))
		a, name := started("el-leader-gone", c)
		_, err := a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Leader(ctx)).To(Equal("a"))

		other := e.Client()
		Expect(other.NewLock(name).ForceUnlock(ctx)).To(BeTrue())
		_, err = a.Leader(ctx)
		Expect(err).To(MatchError(election.ErrNoLeader), "the lock is free")
		owner := ctxowner.New(ctx)
		Expect(other.NewLock(name).Lock(owner)).To(Succeed()) // a's record is still in the key: a learns of its loss at its next renewal
		_, err = a.Leader(ctx)
		Expect(err).To(MatchError(election.ErrNoLeader), "the lock's holder is not the recorded leader")
		Expect(other.NewLock(name).Unlock(owner)).To(Succeed())
	})

	It("Observe and ObserveTerms take a nil context as context.Background, and close once their Redis client is closed", func() {
		rdb := redis.NewClient(&redis.Options{Addr: spectest.Server().Addr}) // closed below
		name := spectest.UniqueName("el-observe-nil")
		leadsAtOnce(e.Raw, name)
		el, err := election.New(rdb, e.Client(rlock.WithWatchdogTimeout(2*time.Second)).NewLock(name), election.WithMaxLease(2*time.Second))
		Expect(err).NotTo(HaveOccurred())
		var noCtx context.Context
		values, terms := el.Observe(noCtx), el.ObserveTerms(noCtx)
		_, err = el.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Eventually(values).WithTimeout(5 * time.Second).Should(Receive(Equal("a")))
		Eventually(terms).WithTimeout(5 * time.Second).Should(Receive(HaveField("Value", "a")))
		Expect(el.Resign(ctx)).To(Succeed())
		Expect(rdb.Close()).To(Succeed()) // the only way to stop them
		Eventually(values).WithTimeout(5 * time.Second).Should(BeClosed())
		Eventually(terms).WithTimeout(5 * time.Second).Should(BeClosed())
	})

	It("Observe reports a re-election with the same value", Label("slow"), func() {
		a, _ := started("el-observe-again", e.Client(rlock.WithWatchdogTimeout(30*time.Second)))
		octx, cancel := context.WithCancel(ctx)
		defer cancel()
		seen := a.Observe(octx)
		for range 2 {
			_, err := a.Campaign(ctx, "same")
			Expect(err).NotTo(HaveOccurred())
			Eventually(seen).WithTimeout(5*time.Second).Should(Receive(Equal("same")), "each term is reported")
			Expect(a.Resign(ctx)).To(Succeed())
		}
		Consistently(seen).WithTimeout(time.Second).ShouldNot(Receive(), "two terms, two reports")
	})

	It("Observe sends no command to Redis while the leader stays", Label("slow"), func() {
		a, _ := started("el-observe-quiet", e.Client(rlock.WithWatchdogTimeout(30*time.Second))) // renewed 10 s after it leads
		octx, cancel := context.WithCancel(ctx)
		defer cancel()
		seen := a.Observe(octx)
		_, err := a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Eventually(seen).WithTimeout(5 * time.Second).Should(Receive(Equal("a")))
		Expect(e.Raw.ConfigResetStat(ctx).Err()).To(Succeed())
		Consistently(func() map[string]int {
			calls := e.CommandCalls()
			// The spec's own; go-redis's health check of the subscription;
			// NewClient's one eviction check (CONFIG GET maxmemory-policy,
			// on a goroutine of its own: a loaded machine runs it late).
			for _, quiet := range []string{"info", "config|resetstat", "ping", "config|get"} {
				delete(calls, quiet)
			}
			return calls
		}).WithTimeout(2*time.Second).Should(BeEmpty(), "no polling")
		Expect(a.Resign(ctx)).To(Succeed())
	})
})
