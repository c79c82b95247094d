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

// A record is trusted only by the Redis process that wrote it: Redis that
// comes back with an older copy of the leader key (a restart that loads an
// older RDB snapshot or an AOF that missed the last second, a failover to
// a replica that is behind) may hold a Resign, or an older leader's shorter
// lease, while the real leader's context is live.
var _ = Describe("Election across Redis rolling back the leader key", Label("slow", "fault"), func() {
	const l = 6 * time.Second // both candidates' watchdog timeout and the max lease: renewed every 2 s
	ctx := context.Background()

	It("never has two leaders when Redis restarts from a snapshot taken while the key said the leader had resigned", func() {
		name := spectest.UniqueName("el-rollback")
		srv := spectest.StartServers(1)[0] // persistence off, but SAVE writes the snapshot a start loads
		ca, rdbA := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(l))
		cb, rdbB := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(l))
		a, err := election.New(rdbA, ca.NewLock(name), election.WithMaxLease(l))
		Expect(err).NotTo(HaveOccurred())
		b, err := election.New(rdbB, cb.NewLock(name), election.WithMaxLease(l))
		Expect(err).NotTo(HaveOccurred())
		leadsAtOnce(rdbA, name)

		_, err = a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Resign(ctx)).To(Succeed())
		Expect(rdbA.Get(ctx, name+":leader").Val()).To(HavePrefix("R "))
		Expect(rdbA.Save(ctx).Err()).To(Succeed()) // the snapshot: the key says R, the lock is free
		began := time.Now()
		leadA, err := a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(began)).To(BeNumerically("<", l), "after a Resign on the same server, no wait")
		Expect(rdbA.Get(ctx, name+":leader").Val()).To(HavePrefix("L "))
		lostA := make(chan time.Time, 1)
		go func() { <-leadA.Done(); lostA <- time.Now() }()

		Expect(srv.Kill()).To(Succeed()) // a crash: the start loads the snapshot
		Expect(srv.Start()).To(Succeed())
		Eventually(func() string { return rdbB.Get(ctx, name+":leader").Val() }).WithTimeout(5*time.Second).
			Should(HavePrefix("R "), "Redis came back with the older copy of the key")
		Expect(rdbB.Exists(ctx, name).Val()).To(BeZero(), "and without a's lock")

		var w won
		Eventually(campaignIn(ctx, b, "b", leadA)).WithTimeout(4 * l).Should(Receive(&w))
		Expect(w.prevErr).To(HaveOccurred(), "a's leadership context had ended when b's Campaign returned")
		Expect(context.Cause(leadA)).To(MatchError(rlock.ErrLockLost))
		var lostAt time.Time
		Expect(lostA).To(Receive(&lostAt))
		Expect(lostAt).To(BeTemporally("<", w.at))
		Expect(w.at.Sub(began)).To(BeNumerically(">=", l), "b waited out the max lease: the record was not this Redis process's")
		Expect(b.Leader(ctx)).To(Equal("b"))
		Expect(b.Resign(ctx)).To(Succeed())
	})

	It("on a Redis Cluster does not trust a record written before a failover of the key's master: the successor waits the max lease", Label("cluster"), func() {
		cl, err := redistest.StartCluster(3, 1)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cl.Close)
		const short = 2 * time.Second
		candidate := func() *election.Election {
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
			DeferCleanup(rdb.Close)
			c, err := rlock.NewClient(rdb, spectest.Unregistered([]rlock.Option{rlock.WithWatchdogTimeout(short)})...)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = c.Close() })
			el, err := election.New(rdb, c.NewLock("sched"), election.WithMaxLease(short))
			Expect(err).NotTo(HaveOccurred())
			return el
		}
		a, b := candidate(), candidate()
		_, err = a.Campaign(ctx, "a") // a first election: waits the max lease
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Resign(ctx)).To(Succeed())
		began := time.Now()
		_, err = a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(began)).To(BeNumerically("<", short), "after a Resign on the same master, no wait")
		Expect(a.Resign(ctx)).To(Succeed())

		owner, err := cl.Owner(ctx, cluster.Slot("{sched}:leader"))
		Expect(err).NotTo(HaveOccurred())
		replica, err := cl.ReplicaOf(ctx, owner.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(cl.WaitReplicasSynced(10 * time.Second)).To(Succeed())
		Expect(cl.Failover(ctx, replica.Addr)).To(Succeed()) // coordinated: the replica has the R record
		began = time.Now()
		_, err = b.Campaign(ctx, "b")
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(began)).To(BeNumerically(">=", short), "the record is not the new master's: b waited the max lease")
		Expect(b.Leader(ctx)).To(Equal("b"))
		Expect(b.Resign(ctx)).To(Succeed())
	})
})
