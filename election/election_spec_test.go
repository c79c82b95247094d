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
)

// lease is the watchdog timeout of the specs' clients (renewed every
// third: a loaded machine's delays stay well within the rest): a first
// election waits one lease.
const lease = 2 * time.Second

var _ = Describe("Election", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})
	client := func() *rlock.Client { return e.Client(rlock.WithWatchdogTimeout(lease)) }

	Describe("bad input", func() {
		It("refuses an empty value, a closed Client, a second Campaign and a Resign by a non-leader", Label("slow"), func() {
			c := client()
			el, err := election.New(e.Raw, c.NewLock(spectest.UniqueName("el-bad")), election.WithMaxLease(lease))
			Expect(err).NotTo(HaveOccurred())
			_, err = el.Campaign(ctx, "")
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))
			Expect(el.Resign(ctx)).To(MatchError(election.ErrNotLeader))
			_, err = el.Leader(ctx)
			Expect(err).To(MatchError(election.ErrNoLeader))

			_, err = election.New(e.Raw, nil)
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))

			lead, err := el.Campaign(ctx, "a")
			Expect(err).NotTo(HaveOccurred())
			_, err = el.Campaign(ctx, "a")
			Expect(err).To(MatchError(rlock.ErrInvalidArgument), "one Campaign at a time")
			Expect(el.Resign(ctx)).To(Succeed())
			Expect(lead.Done()).To(BeClosed())
			Expect(el.Resign(ctx)).To(MatchError(election.ErrNotLeader), "resigned already")

			closed := client()
			ce, err := election.New(e.Raw, closed.NewLock(spectest.UniqueName("el-closed")))
			Expect(err).NotTo(HaveOccurred())
			Expect(closed.Close()).To(Succeed())
			_, err = ce.Campaign(ctx, "b")
			Expect(err).To(MatchError(rlock.ErrClosed))
			Expect(e.Raw.Exists(ctx, spectest.UniqueName("el-closed")+":leader").Val()).To(BeZero(), "nothing written")
		})
	})

	// kinds make, for a lock name, a function returning candidates' locks
	// on the same Redis deployments.
	kinds := map[string]func(name string) func() rlock.Locker{
		"Lock": func(name string) func() rlock.Locker {
			return func() rlock.Locker { return client().NewLock(name) }
		},
		"MultiLock": func(name string) func() rlock.Locker {
			return func() rlock.Locker {
				c := client()
				m, err := rlock.NewMultiLock(c.NewLock(name+":a"), c.NewLock(name+":b"))
				Expect(err).NotTo(HaveOccurred())
				return m
			}
		},
		"RedLock": func(name string) func() rlock.Locker {
			addrs := []string{spectest.Server().Addr}
			for _, s := range spectest.StartServers(2) {
				addrs = append(addrs, s.Addr)
			}
			return func() rlock.Locker {
				var locks []rlock.Locker
				for _, a := range addrs {
					locks = append(locks, spectest.ClientOn(a, rlock.WithWatchdogTimeout(lease)).NewLock(name))
				}
				r, err := rlock.NewRedLock(locks...)
				Expect(err).NotTo(HaveOccurred())
				return r
			}
		},
	}
	for kind, lockOn := range kinds {
		It("elects one leader at a time over a "+kind+", hands over at once on Resign, and is observed", Label("slow"), func() {
			name := spectest.UniqueName("el-" + strings.ToLower(kind))
			newLock := lockOn(name)
			a, err := election.New(e.Raw, newLock(), election.WithMaxLease(lease))
			Expect(err).NotTo(HaveOccurred())
			b, err := election.New(e.Raw, newLock(), election.WithMaxLease(lease))
			Expect(err).NotTo(HaveOccurred())
			octx, cancel := context.WithCancel(ctx)
			defer cancel()
			seen := a.Observe(octx)

			leadA, err := a.Campaign(ctx, "pod-a")
			Expect(err).NotTo(HaveOccurred())
			Expect(a.Leader(ctx)).To(Equal("pod-a"))
			Eventually(seen).WithTimeout(5 * time.Second).Should(Receive(Equal("pod-a")))

			wonB := make(chan context.Context, 1)
			go func() {
				defer GinkgoRecover()
				l, err := b.Campaign(ctx, "pod-b")
				Expect(err).NotTo(HaveOccurred())
				wonB <- l
			}()
			Consistently(wonB).WithTimeout(lease).ShouldNot(Receive(), "b waits while a leads")
			Expect(leadA.Err()).NotTo(HaveOccurred())

			resigned := time.Now()
			Expect(a.Resign(ctx)).To(Succeed())
			Expect(leadA.Done()).To(BeClosed())
			var leadB context.Context
			Eventually(wonB).WithTimeout(5 * time.Second).Should(Receive(&leadB))
			Expect(time.Since(resigned)).To(BeNumerically("<", lease), "after a Resign, no lease to wait out")
			Expect(b.Leader(ctx)).To(Equal("pod-b"))
			Eventually(seen).WithTimeout(5 * time.Second).Should(Receive(Equal("pod-b")))
			Expect(leadB.Err()).NotTo(HaveOccurred())
			Expect(b.Resign(ctx)).To(Succeed())
			_, err = a.Leader(ctx)
			Expect(err).To(MatchError(election.ErrNoLeader))
		})
	}

	It("elects another leader when the leader's process is stopped past its lease, and the stopped leader's context has ended before the new leader leads", Label("slow", "fault"), func() {
		name := spectest.UniqueName("el-paused")
		h := spectest.StartHelper("leader", "HELPER_LOCK="+name, "HELPER_VALUE=paused", "HELPER_WATCHDOG_MS=2000")
		helperAt(h, "leader")
		c := e.Client(rlock.WithWatchdogTimeout(2 * time.Second))
		b, err := election.New(e.Raw, c.NewLock(name), election.WithMaxLease(lease))
		Expect(err).NotTo(HaveOccurred())
		h.Signal(syscall.SIGSTOP)
		stopped := true
		DeferCleanup(func() {
			if stopped {
				h.Signal(syscall.SIGCONT)
			}
		})
		won := make(chan time.Time, 1)
		go func() {
			defer GinkgoRecover()
			_, err := b.Campaign(ctx, "successor")
			Expect(err).NotTo(HaveOccurred())
			won <- time.Now()
		}()
		// b takes the lock once the stopped leader's lease ran out, then
		// waits out a lease: the stopped leader resumes meanwhile.
		Eventually(func() []string { return e.Raw.HKeys(ctx, name).Val() }).WithTimeout(10 * time.Second).
			Should(ContainElement(HavePrefix(c.ID())))
		h.Signal(syscall.SIGCONT)
		stopped = false
		lost := helperAt(h, "lost")
		var at time.Time
		Eventually(won).WithTimeout(10 * time.Second).Should(Receive(&at))
		Expect(lost).To(BeTemporally("<", at), "the old leader's context ended before the new leader led")
		Expect(b.Leader(ctx)).To(Equal("successor"))
		Expect(b.Resign(ctx)).To(Succeed())
	})

	It("keeps at most one leader's context live across a Redis restart that loses the lock", Label("slow", "fault"), func() {
		name := spectest.UniqueName("el-restart")
		srv := spectest.StartServers(1)[0]
		ca, rdbA := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(2*time.Second))
		cb, rdbB := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(2*time.Second))
		a, err := election.New(rdbA, ca.NewLock(name), election.WithMaxLease(lease))
		Expect(err).NotTo(HaveOccurred())
		b, err := election.New(rdbB, cb.NewLock(name), election.WithMaxLease(lease))
		Expect(err).NotTo(HaveOccurred())
		leadA, err := a.Campaign(ctx, "before")
		Expect(err).NotTo(HaveOccurred())
		lostA := make(chan time.Time, 1)
		go func() { <-leadA.Done(); lostA <- time.Now() }()
		won := make(chan time.Time, 1)
		go func() {
			defer GinkgoRecover()
			_, err := b.Campaign(ctx, "after")
			Expect(err).NotTo(HaveOccurred())
			won <- time.Now()
		}()
		Consistently(won).WithTimeout(500 * time.Millisecond).ShouldNot(Receive())
		Expect(srv.Restart()).To(Succeed()) // the lock and the leader key are gone
		var lostAt, wonAt time.Time
		Eventually(lostA).WithTimeout(10 * time.Second).Should(Receive(&lostAt))
		Expect(context.Cause(leadA)).To(MatchError(rlock.ErrLockLost))
		Eventually(won).WithTimeout(10 * time.Second).Should(Receive(&wonAt))
		Expect(lostAt).To(BeTemporally("<", wonAt), "a's context ended before b led")
		Expect(a.Resign(ctx)).To(MatchError(election.ErrNotLeader))
		Expect(b.Leader(ctx)).To(Equal("after"))
		Expect(b.Resign(ctx)).To(Succeed())
	})
})
