package rlock_test

import (
	"context"
	"runtime"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("Do, whatever fn does", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	kinds := map[string]func(c *rlock.Client, name string) rlock.Locker{
		"Lock":       func(c *rlock.Client, n string) rlock.Locker { return c.NewLock(n) },
		"FencedLock": func(c *rlock.Client, n string) rlock.Locker { return c.NewFencedLock(n) },
		"FairLock":   func(c *rlock.Client, n string) rlock.Locker { return c.NewFairLock(n) },
		"SpinLock":   func(c *rlock.Client, n string) rlock.Locker { return c.NewSpinLock(n) },
		"ReadLock":   func(c *rlock.Client, n string) rlock.Locker { return c.NewReadWriteLock(n).ReadLock() },
		"WriteLock":  func(c *rlock.Client, n string) rlock.Locker { return c.NewReadWriteLock(n).WriteLock() },
		"MultiLock": func(c *rlock.Client, n string) rlock.Locker {
			m, err := rlock.NewMultiLock(c.NewLock(n+":a"), c.NewLock(n+":b"))
			Expect(err).NotTo(HaveOccurred())
			return m
		},
	}
	for kind, newLock := range kinds {
		Context("on a "+kind, func() {
			It("unlocks when fn panics, then lets the panic go on with its own value", func() {
				lock := newLock(e.Client(), "do-panic")
				Expect(func() {
					_ = rlock.Do(ctx, lock, 0, 0, func(context.Context) error { panic("boom") })
				}).To(PanicWith("boom"))
				Expect(lock.IsLocked(ctx)).To(BeFalse(), "the lock was given back")
				ran := false
				Expect(rlock.Do(ctx, lock, 0, 0, func(context.Context) error { ran = true; return nil })).To(Succeed())
				Expect(ran).To(BeTrue(), "a later Do on the name gets the lock")
			})

			It("unlocks when fn calls runtime.Goexit, as t.FailNow does", func() {
				lock := newLock(e.Client(), "do-goexit")
				exited := make(chan struct{})
				go func() {
					defer close(exited)
					_ = rlock.Do(ctx, lock, 0, 0, func(context.Context) error {
						runtime.Goexit()
						return nil
					})
				}()
				Eventually(exited).WithTimeout(10 * time.Second).Should(BeClosed())
				Expect(lock.IsLocked(ctx)).To(BeFalse(), "the lock was given back")
				Expect(rlock.Do(ctx, lock, 0, 0, func(context.Context) error { return nil })).To(Succeed())
			})
		})
	}
})
