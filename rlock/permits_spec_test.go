package rlock_test

import (
	"context"
	"encoding/hex"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// What the permit-conservation check (internal/verify/checker, TestPermits) found,
// each as the exact interleaving.
var _ = Describe("PermitExpirableSemaphore permits under their leases", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// A refused acquire replies the ms until the nearest permit expires,
	// a taken one replied 1: a permit 1 ms from its expiry made a refusal
	// read as a success. The caller was handed a permit id Redis never
	// took (held + available one more than set), as in the held-out run of
	// issue 39 (two permits with short leases, waiters trying again as
	// they ran out). Each trial sets the only permit to expire 1 ms after
	// Redis's clock now and makes one attempt at once: about half of them
	// run within that millisecond.
	It("never hands out a permit Redis did not take, when the nearest permit is 1 ms from its expiry", func() {
		const trials = 200
		name := spectest.UniqueName("one-ms")
		sem := e.Client().NewPermitExpirableSemaphore(name)
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		timeouts := "{" + name + "}:timeout"
		// The permit taken by someone else, expiring 1 ms from Redis's now.
		expireIn1ms := `local t = redis.call('time')
redis.call('set', KEYS[1], 0)
redis.call('del', KEYS[2])
redis.call('zadd', KEYS[2], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + 1, 'other')
return 1`
		refused, taken := 0, 0
		for i := range trials {
			Expect(e.Raw.Eval(ctx, expireIn1ms, []string{name, timeouts}).Err()).To(Succeed())
			id, ok, err := sem.TryAcquire(ctx, 0, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			if !ok {
				refused++
				continue
			}
			taken++
			raw, _ := hex.DecodeString(id)
			Expect(e.Raw.ZScore(ctx, timeouts, string(raw)).Err()).To(Succeed(), "trial %d: permit %s was handed out, but Redis never took it", i, id)
			Expect(e.Raw.Get(ctx, name).Val()).To(Equal("0"), "trial %d: the permit taken is counted", i)
		}
		GinkgoWriter.Printf("%d trials: %d refused (the other permit 1 ms from its expiry), %d taken (it had expired)\n", trials, refused, taken)
	})

	// AcquireKept dated the kept permit's lease from the start of its
	// wait: a permit taken after a wait longer than the watchdog timeout
	// had its local deadline passed when it was handed out, so its
	// LostContext ended at once and the watchdog never renewed it, while
	// Redis kept it a whole lease (and then gave it to someone else).
	It("keeps a permit that AcquireKept took after waiting longer than the watchdog timeout: live and renewed", Label("slow"), func() {
		const lease = 2 * time.Second // the watchdog timeout: renewed every third
		name := spectest.UniqueName("kept-late")
		sem := e.Client(rlock.WithWatchdogTimeout(lease)).NewPermitExpirableSemaphore(name)
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		other, err := sem.Acquire(ctx, lease+lease/2) // runs out 3 s from now
		Expect(err).NotTo(HaveOccurred())

		start := time.Now()
		k, err := sem.AcquireKept(ctx) // waits for the permit to run out
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(start)).To(BeNumerically(">", lease), "the wait outlasted a watchdog lease")
		held, stop := k.LostContext(ctx)
		DeferCleanup(stop)
		Expect(context.Cause(held)).NotTo(HaveOccurred(), "the permit just taken is live")

		// Two leases later it is still held, renewed by the watchdog.
		Consistently(func() error { return context.Cause(held) }).WithTimeout(2 * lease).WithPolling(100 * time.Millisecond).ShouldNot(HaveOccurred())
		Expect(sem.LeaseTime(ctx, k.ID())).To(BeNumerically(">", lease/2))
		Expect(sem.AvailablePermits(ctx)).To(BeZero())
		Expect(k.Release(ctx)).To(Succeed())
		Expect(sem.Release(ctx, other)).To(MatchError(rlock.ErrNotHeld), "its lease ran out")
		Expect(sem.AvailablePermits(ctx)).To(Equal(1))
	})
})
