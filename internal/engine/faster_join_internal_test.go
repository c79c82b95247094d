package engine

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/layout"
)

// shardIndex returns the index of the ledger shard that keeps k.
func shardIndex(l *ledger, k holdKey) int {
	s := l.shard(k)
	for i := range l.shards {
		if &l.shards[i] == s {
			return i
		}
	}
	panic("no shard")
}

// inHoldsOn reports whether a goroutine is in ledger.holdsOn (a faster
// multilock waiter finding its class).
func inHoldsOn() bool {
	for _, g := range gleak.Goroutines() {
		if strings.Contains(g.Backtrace, ").holdsOn(") {
			return true
		}
	}
	return false
}

// lockThenUnlock starts owner's lock of h on a goroutine of its own, which
// closes got once it holds the lock, and unlocks it.
func lockThenUnlock(h *Handle, owner context.Context) (got chan struct{}) {
	got = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		Expect(lock(h, owner)).To(Succeed())
		close(got)
		Expect(unlock(h, owner)).To(Succeed())
	}()
	return got
}

var _ = Describe("a FasterMultiLock waiter that joins its channel as an unlock message is delivered", func() {
	// The interleaving behind the flake of rlock's spec "queues behind the
	// waiter on the same values its unlock woke", forced: the owner h that
	// locks again joins the channel (SubscribeIfReady) and finds its class
	// (waitClass, which reads the ledger) while the unlock message that
	// woke w is delivered. Joined without its class, h's Sub was a class of
	// its own: the message marked it woken, h made at once the attempt it
	// should have queued for, and raced w (that spec failed in 10 of 20
	// runs). Holding the ledger's shards stops h inside waitClass and w
	// inside its attempt; the message comes from another Client, whose
	// unlock the spec can time.
	It("is in its class from the start: it queues behind the waiter the message woke", func() {
		ctx := context.Background()
		c, c2 := internalCore(), internalCore()
		c.queuePause = 5 * time.Second // h waits for w's unlock, not for this bound
		group := "join:faster"
		ch := layout.Channel(group)
		values := []string{"Jack_001", "Mary_002"}
		l, l2 := NewFasterHandle(c, group, values), NewFasterHandle(c2, group, values)
		g := ctxowner.New(ctx)
		Expect(lock(&l2, g)).To(Succeed())

		// h and w keep their holds in one shard, below the last: h, stopped
		// in holdsOn's scan at the shard after it, has already passed it,
		// and its attempt, like w's, needs it.
		var h, w context.Context
		var idx int
		for h = ctxowner.New(ctx); ; h = ctxowner.New(ctx) {
			if idx = shardIndex(c.holds, l.holdKey(l.Field(h))); idx < len(c.holds.shards)-1 {
				break
			}
		}
		for w = ctxowner.New(ctx); shardIndex(c.holds, l.holdKey(l.Field(w))) != idx; w = ctxowner.New(ctx) {
		}
		held := map[int]bool{}
		hold := func(i int) { c.holds.shards[i].mu.Lock(); held[i] = true }
		free := func(i int) { c.holds.shards[i].mu.Unlock(); delete(held, i) }
		DeferCleanup(func() { // on failure: the Client's Close needs the ledger
			for i := range held {
				free(i)
			}
		})

		// Bounds of seconds: each step is a goroutine's turn or a round
		// trip, which a loaded machine can delay by hundreds of ms.
		waiters := func() int { return c.hub.Waiters(ch) }
		reach := func(n int, why string) {
			GinkgoHelper()
			Eventually(waiters).WithTimeout(5*time.Second).WithPolling(200*time.Microsecond).Should(Equal(n), why)
		}
		got := lockThenUnlock(&l, w)
		reach(1, "w waits")
		for i := idx + 1; i < len(c.holds.shards); i++ {
			hold(i)
		}
		hDone := make(chan error, 1)
		go func() { hDone <- lock(&l, h) }()
		Eventually(inHoldsOn).WithTimeout(5*time.Second).Should(BeTrue(), "h finds its class")
		hold(idx)
		Expect(unlock(&l2, g)).To(Succeed()) // the message: it wakes w
		reach(0, "the message woke w")
		for i := idx + 1; i < len(c.holds.shards); i++ {
			free(i)
		}
		// w is woken and stopped in its attempt: h must wait behind it, not
		// make an attempt of its own (which would stop at shard idx too).
		reach(1, "h waits behind w (0: h tries at once, woken by the message as a class of its own)")
		Consistently(waiters).WithTimeout(100*time.Millisecond).Should(Equal(1), "h waits")
		free(idx)
		Eventually(hDone).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
		Expect(got).To(BeClosed(), "w got the values first")
		Expect(unlock(&l, h)).To(Succeed())
	})
})
