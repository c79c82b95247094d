package engine

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
	kinds := map[string]Kind{"Lock": KindLock, "FencedLock": KindFenced, "FairLock": KindFair, "ReadLock": KindRead, "WriteLock": KindWrite}
	for name, k := range kinds {
		It("does not count the stale holds in a new acquisition ("+name+")", func() {
			c := internalCore()
			l := NewHandle(c, "stale-"+name, k)
			ctx := ctxowner.New(context.Background())
			Expect(lock(&l, ctx)).To(Succeed())
			Expect(lock(&l, ctx)).To(Succeed())
			// The local deadline passed: the watchdog loses the hold.
			c.holds.entry(holdKey{l.name, l.Field(ctx)}).Lose()
			Expect(lock(&l, ctx)).To(Succeed(), "a new acquisition after the loss was signalled")
			n, err := l.HoldCount(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(1), "a fresh hold, without the two stale ones")
			Expect(unlock(&l, ctx)).To(Succeed())
			Eventually(func() (bool, error) { return l.IsLocked(context.Background()) }).WithTimeout(time.Second).Should(BeFalse(), "one Unlock frees the fresh hold")
		})
	}
})
