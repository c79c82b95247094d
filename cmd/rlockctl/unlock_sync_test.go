package main_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/rlock"
)

// unlock --force on a synchronizer names it as one, with its permits or
// count, and leaves it alone (it said "was not locked" of a semaphore whose
// key did not exist).
var _ = Describe("rlockctl unlock --force on a synchronizer", func() {
	ctx := context.Background()

	// refused runs unlock --force on name and returns its stderr.
	refused := func(name string) string {
		GinkgoHelper()
		s := rlockctl("unlock", "--force", name)
		exits(s, 1)
		return string(s.Err.Contents())
	}

	It("names each kind with its permits or count, and leaves it alone", func() {
		p := lockName()
		c := newClient(rlock.WithClientRegistry(false))
		Expect(c.NewSemaphore(p+":orders").TrySetPermitsTTL(ctx, 3, time.Minute)).To(BeTrue())
		Expect(refused(p + ":orders")).To(ContainSubstring(p + ":orders is a semaphore (3 permits available; "))
		Expect(refused(p + ":orders")).To(ContainSubstring("force unlock applies to locks; left alone"))
		Expect(c.NewSemaphore(p + ":orders").AvailablePermits(ctx)).To(Equal(3))

		seats := c.NewPermitExpirableSemaphore(p + ":seats")
		Expect(seats.TrySetPermits(ctx, 2)).To(BeTrue())
		_, err := seats.Acquire(ctx, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(refused(p + ":seats")).To(ContainSubstring(p + ":seats is a permit-expirable semaphore (1 permit available, 1 taken; "))

		Expect(c.NewCountDownLatch(p+":latch").TrySetCount(ctx, 2)).To(BeTrue())
		Expect(refused(p + ":latch")).To(ContainSubstring(p + ":latch is a semaphore or a count-down latch (value 2; Redis's data does not tell which)"))
	})

	It("names a semaphore without a key that has waiters, instead of saying it was not locked", func() {
		p := lockName()
		c := newClient(rlock.WithClientRegistry(false))
		wctx, cancel := context.WithCancel(ctx)
		waited := make(chan error, 1)
		go func() { waited <- c.NewSemaphore(p+":never-set").Acquire(wctx, 1) }()
		DeferCleanup(func() { // the waiter ends before the Client closes
			cancel()
			Eventually(waited).Should(Receive())
		})
		Eventually(func() string { return refused(p + ":never-set") }).WithTimeout(10 * time.Second).
			Should(ContainSubstring(p + ":never-set has no key in Redis and 1 connection(s) wait on it as a semaphore (its permits never set"))
		Expect(refused(p + ":nothing")).To(ContainSubstring(p + ":nothing was not locked"))
	})
})
