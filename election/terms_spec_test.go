package election_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/cluster"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("Election's terms", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("refuses a max lease <= 0", func() {
		l := e.Client().NewLock(spectest.UniqueName("el-maxlease"))
		_, err := election.New(e.Raw, l, election.WithMaxLease(0))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(err).To(MatchError(ContainSubstring("max lease")))
	})

	It("refuses a candidate whose watchdog timeout exceeds the max lease, naming both and the fix", func() {
		name := spectest.UniqueName("el-too-long")
		long := e.Client(rlock.WithWatchdogTimeout(time.Minute))
		_, err := election.New(e.Raw, long.NewLock(name)) // beside candidates on the default 30 s
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(err).To(MatchError(And(ContainSubstring("watchdog timeout 1m0s exceeds the election's max lease 30s"),
			ContainSubstring("WithMaxLease(1m0s)"))))
		m, err := rlock.NewMultiLock(e.Client().NewLock(name+":a"), long.NewLock(name+":b"))
		Expect(err).NotTo(HaveOccurred())
		_, err = election.New(e.Raw, m, election.WithMaxLease(45*time.Second))
		Expect(err).To(MatchError(ContainSubstring("watchdog timeout 1m0s exceeds the election's max lease 45s")), "a group's longest")
		_, err = election.New(e.Raw, long.NewLock(name), election.WithMaxLease(time.Minute))
		Expect(err).NotTo(HaveOccurred(), "every candidate raised the max lease first")
		_, err = election.New(e.Raw, e.Client().NewLock(name), election.WithMaxLease(time.Minute))
		Expect(err).NotTo(HaveOccurred(), "a shorter timeout is fine")
	})

	It("records a candidate's longest watchdog timeout: a Lock's Client's, the longest of a MultiLock's or RedLock's locks'", func() {
		one, three := e.Client(rlock.WithWatchdogTimeout(time.Second)), e.Client(rlock.WithWatchdogTimeout(3*time.Second))
		name := spectest.UniqueName("el-timeouts")
		d, ok := rlock.WatchdogTimeout(one.NewLock(name))
		Expect(ok).To(BeTrue())
		Expect(d).To(Equal(time.Second))
		m, err := rlock.NewMultiLock(one.NewLock(name+":a"), three.NewFencedLock(name+":b"))
		Expect(err).NotTo(HaveOccurred())
		d, ok = rlock.WatchdogTimeout(m)
		Expect(ok).To(BeTrue())
		Expect(d).To(Equal(3 * time.Second))
		r, err := rlock.NewRedLock(three.NewLock(name+":c"), one.NewLock(name+":d"), one.NewLock(name+":e"))
		Expect(err).NotTo(HaveOccurred())
		d, ok = rlock.WatchdogTimeout(r)
		Expect(ok).To(BeTrue())
		Expect(d).To(Equal(3 * time.Second))
		_, ok = rlock.WatchdogTimeout(nil)
		Expect(ok).To(BeFalse())
	})

	It("numbers the terms, a re-election of the same candidate too, records each leader's lease, and reports every term in order", Label("slow"), func() {
		name := spectest.UniqueName("el-terms")
		a, err := election.New(e.Raw, e.Client(rlock.WithWatchdogTimeout(3*time.Second)).NewLock(name), election.WithMaxLease(3*time.Second))
		Expect(err).NotTo(HaveOccurred())
		b, err := election.New(e.Raw, e.Client(rlock.WithWatchdogTimeout(lease)).NewLock(name), election.WithMaxLease(3*time.Second))
		Expect(err).NotTo(HaveOccurred())
		octx, cancel := context.WithCancel(ctx)
		defer cancel()
		terms := b.ObserveTerms(octx)

		lead := func(el *election.Election, value string) {
			GinkgoHelper()
			_, err := el.Campaign(ctx, value)
			Expect(err).NotTo(HaveOccurred())
		}
		lead(a, "a") // a first election: waits the max lease
		var t1 election.Term
		Eventually(terms).WithTimeout(5 * time.Second).Should(Receive(&t1))
		Expect(t1).To(MatchFields(Equal("a"), BeEquivalentTo(1), Not(BeEmpty()), Equal(3*time.Second)))
		Expect(a.LeaderTerm(ctx)).To(Equal(t1))
		Expect(a.Resign(ctx)).To(Succeed())
		_, err = a.LeaderTerm(ctx)
		Expect(err).To(MatchError(election.ErrNoLeader))
		lead(b, "b")
		lead2 := make(chan struct{})
		go func() { defer GinkgoRecover(); lead(a, "a"); close(lead2) }() // waits for b's Resign
		Expect(b.Resign(ctx)).To(Succeed())
		Eventually(lead2).WithTimeout(5 * time.Second).Should(BeClosed())
		Expect(a.Resign(ctx)).To(Succeed())
		lead(a, "a") // the same candidate, the same value, a new term

		var got []election.Term
		Eventually(func() int {
			for {
				select {
				case t := <-terms:
					got = append(got, t)
				default:
					return len(got)
				}
			}
		}).WithTimeout(5 * time.Second).Should(Equal(3))
		Expect(got).To(HaveExactElements(
			MatchFields(Equal("b"), BeEquivalentTo(2), Equal(t1.Epoch), Equal(lease)),
			MatchFields(Equal("a"), BeEquivalentTo(3), Equal(t1.Epoch), Equal(3*time.Second)),
			MatchFields(Equal("a"), BeEquivalentTo(4), Equal(t1.Epoch), Equal(3*time.Second))))
		Consistently(terms).WithTimeout(500 * time.Millisecond).ShouldNot(Receive())
		Expect(a.Resign(ctx)).To(Succeed())
	})

	It("reports the term begun after a Redis restart lost the key, in a new epoch, once subscribed again", Label("slow", "fault"), func() {
		name := spectest.UniqueName("el-terms-restart")
		srv := spectest.StartServers(1)[0]
		ca, rdbA := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(lease))
		cb, rdbB := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(lease))
		a, err := election.New(rdbA, ca.NewLock(name), election.WithMaxLease(lease))
		Expect(err).NotTo(HaveOccurred())
		b, err := election.New(rdbB, cb.NewLock(name), election.WithMaxLease(lease))
		Expect(err).NotTo(HaveOccurred())
		_, err = a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		octx, cancel := context.WithCancel(ctx)
		defer cancel()
		terms := b.ObserveTerms(octx)
		var t1, t2 election.Term
		Eventually(terms).WithTimeout(5 * time.Second).Should(Receive(&t1))
		Expect(t1.Value).To(Equal("a"))
		won := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			_, err := b.Campaign(ctx, "b")
			Expect(err).NotTo(HaveOccurred())
			close(won)
		}()
		Expect(srv.Restart()).To(Succeed())
		Eventually(won).WithTimeout(20 * time.Second).Should(BeClosed())
		Eventually(terms).WithTimeout(20 * time.Second).Should(Receive(&t2))
		Expect(t2.Value).To(Equal("b"))
		Expect(t2.Rev).To(BeEquivalentTo(1), "the key was made again")
		Expect(t2.Epoch).NotTo(Equal(t1.Epoch))
		Expect(b.Resign(ctx)).To(Succeed())
	})

	It("on a Redis Cluster keeps the leader key in the lock's slot, so that Leader reads both in one script, and refuses a key in another slot", Label("slow", "cluster"), func() {
		cl, err := redistest.StartCluster(3, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cl.Close)
		newCandidate := func(opts ...election.Option) (*election.Election, error) {
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
			DeferCleanup(rdb.Close)
			c, err := rlock.NewClient(rdb, spectest.Unregistered([]rlock.Option{rlock.WithWatchdogTimeout(lease)})...)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = c.Close() })
			return election.New(rdb, c.NewLock("sched"), append(opts, election.WithMaxLease(lease))...)
		}
		_, err = newCandidate(election.WithKey("sched:leader"))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(err).To(MatchError(ContainSubstring("slot")))
		Expect(cluster.Slot("{sched}:leader")).To(Equal(cluster.Slot("sched")))

		a, err := newCandidate()
		Expect(err).NotTo(HaveOccurred())
		b, err := newCandidate()
		Expect(err).NotTo(HaveOccurred())
		octx, cancel := context.WithCancel(ctx)
		defer cancel()
		terms := b.ObserveTerms(octx)
		_, err = a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Leader(ctx)).To(Equal("a"))
		Eventually(terms).WithTimeout(10 * time.Second).Should(Receive(HaveField("Value", "a")))
		Expect(a.Resign(ctx)).To(Succeed())
		_, err = b.Leader(ctx)
		Expect(err).To(MatchError(election.ErrNoLeader))
	})
})

// MatchFields matches a Term's Value, Rev, Epoch and Lease.
func MatchFields(value, rev, epoch, lease any) OmegaMatcher {
	m := func(v any) OmegaMatcher {
		if om, ok := v.(OmegaMatcher); ok {
			return om
		}
		return Equal(v)
	}
	return And(HaveField("Value", m(value)), HaveField("Rev", m(rev)), HaveField("Epoch", m(epoch)), HaveField("Lease", m(lease)))
}
