// Package probetest is the Ginkgo/Gomega side of goredisson's proof kit
// (package probe): it starts the real Redisson for a spec, skipping the spec
// in one line when no Redisson class path is configured, configures a
// goredisson Client as the probe's Redisson is, and checks what a port must
// keep: the Java side's hold refuses the Go side's attempt, and each side's
// release wakes the other's waiter within a bound.
//
//	java := probetest.Start(probe.Config{Addrs: []string{addr}})
//	client := probetest.NewClient(java, rdb)
//	w := java.Thread("writer").NewReadWriteLock("doc").WriteLock()
//	Expect(w.Lock(ctx)).To(Succeed())
//	probetest.ExpectRefused(ctx, client.NewReadWriteLock("doc").ReadLock())
//	probetest.JavaWakesGo(ctx, time.Second, client.NewReadWriteLock("doc").ReadLock().Lock, w.Unlock)
package probetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/interop/probe"
	"github.com/goredisson/goredisson/rlock"
)

// StartTimeout bounds Start: compiling the probe the first time and
// connecting the JVM's client.
var StartTimeout = 3 * time.Minute

// Settle is how long a waiter must stay blocked (a Java thread parked, a
// Go call not returned) before JavaWakesGo and GoWakesJava release: long
// enough for the waiter's attempt to have failed and its subscription to be
// made on a loaded machine.
var Settle = 300 * time.Millisecond

// SkipMessage is the one line Start skips with when no class path is
// configured.
const SkipMessage = "probe: " + probe.ClassPathEnv + " is not set, so the specs against the real Redisson are skipped (set it to your Redisson jar and its dependencies, as javac -cp takes them)"

// Start starts the probe for the running spec or container (call it in a
// BeforeAll, BeforeEach or It) and closes it at cleanup. Without a class
// path it skips with SkipMessage, and with a setting the release lacks
// (errors.ErrUnsupported) it skips saying which; any other error fails the
// spec.
func Start(cfg probe.Config) *probe.Probe {
	ginkgo.GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	p, err := probe.Start(ctx, cfg)
	if errors.Is(err, probe.ErrNotConfigured) {
		ginkgo.Skip(SkipMessage)
	}
	if errors.Is(err, errors.ErrUnsupported) {
		ginkgo.Skip("the Redisson release on the class path lacks a setting of probe.Config: " + err.Error())
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "starting the Redisson probe")
	ginkgo.DeferCleanup(p.Close)
	return p
}

// NewClient returns a goredisson Client on rdb configured as the probe's
// Redisson is (p.RlockOptions, then opts), closed at cleanup.
func NewClient(p *probe.Probe, rdb redis.UniversalClient, opts ...rlock.Option) *rlock.Client {
	ginkgo.GinkgoHelper()
	c, err := rlock.NewClient(rdb, append(p.RlockOptions(), opts...)...)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "rlock.NewClient with the probe's options")
	ginkgo.DeferCleanup(c.Close)
	return c
}

// ExpectRefused expects one attempt on each lock to be refused (TryLock
// with no wait returns false): the other side holds it. The locks may be
// goredisson's or the probe's.
func ExpectRefused(ctx context.Context, locks ...rlock.Locker) {
	ginkgo.GinkgoHelper()
	for _, l := range locks {
		ok, err := l.TryLock(ctx, 0, 0)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "TryLock of %q", l.Name())
		if ok {
			_ = l.Unlock(ctx)
		}
		gomega.Expect(ok).To(gomega.BeFalse(), "%q was taken: nothing excluded it", l.Name())
	}
}

// JavaWakesGo starts goWait (a blocking Go call: a Lock, an Acquire, an
// Await), waits until it has stayed blocked for Settle, runs javaRelease
// (the Java side's unlock, release or count-down), and expects goWait to
// return nil within d of javaRelease's start. It returns the wake-up time.
func JavaWakesGo(ctx context.Context, d time.Duration, goWait, javaRelease func(context.Context) error) time.Duration {
	ginkgo.GinkgoHelper()
	return wakes(ctx, d, goWait, javaRelease, func(finished <-chan struct{}) {
		gomega.Consistently(finished).WithTimeout(Settle).ShouldNot(gomega.BeClosed(), "the Go waiter returned before the Java release")
	})
}

// GoWakesJava starts javaWait (a blocking call of a probe object on thread
// t), waits until t has stayed parked in it for Settle, runs goRelease, and
// expects javaWait to return nil within d of goRelease's start. It returns
// the wake-up time.
func GoWakesJava(ctx context.Context, d time.Duration, t *probe.Thread, javaWait, goRelease func(context.Context) error) time.Duration {
	ginkgo.GinkgoHelper()
	return wakes(ctx, d, javaWait, goRelease, func(finished <-chan struct{}) {
		// A waiting Redisson thread is parked, but runs a moment between its
		// attempts: wait for a streak of Settle parked samples.
		var since time.Time
		settled := func() bool {
			ok, err := t.Parked(ctx)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			switch {
			case !ok:
				since = time.Time{}
			case since.IsZero():
				since = time.Now()
			}
			return ok && time.Since(since) >= Settle
		}
		gomega.Eventually(settled).WithTimeout(30*time.Second).WithPolling(10*time.Millisecond).Should(gomega.BeTrue(),
			"Java thread %q never stayed blocked for %v", t.Name(), Settle)
		gomega.Expect(finished).NotTo(gomega.BeClosed(), "the Java waiter returned before the Go release")
	})
}

// wakes runs wait in a goroutine, settle until it is blocked, then release,
// and times wait's return from release's start. At cleanup a wait still
// running is cancelled and awaited.
func wakes(ctx context.Context, d time.Duration, wait, release func(context.Context) error, settle func(finished <-chan struct{})) time.Duration {
	ginkgo.GinkgoHelper()
	wctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	var werr error
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(finished)
		werr = wait(wctx)
	}()
	ginkgo.DeferCleanup(func() {
		cancel()
		<-finished
	})
	settle(finished)
	start := time.Now()
	gomega.Expect(release(ctx)).To(gomega.Succeed(), "the release")
	gomega.Eventually(finished).WithTimeout(d).WithPolling(time.Millisecond).Should(gomega.BeClosed(),
		"the waiter was not woken within %v of the release", d)
	took := time.Since(start)
	gomega.Expect(werr).NotTo(gomega.HaveOccurred(), "the waiter")
	fmt.Fprintf(ginkgo.GinkgoWriter, "probetest: woken %v after the release\n", took)
	return took
}
