package rlocktest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/suite"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

func TestRlocktest(t *testing.T) {
	suite.Run(t, "rlocktest")
}

var _ = Describe("rlocktest", func() {
	var (
		srv    *rlocktest.Server
		client *rlock.Client
		ctx    = context.Background()
	)
	BeforeEach(func() {
		srv = rlocktest.StartForSpec()
		rdb := srv.Client()
		DeferCleanup(rdb.Close)
		var err error
		client, err = rlock.NewClient(rdb)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(client.Close)
	})

	It("starts a private redis-server and stops it by pid at cleanup", func() {
		Expect(srv.Pid()).To(BeNumerically(">", 0))
		rdb := srv.Client()
		defer rdb.Close()
		Expect(rdb.Ping(ctx).Err()).To(Succeed())
		Expect(srv.Close()).To(Succeed())
		Expect(srv.Pid()).To(BeZero())
		Expect(rdb.Ping(ctx).Err()).To(HaveOccurred())
	})

	It("matches a held, reentered lock and shows its fields and TTL when a matcher fails", func() {
		lock := client.NewLock("orders:42")
		Expect(lock).NotTo(rlocktest.BeLocked())
		Expect(lock).To(rlocktest.HaveHoldCount(0))

		owner := ctxowner.WithID(ctx, "worker-1")
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock).To(rlocktest.BeLocked())
		Expect(lock).To(rlocktest.BeHeldBy(owner))
		Expect(lock).NotTo(rlocktest.BeHeldBy(ctxowner.WithID(ctx, "worker-2")))
		Expect(lock).To(rlocktest.HaveHoldCount(2))
		Expect(lock).To(rlocktest.HaveTTLWithin(30 * time.Second))
		Expect(lock).NotTo(rlocktest.HaveTTLWithin(time.Second))

		m := rlocktest.HaveHoldCount(3)
		Expect(m.Match(lock)).To(BeFalse())
		msg := m.FailureMessage(lock)
		Expect(msg).To(ContainSubstring(`Expected lock "orders:42" to have hold count 3, but the hold count is 2`))
		Expect(msg).To(ContainSubstring(`"` + client.ID() + `:ctx:worker-1": 2`))
		Expect(msg).To(MatchRegexp(`TTL (29(\.\d+)?|30)s`), "a TTL read at once rounds to 30s exactly")

		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(Succeed())
		m = rlocktest.HaveTTLWithin(time.Minute)
		Expect(m.Match(lock)).To(BeFalse())
		Expect(m.FailureMessage(lock)).To(ContainSubstring("it is not held"))
		Expect(m.FailureMessage(lock)).To(ContainSubstring("state in Redis: none, hash fields {}, no key"))
	})

	It("counts the holds of every reader of a read-write lock", func() {
		rw := client.NewReadWriteLock("catalog")
		for _, id := range []string{"r1", "r2", "r3"} {
			Expect(rw.ReadLock().Lock(ctxowner.WithID(ctx, id))).To(Succeed())
		}
		Expect(rw.ReadLock()).To(rlocktest.HaveHoldCount(3))
		Expect(rw.WriteLock()).NotTo(rlocktest.BeLocked(), "the write side is locked only in write mode")
		m := rlocktest.BeLocked()
		Expect(m.Match(rw.ReadLock())).To(BeTrue())
		Expect(m.NegatedFailureMessage(rw.ReadLock())).To(ContainSubstring("read-write, mode read"))
	})

	It("shows a fenced lock's last token", func() {
		fenced := client.NewFencedLock("ledger")
		token, err := fenced.LockToken(ctx)
		Expect(err).NotTo(HaveOccurred())
		info, err := rlock.Inspect(ctx, fenced)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Kind).To(Equal(inspect.KindFenced))
		Expect(info.Token).To(Equal(token))
		Expect(info.String()).To(ContainSubstring(fmt.Sprintf("token %d", token)))
	})

	It("rejects what is not a lock with a clear error", func() {
		_, err := rlocktest.BeLocked().Match("orders:42")
		Expect(err).To(MatchError(ContainSubstring("expected an rlock.Locker, got string")))
		multi, err := rlock.NewMultiLock(client.NewLock("a"), client.NewLock("b"))
		Expect(err).NotTo(HaveOccurred())
		_, err = rlocktest.HaveHoldCount(1).Match(multi)
		Expect(err).To(MatchError(ContainSubstring("needs a single-key lock")))
	})
})
