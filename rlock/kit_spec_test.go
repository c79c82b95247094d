package rlock_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/internal/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Frictions a new user meets (issue 33, item 4).
var _ = Describe("Client.Close twice", func() {
	It("returns nil the second time, as DeferCleanup(client.Close) after an explicit Close needs", func() {
		e := spectest.NewEnv()
		c := e.Client()
		lock := c.NewLock(spectest.UniqueName("close-twice"))
		Expect(c.Close()).To(Succeed())
		Expect(c.Close()).To(Succeed(), "a second Close is a no-op")
		Expect(lock.Lock(context.Background())).To(MatchError(rlock.ErrClosed), "calls after Close still fail")
	})
})
