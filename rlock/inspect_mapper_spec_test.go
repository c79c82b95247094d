package rlock_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Before 3.52 Redisson kept a mapped fair lock's queue and timeouts under
// the unmapped name: Inspect reads them where the release keeps them.
var _ = Describe("Inspect of a fair lock under a NameMapper and Redisson before 3.52", func() {
	It("shows the queued waiter, read under the unmapped name", func() {
		e := spectest.NewEnv()
		ctx := context.Background()
		tenant := rlock.WithNameMapper(
			func(n string) string { return "tenant:" + n },
			func(n string) string { return strings.TrimPrefix(n, "tenant:") })
		name := spectest.UniqueName("inspect-fair")
		c := e.Client(tenant, rlock.WithRedissonVersion("3.50.0"))
		fair := c.NewFairLock(name)
		holder := ctxowner.New(ctx)
		Expect(fair.Lock(holder)).To(Succeed())
		DeferCleanup(func() { _, _ = fair.ForceUnlock(context.Background()) })

		waiter := ctxowner.New(ctx)
		wctx, cancel := context.WithCancel(waiter)
		done := make(chan error, 1)
		go func() { done <- fair.Lock(wctx) }()
		DeferCleanup(func() { cancel(); <-done })
		Eventually(func() int64 { return e.Raw.LLen(ctx, "redisson_lock_queue:{"+name+"}").Val() }).
			WithTimeout(5*time.Second).Should(BeEquivalentTo(1), "3.50.0 queues under the unmapped name")

		field, err := rlock.HolderField(waiter, fair)
		Expect(err).NotTo(HaveOccurred())
		info, err := rlock.Inspect(ctx, fair)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Name).To(Equal("tenant:" + name))
		Expect(info.Kind).To(Equal(inspect.KindFair))
		Expect(info.Queue).To(Equal([]string{field}))
	})
})
