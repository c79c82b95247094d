package probe_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/interop/probe"
	"github.com/goredisson/goredisson/interop/probe/probetest"
	"github.com/goredisson/goredisson/rlock"
)

// wake is the bound of every wake-up here: far above the measured few ms,
// far below the 30 s a waiter that missed its message sleeps.
const wake = 2 * time.Second

var _ = Describe("the proof kit without Redisson", func() {
	It("says the class path is missing with ErrNotConfigured", func(ctx SpecContext) {
		if old, ok := os.LookupEnv(probe.ClassPathEnv); ok {
			Expect(os.Unsetenv(probe.ClassPathEnv)).To(Succeed())
			DeferCleanup(os.Setenv, probe.ClassPathEnv, old)
		}
		_, err := probe.Start(ctx, probe.Config{Addrs: []string{srv.Addr()}})
		Expect(err).To(MatchError(probe.ErrNotConfigured))
		Expect(err.Error()).To(ContainSubstring(probe.ClassPathEnv))
	})

	It("fails with javac's words when the class path holds no Redisson", func(ctx SpecContext) {
		if _, err := exec.LookPath("javac"); err != nil {
			Skip("javac is not installed")
		}
		_, err := probe.Start(ctx, probe.Config{Addrs: []string{srv.Addr()}, ClassPath: GinkgoT().TempDir(), CacheDir: GinkgoT().TempDir()})
		Expect(err).To(MatchError(ContainSubstring("javac RedissonProbe.java")))
		Expect(err).To(MatchError(ContainSubstring("org.redisson")))
	})

	It("refuses a lease below Redisson's millisecond before it calls Java", func(ctx SpecContext) {
		t := (&probe.Probe{}).Thread("t")
		Expect(t.NewLock("a").LockLease(ctx, 500*time.Microsecond)).To(MatchError(ContainSubstring("below 1ms")))
		_, err := t.NewLock("a").TryLock(ctx, 500*time.Microsecond, time.Microsecond)
		Expect(err).To(MatchError(ContainSubstring("below 1ms")))
		_, err = t.NewPermitExpirableSemaphore("p").Acquire(ctx, time.Microsecond)
		Expect(err).To(MatchError(ContainSubstring("below 1ms")))
	})

	It("ships the probe's Java source", func() {
		Expect(string(probe.JavaSource())).To(ContainSubstring("public final class RedissonProbe"))
	})
})

var _ = Describe("the proof kit against the real Redisson", Label("redisson"), Ordered, func() {
	var (
		java   *probe.Probe
		client *rlock.Client
	)
	BeforeAll(func() {
		java = probetest.Start(probe.Config{Addrs: []string{srv.Addr()}})
		client = probetest.NewClient(java, rdb())
	})

	// name is a name unique to the running spec.
	name := func(s string) string {
		return s + ":" + strings.ReplaceAll(CurrentSpecReport().LeafNodeText, " ", "-")
	}

	type pair struct {
		java func(t *probe.Thread, n string) rlock.Locker
		goes func(n string) rlock.Locker
	}
	DescribeTable("each lock kind: a hold on one side refuses the other, whose unlock wakes the other's waiter",
		func(sctx SpecContext, kind pair) {
			ctx := ctxowner.WithID(sctx, "go-owner")
			n := name("lock")
			t := java.Thread(n)
			jl, gl := kind.java(t, n), kind.goes(n)
			err := jl.Lock(ctx)
			if errors.Is(err, errors.ErrUnsupported) {
				Skip("the Redisson release on the class path lacks this lock kind: " + err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			probetest.ExpectRefused(ctx, gl)
			probetest.JavaWakesGo(ctx, wake, gl.Lock, jl.Unlock)
			Expect(jl.TryLock(ctx, 0, 0)).To(BeFalse())
			probetest.GoWakesJava(ctx, wake, t, jl.Lock, gl.Unlock)
			Expect(jl.Unlock(ctx)).To(Succeed())
			Expect(gl.IsLocked(ctx)).To(BeFalse())
		},
		Entry("reentrant", pair{
			func(t *probe.Thread, n string) rlock.Locker { return t.NewLock(n) },
			func(n string) rlock.Locker { return client.NewLock(n) }}),
		Entry("fair", pair{
			func(t *probe.Thread, n string) rlock.Locker { return t.NewFairLock(n) },
			func(n string) rlock.Locker { return client.NewFairLock(n) }}),
		Entry("read-write (write side)", pair{
			func(t *probe.Thread, n string) rlock.Locker { return t.NewReadWriteLock(n).WriteLock() },
			func(n string) rlock.Locker { return client.NewReadWriteLock(n).WriteLock() }}),
		Entry("spin", pair{
			func(t *probe.Thread, n string) rlock.Locker { return t.NewSpinLock(n) },
			func(n string) rlock.Locker { return client.NewSpinLock(n) }}),
		Entry("fenced", pair{
			func(t *probe.Thread, n string) rlock.Locker { return t.NewFencedLock(n) },
			func(n string) rlock.Locker { return client.NewFencedLock(n) }}),
		Entry("multi", pair{
			func(t *probe.Thread, n string) rlock.Locker { return t.NewMultiLock(n+":a", n+":b") },
			func(n string) rlock.Locker {
				m, err := rlock.NewMultiLock(client.NewLock(n+":a"), client.NewLock(n+":b"))
				Expect(err).NotTo(HaveOccurred())
				return m
			}}),
		Entry("non-reentrant (Redisson 4.4 on)", pair{
			func(t *probe.Thread, n string) rlock.Locker { return t.NewNonReentrantLock(n) },
			func(n string) rlock.Locker { return client.NewNonReentrantLock(n) }}),
	)

	It("shares a read lock between the sides and counts a Java thread's re-entries", func(sctx SpecContext) {
		ctx := ctxowner.WithID(sctx, "go-reader")
		n := name("rw")
		jr := java.Thread(n).NewReadWriteLock(n).ReadLock()
		Expect(jr.Lock(ctx)).To(Succeed())
		Expect(jr.Lock(ctx)).To(Succeed())
		Expect(jr.HoldCount(ctx)).To(Equal(2))
		Expect(jr.IsHeldByCurrent(ctx)).To(BeTrue())
		Expect(java.Thread("other").NewReadWriteLock(n).ReadLock().IsHeldByCurrent(ctx)).To(BeFalse())
		gr := client.NewReadWriteLock(n).ReadLock()
		Expect(gr.TryLock(ctx, 0, 0)).To(BeTrue())
		probetest.ExpectRefused(ctx, client.NewReadWriteLock(n).WriteLock())
		Expect(gr.Unlock(ctx)).To(Succeed())
		Expect(jr.Unlock(ctx)).To(Succeed())
		Expect(jr.Unlock(ctx)).To(Succeed())
		Expect(jr.IsLocked(ctx)).To(BeFalse())
		// (A read unlock of the free lock throws from Redisson 3.44.0 on and
		// returns normally before: a plain lock's throws in every release.)
		jl := java.Thread(n).NewLock(n + ":plain")
		Expect(jl.Unlock(ctx)).To(MatchError(rlock.ErrNotHeld))
		Expect(jl.Unlock(ctx)).To(MatchError(probe.ErrIllegalMonitorState))
	})

	It("hands out fencing tokens from one counter to both sides", func(ctx SpecContext) {
		n := name("fenced")
		jf := java.Thread(n).NewFencedLock(n)
		t1, err := jf.LockToken(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(jf.Unlock(ctx)).To(Succeed())
		gf := client.NewFencedLock(n)
		t2, ok, err := gf.TryLockToken(ctx, 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(t2).To(BeNumerically(">", t1))
		Expect(jf.Token(ctx)).To(Equal(t2))
		_, ok, err = jf.TryLockToken(ctx, 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
		Expect(gf.Unlock(ctx)).To(Succeed())
	})

	It("wakes either side's Semaphore waiter with the other's release", func(ctx SpecContext) {
		n := name("sem")
		js, gs := java.Thread(n).NewSemaphore(n), client.NewSemaphore(n)
		Expect(js.TrySetPermits(ctx, 1)).To(BeTrue())
		Expect(gs.TryAcquire(ctx, 1, 0)).To(BeTrue())
		Expect(js.TryAcquire(ctx, 1, 0)).To(BeFalse())
		probetest.GoWakesJava(ctx, wake, js.Thread(), func(ctx context.Context) error { return js.Acquire(ctx, 1) },
			func(ctx context.Context) error { return gs.Release(ctx, 1) })
		probetest.JavaWakesGo(ctx, wake, func(ctx context.Context) error { return gs.Acquire(ctx, 1) },
			func(ctx context.Context) error { return js.Release(ctx, 1) })
		Expect(js.AddPermits(ctx, 2)).To(Succeed())
		Expect(gs.AvailablePermits(ctx)).To(Equal(2))
		Expect(js.DrainPermits(ctx)).To(Equal(2))
	})

	It("shares a PermitExpirableSemaphore's permits, ids and leases", func(ctx SpecContext) {
		n := name("psem")
		jp, gp := java.Thread(n).NewPermitExpirableSemaphore(n), client.NewPermitExpirableSemaphore(n)
		Expect(jp.TrySetPermits(ctx, 2)).To(BeTrue())
		Expect(jp.SetPermits(ctx, 3)).To(Succeed())
		Expect(gp.Permits(ctx)).To(Equal(3))
		Expect(gp.SetPermits(ctx, 2)).To(Succeed())
		Expect(jp.Permits(ctx)).To(Equal(2))
		gid, err := gp.Acquire(ctx, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		jid, ok, err := jp.TryAcquire(ctx, 0, 1500*time.Millisecond) // runs out by itself
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(jp.AcquiredPermits(ctx)).To(Equal(2))
		Expect(jp.UpdateLeaseTime(ctx, gid, 2*time.Minute)).To(BeTrue())
		Expect(gp.LeaseTime(ctx, gid)).To(BeNumerically(">", time.Minute))
		left, err := jp.LeaseTime(ctx, gid)
		if !errors.Is(err, errors.ErrUnsupported) { // getLeaseTime: Redisson 3.41 on
			Expect(err).NotTo(HaveOccurred())
			Expect(left).To(BeNumerically("~", 2*time.Minute, 10*time.Second))
		}
		// Java's permit's lease runs out: Go's waiter gets it.
		_, ok, err = gp.TryAcquire(ctx, 10*time.Second, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(jp.Release(ctx, jid)).To(MatchError(probe.ErrIllegalArgument)) // expired: not held
		Expect(jp.Release(ctx, gid)).To(Succeed())                            // Go's permit, released by Java
		Expect(gp.TryRelease(ctx, gid)).To(BeFalse())
		Expect(gp.AvailablePermits(ctx)).To(Equal(1))
	})

	It("wakes either side's CountDownLatch waiters with the other's last count-down", func(ctx SpecContext) {
		n := name("latch")
		jl, gl := java.Thread(n).NewCountDownLatch(n), client.NewCountDownLatch(n)
		Expect(jl.TrySetCount(ctx, 1)).To(BeTrue())
		Expect(jl.TryAwait(ctx, 0)).To(BeFalse())
		probetest.GoWakesJava(ctx, wake, jl.Thread(), jl.Await, gl.CountDown)
		Expect(gl.TrySetCount(ctx, 1)).To(BeTrue())
		probetest.JavaWakesGo(ctx, wake, gl.Await, jl.CountDown)
		Expect(jl.Count(ctx)).To(BeZero())
	})

	It("cancels a Java call when its context ends, and the thread goes on", func(sctx SpecContext) {
		ctx := ctxowner.WithID(sctx, "holder")
		n := name("cancel")
		gl := client.NewLock(n)
		Expect(gl.Lock(ctx)).To(Succeed())
		jl := java.Thread(n).NewLock(n)
		short, cancel := context.WithTimeout(sctx, 500*time.Millisecond)
		defer cancel()
		Expect(jl.Lock(short)).To(MatchError(context.DeadlineExceeded))
		Eventually(jl.Thread().Parked).WithArguments(sctx).Should(BeFalse())
		Expect(jl.TryLock(sctx, 0, 0)).To(BeFalse())
		Expect(gl.Unlock(ctx)).To(Succeed())
		Expect(jl.TryLock(sctx, 0, 0)).To(BeTrue())
		Expect(jl.HoldCount(sctx)).To(Equal(1))
		Expect(jl.Unlock(sctx)).To(Succeed())
	})
})

var _ = Describe("the proof kit with a NameMapper", Label("redisson"), func() {
	It("maps the Java side's names and configures goredisson's alike", func(ctx SpecContext) {
		java := probetest.Start(probe.Config{Addrs: []string{srv.Addr()}, NamePrefix: "tenant-a:"})
		jl := java.Thread("t").NewLock("orders")
		Expect(jl.Lock(ctx)).To(Succeed())
		Expect(rdb().Exists(ctx, "tenant-a:orders").Val()).To(Equal(int64(1)))
		probetest.ExpectRefused(ctx, probetest.NewClient(java, rdb()).NewLock("orders"))

		By("a Go client without the mapper takes another key: the kit's check fails")
		plain, err := rlock.NewClient(rdb())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(plain.Close)
		failures := InterceptGomegaFailures(func() { probetest.ExpectRefused(ctx, plain.NewLock("orders")) })
		Expect(failures).To(ContainElement(ContainSubstring("nothing excluded it")))
		Expect(jl.Unlock(ctx)).To(Succeed())
	})

})
