package rlock_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// A kept permit's loss is told as a permit's, naming the permit id: the
// loss signal's cause, the Observer's event and the watchdog's log line
// (they said "lock lost" and "field").
var _ = Describe("the loss of a kept permit, in a permit's words", func() {
	const lease = 2 * time.Second // the watchdog timeout: renewed every third
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// keep takes the only permit of a new semaphore as a kept permit, and
	// returns the semaphore, the permit and its loss signal.
	keep := func(c *rlock.Client, name string) (*rlock.PermitExpirableSemaphore, *rlock.KeptPermit, context.Context) {
		GinkgoHelper()
		sem := c.NewPermitExpirableSemaphore(name)
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		k, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		held, stop := k.LostContext(ctx)
		DeferCleanup(stop)
		return sem, k, held
	}

	It("says the permit was lost, by its id, when it is released behind the holder's back", Label("slow"), func() {
		log, logs := bufferLogger()
		rec := &recorder{}
		c := e.Client(rlock.WithWatchdogTimeout(lease), rlock.WithLogger(log), rlock.WithObserver(rec))
		name := spectest.UniqueName("permit-words")
		sem, k, held := keep(c, name)

		Expect(sem.Release(ctx, k.ID())).To(Succeed(), "released by id elsewhere")
		Eventually(held.Done()).WithTimeout(2 * lease).Should(BeClosed())
		cause := context.Cause(held)
		Expect(cause).To(MatchError(rlock.ErrLockLost))
		Expect(cause.Error()).To(HavePrefix(`goredisson: lost "` + name + `": permit ` + k.ID() + ` lost`))
		Expect(cause.Error()).NotTo(ContainSubstring("lock"))

		Eventually(logs.String).Should(ContainSubstring(`msg="goredisson: permit lost, watchdog stops renewing it" semaphore=` + name + ` permit=` + k.ID()))
		Expect(logs.String()).NotTo(ContainSubstring("lock lost"))
		Eventually(func() rlock.Event { return rec.last("lost") }).Should(HaveField("Kind", "permitsemaphore"))
		Expect(rec.last("lost").Err).To(And(MatchError(rlock.ErrLockLost), MatchError(ContainSubstring("permit "+k.ID()+" lost"))))
	})

	It("says the permit's lease ran out when Redis does not answer past it", Label("slow", "fault"), func() {
		log, logs := bufferLogger()
		p := spectest.StartProxy()
		c, _ := spectest.ClientWith(&redis.Options{Addr: p.Addr, MaxRetries: -1}, rlock.WithWatchdogTimeout(lease), rlock.WithLogger(log))
		name := spectest.UniqueName("permit-ranout")
		_, k, held := keep(c, name)

		p.Partition(true)
		DeferCleanup(p.Partition, false)
		Eventually(held.Done()).WithTimeout(3 * lease).Should(BeClosed())
		Expect(context.Cause(held).Error()).To(HavePrefix(`goredisson: lost "` + name + `": permit ` + k.ID() + ` lost`))
		Expect(logs.String()).To(ContainSubstring(`msg="goredisson: permit lease ran out without a confirmed renewal; the permit is lost" semaphore=` + name + ` permit=` + k.ID()))
	})
})
