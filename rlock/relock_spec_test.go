package rlock_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Found by the model-based checker (internal/verify/checker, docs/checker.md) from
// a random seed (385949792682), shortened to, and failing in 3 of 3
// replays:
//
//	SpinLock wd=6s clients=pi; c1o0 locklease 2s; c0 pause 300ms; sleep 1.682s; c1o0 trylock 15s
//
// and with a 20 s lease, whose gap is 202 ms:
//
//	Lock wd=2s clients=ip; c0o0 trylock 20s; sleep 19.88s; c0o0 trylock wd
//
// A LostContext ends at the hold's local deadline, which comes before Redis
// expires the key (by the drift allowance, 1 % + 2 ms of the lease, plus
// the time the acquisition took to reach Redis). In that gap Redis still
// has the owner's field. A new acquisition by the same owner then re-enters
// the lost hold: Redis counts it on top of the lost holds (2, not 1), the
// Client follows Redis, and the owner's one Unlock leaves the lock held by
// nobody who knows it (renewed by the watchdog until the Client closes, for
// a watchdog lease).
//
// Here a relay delays the first acquisition by 1 s each way (a slow link),
// so that the gap lasts about a second: Redis sets the 4 s lease 1 s after
// the send, so the key lives until send + 5 s, and the Client's deadline is
// send + 4 s less the allowance. The Client is warmed first (a connection
// kept, the scripts loaded), so that the acquisition is one round trip
// (2 s), confirmed well within its lease: one confirmed past it would be
// ErrLockLost, with the hold given back.
var _ = Describe("a new acquisition after the loss was signalled", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	for kind, newLock := range singleKeyKinds {
		Context("on a "+kind, func() {
			It("is a fresh hold (count 1), even while Redis still has the lost one, and its Unlock gives the lock back", Label("slow"), func() {
				proxy := spectest.StartProxy()
				c, _ := spectest.ClientWith(&redis.Options{Addr: proxy.Addr, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
				warm, w := newLock(c, "relock:warm"), ctxowner.New(ctx)
				Expect(warm.TryLock(w, 0, 0)).To(BeTrue())
				Expect(warm.Unlock(w)).To(Succeed())
				a := newLock(c, "relock")
				owner := ctxowner.New(ctx)
				proxy.SetLatency(time.Second)
				Expect(a.LockLease(owner, 4*time.Second)).To(Succeed())
				proxy.SetLatency(0)
				lctx, stop := rlock.LostContext(owner, a)
				DeferCleanup(stop)
				Eventually(lctx.Done()).WithTimeout(8 * time.Second).Should(BeClosed())
				Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
				Expect(e.Raw.Exists(ctx, "relock").Val()).To(BeEquivalentTo(1), "Redis no longer has the lost hold: the gap was not staged")

				ok, err := a.TryLock(owner, 0, 0)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				Expect(a.HoldCount(owner)).To(Equal(1), "a new acquisition after the loss was signalled is a fresh hold")
				Expect(a.Unlock(owner)).To(Succeed())
				Expect(a.IsLocked(ctx)).To(BeFalse(), "the owner's one Unlock after its one acquisition gives the lock back")
			})
		})
	}
})
