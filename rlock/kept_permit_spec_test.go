package rlock_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

// The porting scenario of issue 33: a per-tenant workflow limiter on a
// PermitExpirableSemaphore of 5 permits, whose workflows outlive the
// permits' lease.
var _ = Describe("Kept permits (PermitExpirableSemaphore.AcquireKept)", func() {
	const lease = 2 * time.Second // the watchdog timeout of these specs: renewed every third
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// hold5 takes the 5 permits with take, keeps them for 3.5 leases, and
	// meanwhile lets a sixth acquirer try for 3 leases; it returns whether
	// the sixth got one and the errors of the 5 releases.
	hold5 := func(sem *rlock.PermitExpirableSemaphore, take func() (release func() error)) (sixth bool, releases []error) {
		GinkgoHelper()
		Expect(sem.TrySetPermits(ctx, 5)).To(BeTrue())
		var rel []func() error
		for range 5 {
			rel = append(rel, take())
		}
		id, ok, err := sem.TryAcquire(ctx, 3*lease, 10*lease)
		Expect(err).NotTo(HaveOccurred())
		if ok {
			Expect(sem.Release(ctx, id)).To(Succeed())
		}
		time.Sleep(lease / 2) // the workflows go on past 3.5 leases
		for _, r := range rel {
			releases = append(releases, r())
		}
		return ok, releases
	}

	It("literal port (a fixed lease the workflow outlives), documenting its misbehaviour: a sixth workflow starts beside the five, and their releases fail", Label("slow", "literal-port"), func() {
		sem := e.Client(rlock.WithWatchdogTimeout(lease)).NewPermitExpirableSemaphore(spectest.UniqueName("limiter-literal"))
		sixth, releases := hold5(sem, func() func() error {
			id, err := sem.Acquire(ctx, lease)
			Expect(err).NotTo(HaveOccurred())
			return func() error { return sem.Release(ctx, id) }
		})
		Expect(sixth).To(BeTrue(), "a sixth permit was handed out")
		Expect(releases).To(ContainElement(MatchError(rlock.ErrNotHeld)))
	})

	It("keeps five kept permits across several leases: no sixth permit is handed out, and the five releases succeed", Label("slow"), func() {
		sem := e.Client(rlock.WithWatchdogTimeout(lease)).NewPermitExpirableSemaphore(spectest.UniqueName("limiter"))
		sixth, releases := hold5(sem, func() func() error {
			k, err := sem.AcquireKept(ctx)
			Expect(err).NotTo(HaveOccurred())
			held, stop := k.LostContext(ctx)
			DeferCleanup(stop)
			return func() error {
				Expect(held.Err()).NotTo(HaveOccurred(), "the permit was never lost")
				return k.Release(ctx)
			}
		})
		Expect(sixth).To(BeFalse(), "no sixth permit")
		Expect(releases).To(HaveEach(Succeed()))
		Expect(sem).To(rlocktest.HaveAvailablePermits(5))
	})

	// Before 3.19.1 Redisson kept a mapped permit semaphore's timeouts
	// under the unmapped name ({seats}:timeout beside tenant:seats): the
	// renewal must move the score where the acquire put it.
	It("renews a kept permit under a NameMapper and a release that keeps the timeouts under the unmapped name", Label("slow"), func() {
		tenant := rlock.WithNameMapper(
			func(n string) string { return "tenant:" + n },
			func(n string) string { return strings.TrimPrefix(n, "tenant:") })
		name := spectest.UniqueName("mapped-seats")
		sem := e.Client(rlock.WithWatchdogTimeout(lease), tenant, rlock.WithRedissonVersion("3.19.0")).NewPermitExpirableSemaphore(name)
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		k, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		held, stop := k.LostContext(ctx)
		DeferCleanup(stop)
		timeouts := "{" + name + "}:timeout" // the unmapped name, as 3.19.0 wrote it
		Expect(e.Raw.ZCard(ctx, timeouts).Val()).To(BeEquivalentTo(1), "the permit's lease is under the unmapped name")
		Consistently(held.Done()).WithTimeout(3*lease).ShouldNot(BeClosed(), "renewed past its lease")
		_, ok, err := sem.TryAcquire(ctx, 0, lease)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse(), "the one permit is still taken")
		Expect(k.Release(ctx)).To(Succeed())
	})

	It("moves the permit's lease as Redisson's updateLeaseTime does, so Java sees an ordinary permit", Label("slow"), func() {
		sem := e.Client(rlock.WithWatchdogTimeout(lease)).NewPermitExpirableSemaphore(spectest.UniqueName("moving"))
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		k, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		Consistently(func() (time.Duration, error) { return sem.LeaseTime(ctx, k.ID()) }).
			WithTimeout(5 * lease / 2).WithPolling(100 * time.Millisecond).Should(And(BeNumerically(">", 0), BeNumerically("<=", lease)))
		Expect(sem).To(rlocktest.HaveAcquiredPermits(1))
		Expect(k.Release(ctx)).To(Succeed())
		Expect(sem).To(rlocktest.HaveAvailablePermits(1))
	})

	It("ends the loss signal while Redis hangs past the lease, before another acquirer takes the permit", Label("slow", "fault"), func() {
		srv := spectest.StartServers(1)[0]
		ca, _ := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(lease))
		cb, _ := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(lease))
		name := spectest.UniqueName("lost-hang")
		semA, semB := ca.NewPermitExpirableSemaphore(name), cb.NewPermitExpirableSemaphore(name)
		Expect(semA.TrySetPermits(ctx, 1)).To(BeTrue())
		k, err := semA.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		held, stop := k.LostContext(ctx)
		defer stop()
		lostAt := make(chan time.Time, 1)
		go func() { <-held.Done(); lostAt <- time.Now() }()

		Expect(srv.Pause()).To(Succeed())
		// Any renewal that reached Redis was sent before Pause returned:
		// Redis keeps the permit until at least then plus the lease.
		pausedAt := time.Now()
		resumed := false
		DeferCleanup(func() {
			if !resumed {
				_ = srv.Resume()
			}
		})
		var at time.Time
		Eventually(lostAt).WithTimeout(3 * lease).Should(Receive(&at))
		Expect(context.Cause(held)).To(MatchError(rlock.ErrLockLost))
		time.Sleep(lease) // Redis's own expiry of the permit passes while it hangs
		Expect(srv.Resume()).To(Succeed())
		resumed = true
		id, ok, err := semB.TryAcquire(ctx, 5*lease, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(at).To(BeTemporally("<", pausedAt.Add(lease+time.Second)), "the loss signal ended by the lease's end (1 s slack)")
		Expect(semB.Release(ctx, id)).To(Succeed())
		Expect(k.Release(ctx)).To(MatchError(rlock.ErrNotHeld), "a lost permit's release")
	})

	It("ends the loss signal at the next renewal when the permit is flushed or released behind the holder's back, and answers a second release with ErrNotHeld", Label("slow"), func() {
		c := e.Client(rlock.WithWatchdogTimeout(lease))
		sem := c.NewPermitExpirableSemaphore(spectest.UniqueName("lost-flush"))
		Expect(sem.TrySetPermits(ctx, 2)).To(BeTrue())

		flushed, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		held, stop := flushed.LostContext(ctx)
		defer stop()
		Expect(e.Raw.FlushAll(ctx).Err()).To(Succeed())
		Eventually(held.Done()).WithTimeout(2*lease).Should(BeClosed(), "within a renewal interval")
		Expect(context.Cause(held)).To(MatchError(rlock.ErrLockLost))
		Expect(flushed.Release(ctx)).To(MatchError(rlock.ErrNotHeld))

		Expect(sem.TrySetPermits(ctx, 2)).To(BeTrue())
		k, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		kheld, kstop := k.LostContext(ctx)
		defer kstop()
		Expect(sem.Release(ctx, k.ID())).To(Succeed(), "someone releases it by id")
		Eventually(kheld.Done()).WithTimeout(2 * lease).Should(BeClosed())
		Expect(sem.UpdateLeaseTime(ctx, k.ID(), lease)).To(BeFalse(), "a released id is not renewed")

		k2, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(k2.Release(ctx)).To(Succeed())
		Expect(k2.Release(ctx)).To(MatchError(rlock.ErrNotHeld), "a second release")
	})

	It("ends the loss signal at once when its Release finds the permit gone (ErrNotHeld), not at the lease", func() {
		c := e.Client(rlock.WithWatchdogTimeout(lease))
		sem := c.NewPermitExpirableSemaphore(spectest.UniqueName("kept-gone"))
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		k, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		held, stop := k.LostContext(ctx)
		defer stop()
		Expect(sem.Release(ctx, k.ID())).To(Succeed(), "someone releases it by id, before any renewal notices")
		Expect(k.Release(ctx)).To(MatchError(rlock.ErrNotHeld))
		Expect(held.Err()).To(HaveOccurred(), "the permit is known gone: its LostContext ends with the Release, not at the lease")
		Expect(context.Cause(held)).To(MatchError(rlock.ErrLockLost))
		Expect(k.Release(ctx)).To(MatchError(rlock.ErrNotHeld), "a second release")
	})

	It("lets a Release that failed before reaching Redis be retried", func() {
		sem := e.Client(rlock.WithWatchdogTimeout(lease)).NewPermitExpirableSemaphore(spectest.UniqueName("kept-retry"))
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		k, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		var noCtx context.Context
		err = k.Release(noCtx)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(err).NotTo(MatchError(rlock.ErrNotHeld))
		Expect(k.Release(ctx)).To(Succeed(), "the permit is still held: a second Release gives it back")
		Expect(sem).To(rlocktest.HaveAvailablePermits(1))
		Expect(k.Release(ctx)).To(MatchError(rlock.ErrNotHeld), "a third one finds it released")
	})

	It("ends the loss signal at the lease when a Release's outcome is unknown", Label("slow", "fault"), func() {
		srv := spectest.StartServers(1)[0]
		c, _ := spectest.ClientAndRedis(srv.Addr, rlock.WithWatchdogTimeout(lease))
		sem := c.NewPermitExpirableSemaphore(spectest.UniqueName("kept-unknown"))
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		k, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		held, stop := k.LostContext(ctx)
		defer stop()

		Expect(srv.Pause()).To(Succeed())
		resumed := false
		DeferCleanup(func() {
			if !resumed {
				_ = srv.Resume()
			}
		})
		released := make(chan error, 1)
		go func() { released <- k.Release(ctx) }()
		var rerr error
		Eventually(released).WithTimeout(15 * time.Second).Should(Receive(&rerr))
		Expect(rerr).To(MatchError(rlock.ErrUnknownOutcome))
		Eventually(held.Done()).WithTimeout(2*lease).Should(BeClosed(), "the permit's lease is over: it may be gone")
		Expect(srv.Resume()).To(Succeed())
		resumed = true
		Expect(k.Release(ctx)).To(MatchError(rlock.ErrNotHeld), "a release whose outcome is unknown is not sent twice")
	})
})
