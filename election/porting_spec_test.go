package election_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// The porting scenario of issue 33: a RedLock leader elector (Java, on
// Redisson) renews its fixed lease by calling tryLock again every
// lockTime/2. Its renewal stalls past the lease (a stalled scheduler
// thread, a partition) while its leader callback goes on.
var _ = Describe("The elector stalled past its lease (porting scenario)", Label("slow"), func() {
	const lockTime = 2 * time.Second
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// literalElector is the literal port: tryLock(0, lockTime) to become
	// leader, then again every lockTime/2 to "renew"; leader is what its
	// callback believes. stall blocks its renewals while set.
	type literalElector struct {
		lock   *rlock.Lock
		owner  context.Context
		leader atomic.Bool
		stall  atomic.Bool
	}
	runLiteral := func(l *literalElector) {
		done := make(chan struct{})
		DeferCleanup(func() { close(done) })
		go func() {
			defer GinkgoRecover()
			t := time.NewTicker(lockTime / 2)
			defer t.Stop()
			for {
				if !l.stall.Load() {
					ok, err := l.lock.TryLock(l.owner, 0, lockTime)
					if err != nil {
						return // the Client closed at the spec's end
					}
					if ok {
						l.leader.Store(true)
					} else if l.leader.Load() {
						l.leader.Store(false)
					}
				}
				select {
				case <-t.C:
				case <-done:
					return
				}
			}
		}()
	}

	It("literal port (tryLock again to renew), documenting its misbehaviour: the hold count grows, and two leaders run at once after the stall", Label("literal-port"), func() {
		name := spectest.UniqueName("elector-literal")
		a := &literalElector{lock: e.Client().NewLock(name), owner: ctxowner.New(ctx)}
		b := &literalElector{lock: e.Client().NewLock(name), owner: ctxowner.New(ctx)}
		runLiteral(a)
		Eventually(a.leader.Load).Should(BeTrue())
		runLiteral(b)
		Eventually(func() int { n, _ := a.lock.HoldCount(a.owner); return n }).WithTimeout(4*lockTime).
			Should(BeNumerically(">=", 3), "each renewal adds a hold (Redisson's tryLock is reentrant)")
		a.stall.Store(true) // a's renewals stall; its callback goes on
		Eventually(b.leader.Load).WithTimeout(4 * lockTime).Should(BeTrue())
		Expect(a.leader.Load()).To(BeTrue(), "two leaders at once: a does not know it lost")
	})

	It("with election: the stalled leader's context ends before another candidate leads", func() {
		name := spectest.UniqueName("elector")
		proxy := spectest.StartProxy()
		ca, rdbA := spectest.ClientAndRedis(proxy.Addr, rlock.WithWatchdogTimeout(lockTime))
		a, err := election.New(rdbA, ca.NewLock(name), election.WithMaxLease(lockTime))
		Expect(err).NotTo(HaveOccurred())
		b, err := election.New(e.Raw, e.Client(rlock.WithWatchdogTimeout(lockTime)).NewLock(name), election.WithMaxLease(lockTime))
		Expect(err).NotTo(HaveOccurred())

		leadA, err := a.Campaign(ctx, "a")
		Expect(err).NotTo(HaveOccurred())
		lostA := make(chan time.Time, 1)
		go func() { <-leadA.Done(); lostA <- time.Now() }()
		wonB := make(chan time.Time, 1)
		go func() {
			defer GinkgoRecover()
			_, err := b.Campaign(ctx, "b")
			Expect(err).NotTo(HaveOccurred())
			wonB <- time.Now()
		}()
		Consistently(wonB).WithTimeout(lockTime).ShouldNot(Receive(), "a's watchdog keeps its lease")
		proxy.Partition(true) // a's renewals stall
		DeferCleanup(func() { proxy.Partition(false) })
		var lostAt, wonAt time.Time
		Eventually(lostA).WithTimeout(3 * lockTime).Should(Receive(&lostAt))
		Expect(context.Cause(leadA)).To(MatchError(rlock.ErrLockLost))
		Eventually(wonB).WithTimeout(4 * lockTime).Should(Receive(&wonAt))
		Expect(lostAt).To(BeTemporally("<", wonAt), "one leader at a time")
		Expect(b.Resign(ctx)).To(Succeed())
	})
})
