package election_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// A candidate's Lock that Redis confirms past its lease fails with
// rlock.ErrLockLost (the hold given back): the campaign goes on, as after a
// hold lost during the handover, rather than failing.
var _ = Describe("Election when the candidate's lock is confirmed late", Label("slow", "fault"), func() {
	It("campaigns again and leads once Redis answers in time", func() {
		ctx := context.Background()
		srv := spectest.StartServers(1)[0]
		DeferCleanup(func() { _ = srv.Resume() })
		// The election's reads give up soon while Redis is stopped; the
		// Client's calls wait for their reply, which comes late.
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
		DeferCleanup(rdb.Close)
		c, _ := spectest.ClientWith(&redis.Options{Addr: srv.Addr, ReadTimeout: 20 * time.Second, MaxRetries: -1},
			rlock.WithWatchdogTimeout(time.Second))
		name := spectest.UniqueName("el-late")
		el, err := election.New(rdb, c.NewLock(name))
		Expect(err).NotTo(HaveOccurred())
		// A first term and a resignation: scripts loaded, connections kept,
		// and the next leader leads without a wait.
		_, err = el.Campaign(ctx, "warm")
		Expect(err).NotTo(HaveOccurred())
		Expect(el.Resign(ctx)).To(Succeed())

		Expect(srv.Pause()).To(Succeed())
		won := campaignIn(ctx, el, "a", context.Background())
		// The Lock goes out once the leader key's read gave up, and is
		// answered only after the lease (1 s) has passed.
		Consistently(won).WithTimeout(2500 * time.Millisecond).ShouldNot(Receive())
		Expect(srv.Resume()).To(Succeed())
		Eventually(won).WithTimeout(15 * time.Second).Should(Receive())
		Expect(el.Leader(ctx)).To(Equal("a"))
		Expect(el.Resign(ctx)).To(Succeed())
	})
})
