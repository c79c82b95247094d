package rlock

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
)

// A hold the Client took for lost (its local deadline passed: the deadline
// comes a little before Redis's expiry, on purpose) may still be in Redis for
// that little while. A new acquisition by the same owner must start a fresh
// hold, not count the stale ones: else its Unlock leaves the lock held.
var _ = Describe("a hold the Client took for lost while Redis still had it", func() {
	kinds := map[string]kind{"Lock": kindLock, "FencedLock": kindFenced, "FairLock": kindFair, "ReadLock": kindRead, "WriteLock": kindWrite}
	for name, k := range kinds {
		It("does not count the stale holds in a new acquisition ("+name+")", func() {
			c := internalClient()
			l := newLock(c, "stale-"+name, k)
			ctx := ctxowner.New(context.Background())
			Expect(l.Lock(ctx)).To(Succeed())
			Expect(l.Lock(ctx)).To(Succeed())
			// The local deadline passed: the watchdog loses the hold.
			c.holds.entry(holdKey{l.h.name, l.h.field(ctx)}).Lose()
			Expect(l.Lock(ctx)).To(Succeed(), "a new acquisition after the loss was signalled")
			n, err := l.HoldCount(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(1), "a fresh hold, without the two stale ones")
			Expect(l.Unlock(ctx)).To(Succeed())
			Eventually(func() (bool, error) { return l.IsLocked(context.Background()) }).WithTimeout(time.Second).Should(BeFalse(), "one Unlock frees the fresh hold")
		})
	}
})
