package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Issue 30: failed and unsure releases. Each spec runs on a redis-server of
// its own (maxmemory, requirepass and CLIENT KILL would disturb the suite's
// shared server).

// fillToOOM makes the server refuse writes that may grow memory ("OOM
// command not allowed"): 4 MB of data, noeviction, and maxmemory below what
// is used. freeOOM lifts the limit.
func fillToOOM(raw *redis.Client) {
	GinkgoHelper()
	ctx := context.Background()
	value := strings.Repeat("x", 64<<10)
	for i := range 64 {
		Expect(raw.Set(ctx, fmt.Sprintf("fill:%d", i), value, 0).Err()).To(Succeed())
	}
	Expect(raw.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err()).To(Succeed())
	Expect(raw.ConfigSet(ctx, "maxmemory", "1mb").Err()).To(Succeed())
	Expect(raw.Set(ctx, "fill:more", value, 0).Err()).To(MatchError(HavePrefix("OOM")))
}

func freeOOM(raw *redis.Client) {
	GinkgoHelper()
	Expect(raw.ConfigSet(context.Background(), "maxmemory", "0").Err()).To(Succeed())
}

// failedUnlockKinds are every lock kind and group lock, made on a Client
// (names are per spec).
var failedUnlockKinds = map[string]struct {
	mine, other func(c *rlock.Client, name string) rlock.Locker
}{}

func init() {
	single := func(f func(c *rlock.Client, n string) rlock.Locker) func(c *rlock.Client, n string) rlock.Locker {
		return f
	}
	add := func(kind string, mine, other func(c *rlock.Client, n string) rlock.Locker) {
		failedUnlockKinds[kind] = struct {
			mine, other func(c *rlock.Client, name string) rlock.Locker
		}{mine, other}
	}
	for kind, f := range singleKeyKinds {
		add(kind, single(f), singleKeyKinds[otherKind(kind)])
	}
	nr := func(c *rlock.Client, n string) rlock.Locker { return c.NewNonReentrantLock(n) }
	add("NonReentrantLock", nr, nr)
	nrf := func(c *rlock.Client, n string) rlock.Locker { return c.NewNonReentrantFairLock(n) }
	add("NonReentrantFairLock", nrf, nrf)
	faster := func(c *rlock.Client, n string) rlock.Locker { return c.NewFasterMultiLock(n, "a", "b") }
	add("FasterMultiLock", faster, faster)
	multi := func(c *rlock.Client, n string) rlock.Locker {
		m, err := rlock.NewMultiLock(c.NewLock(n+":1"), c.NewLock(n+":2"))
		Expect(err).NotTo(HaveOccurred())
		return m
	}
	add("MultiLock", multi, multi)
	red := func(c *rlock.Client, n string) rlock.Locker {
		r, err := rlock.NewRedLock(c.NewLock(n+":1"), c.NewLock(n+":2"), c.NewLock(n+":3"))
		Expect(err).NotTo(HaveOccurred())
		return r
	}
	add("RedLock", red, red)
}

var _ = Describe("issue 30: a failed Unlock", Label("fault"), func() {
	const watchdog = 2 * time.Second
	var (
		ctx     context.Context
		raw     *redis.Client
		a, b    *rlock.Client
		srvAddr string
	)
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		ctx = context.Background()
		srv := spectest.StartServers(1)[0]
		srvAddr = srv.Addr
		raw = redis.NewClient(&redis.Options{Addr: srvAddr})
		DeferCleanup(raw.Close)
		a = spectest.ClientOn(srvAddr, rlock.WithWatchdogTimeout(watchdog))
		b = spectest.ClientOn(srvAddr, rlock.WithWatchdogTimeout(watchdog))
	})

	for kind, mk := range failedUnlockKinds {
		It("stops renewing the "+kind+"'s hold: it ends within one lease and its LostContext ends", func() {
			name := spectest.UniqueName("oom")
			owner := ctxowner.New(ctx)
			l := mk.mine(a, name)
			Expect(l.Lock(owner)).To(Succeed())
			lctx, stop := rlock.LostContext(owner, l)
			DeferCleanup(stop)

			fillToOOM(raw)
			err := l.Unlock(owner)
			GinkgoWriter.Printf("%s: Unlock under OOM: %v\n", kind, err)
			Expect(err).To(HaveOccurred(), "the Unlock did not fail under OOM: nothing to specify")
			freeOOM(raw)

			other := mk.other(b, name)
			start := time.Now()
			Eventually(func() bool {
				ok, err := other.TryLock(ctxowner.New(ctx), 0, 0)
				Expect(err).NotTo(HaveOccurred())
				return ok
			}).WithTimeout(watchdog+3*time.Second).WithPolling(50*time.Millisecond).Should(BeTrue(),
				"the hold whose Unlock failed is still renewed")
			GinkgoWriter.Printf("%s: another owner took it %v after memory was freed\n", kind, time.Since(start))
			// Its watcher goroutine cancels it at the hold's deadline, which
			// passed before the key expired: allow that goroutine a moment.
			Eventually(lctx.Done()).WithTimeout(2*time.Second).Should(BeClosed(), "the LostContext outlived the hold")
			Expect(errors.Is(context.Cause(lctx), rlock.ErrLockLost)).To(BeTrue(), "cause: %v", context.Cause(lctx))
		})
	}

	It("settles the failed release before the owner's next call", func() {
		name := spectest.UniqueName("oom")
		owner := ctxowner.New(ctx)
		l := a.NewLock(name)
		Expect(l.Lock(owner)).To(Succeed())
		lctx, stop := rlock.LostContext(owner, l)
		DeferCleanup(stop)
		fillToOOM(raw)
		Expect(l.Unlock(owner)).NotTo(Succeed())
		// Until the memory is freed, the next call cannot settle it, and
		// says so.
		Expect(l.Lock(owner)).To(MatchError(ContainSubstring("OOM")))
		freeOOM(raw)
		// The next call releases the old hold first, then takes a new one:
		// one hold, not a re-entry on a hold the owner gave up; the old
		// hold's LostContext ends (its watcher goroutine cancels it, so
		// shortly after, not within the call: a loaded run saw it open
		// right after Lock returned).
		Expect(l.Lock(owner)).To(Succeed())
		Eventually(lctx.Done()).WithTimeout(5 * time.Second).Should(BeClosed())
		Expect(l.HoldCount(owner)).To(Equal(1))
		Expect(l.Unlock(owner)).To(Succeed())
		Expect(raw.Exists(ctx, name).Val()).To(BeZero())
	})

	It("reports what each call does under OOM", func() {
		name := spectest.UniqueName("oom")
		owner := ctxowner.New(ctx)
		fenced := a.NewFencedLock(name + ":f")
		l := a.NewLock(name)
		sem := a.NewSemaphore(name + ":s")
		Expect(sem.TrySetPermits(ctx, 2)).To(BeTrue())
		Expect(sem.Acquire(ctx, 1)).To(Succeed())
		Expect(l.Lock(owner)).To(Succeed())
		fillToOOM(raw)
		report := func(what string, err error) { GinkgoWriter.Printf("under OOM: %s: %v\n", what, err) }
		ok, err := a.NewLock(name+":fresh").TryLock(ctxowner.New(ctx), 0, 0)
		report(fmt.Sprintf("fresh TryLock (%v)", ok), err)
		report("re-entry", l.Lock(owner))
		_, err = fenced.LockToken(ctxowner.New(ctx))
		report("FencedLock", err)
		report("Semaphore.Release", sem.Release(ctx, 1))
		report("Unlock", l.Unlock(owner))
		freeOOM(raw)
	})
})

var _ = Describe("issue 30: WRONGTYPE and connection set-up failures", Label("fault"), func() {
	var ctx context.Context
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		ctx = context.Background()
	})

	It("takes a lock key overwritten by another application as lost at the next renewal", func() {
		e := spectest.NewEnv()
		const watchdog = 12 * time.Second // renewed every 4 s, deadline >= 8 s after the overwrite
		c := e.Client(rlock.WithWatchdogTimeout(watchdog))
		name := spectest.UniqueName("wrongtype")
		owner := ctxowner.New(ctx)
		l := c.NewLock(name)
		Expect(l.Lock(owner)).To(Succeed())
		lctx, stop := rlock.LostContext(owner, l)
		DeferCleanup(stop)
		Expect(e.Raw.Set(ctx, name, "another application's value", 0).Err()).To(Succeed())
		Eventually(lctx.Done()).WithTimeout(watchdog/3+2*time.Second).Should(BeClosed(),
			"the renewal's WRONGTYPE was not taken as a loss")
		Expect(errors.Is(context.Cause(lctx), rlock.ErrLockLost)).To(BeTrue())
	})

	It("takes WRONGTYPE on release as a loss at once", func() {
		e := spectest.NewEnv()
		c := e.Client()
		name := spectest.UniqueName("wrongtype")
		owner := ctxowner.New(ctx)
		l := c.NewLock(name)
		Expect(l.Lock(owner)).To(Succeed())
		lctx, stop := rlock.LostContext(owner, l)
		DeferCleanup(stop)
		Expect(e.Raw.Set(ctx, name, "another application's value", 0).Err()).To(Succeed())
		err := l.Unlock(owner)
		Expect(err).To(MatchError(rlock.ErrLockLost))
		Expect(err.Error()).To(ContainSubstring("WRONGTYPE"))
		Eventually(lctx.Done()).WithTimeout(3 * time.Second).Should(BeClosed())
	})

	It("reports a wrong password as such, not as a lost reply", func() {
		srv := spectest.StartServers(1)[0]
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
		DeferCleanup(admin.Close)
		Expect(admin.ConfigSet(ctx, "requirepass", "right").Err()).To(Succeed())
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: "wrong", MaxRetries: -1})
		DeferCleanup(rdb.Close)
		c, err := rlock.NewClient(rdb, rlock.WithRetry(2, 50*time.Millisecond))
		if err != nil {
			Expect(err.Error()).To(ContainSubstring("WRONGPASS"))
			return
		}
		DeferCleanup(c.Close)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err = c.NewLock(spectest.UniqueName("auth")).Lock(ctxowner.New(cctx))
		Expect(err).To(HaveOccurred())
		var re redis.Error
		Expect(errors.As(err, &re)).To(BeTrue(), "not the go-redis error: %v", err)
		Expect(err.Error()).To(ContainSubstring("WRONGPASS"))
		Expect(err.Error()).NotTo(ContainSubstring("settling"))
		Expect(errors.Is(err, rlock.ErrUnknownOutcome)).To(BeFalse())
	})

	It("reports a dial failure as such", func() {
		port, err := redistest.FreePort()
		Expect(err).NotTo(HaveOccurred())
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		DeferCleanup(rdb.Close)
		c, err := rlock.NewClient(rdb, rlock.WithRetry(2, 50*time.Millisecond))
		if err != nil {
			Expect(err.Error()).To(ContainSubstring("dial"))
			return
		}
		DeferCleanup(c.Close)
		owner := ctxowner.New(ctx)
		l := c.NewLock(spectest.UniqueName("dial"))
		for range 2 {
			err = l.Lock(owner)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("dial"))
			Expect(err.Error()).NotTo(ContainSubstring("settling"))
			Expect(errors.Is(err, rlock.ErrUnknownOutcome)).To(BeFalse())
		}
	})
})

var _ = Describe("issue 30: releases whose outcome is unknown", Label("fault"), func() {
	var ctx context.Context
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		ctx = context.Background()
	})

	type unsure struct {
		setup func(c *rlock.Client, raw *redis.Client, name string) (call func() error, ran func() bool)
	}
	cases := map[string]unsure{
		"Semaphore.Release": {func(c *rlock.Client, raw *redis.Client, name string) (func() error, func() bool) {
			s := c.NewSemaphore(name)
			Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
			return func() error { return s.Release(ctx, 1) },
				func() bool { return raw.Get(ctx, name).Val() == "2" }
		}},
		"Semaphore.ReleaseIfExists": {func(c *rlock.Client, raw *redis.Client, name string) (func() error, func() bool) {
			s := c.NewSemaphore(name)
			Expect(s.TrySetPermits(ctx, 1)).To(BeTrue())
			return func() error { _, err := s.ReleaseIfExists(ctx, 1); return err },
				func() bool { return raw.Get(ctx, name).Val() == "2" }
		}},
		"CountDownLatch.CountDown": {func(c *rlock.Client, raw *redis.Client, name string) (func() error, func() bool) {
			l := c.NewCountDownLatch(name)
			Expect(l.TrySetCount(ctx, 2)).To(BeTrue())
			return func() error { return l.CountDown(ctx) },
				func() bool { return raw.Get(ctx, name).Val() == "1" }
		}},
		"PermitExpirableSemaphore.ReleaseN": {func(c *rlock.Client, raw *redis.Client, name string) (func() error, func() bool) {
			p := c.NewPermitExpirableSemaphore(name)
			Expect(p.TrySetPermits(ctx, 2)).To(BeTrue())
			ids, err := p.AcquireN(ctx, 2, 0)
			Expect(err).NotTo(HaveOccurred())
			return func() error { return p.ReleaseN(ctx, ids) },
				func() bool { return raw.Get(ctx, name).Val() == "2" }
		}},
		"PermitExpirableSemaphore.Release": {func(c *rlock.Client, raw *redis.Client, name string) (func() error, func() bool) {
			p := c.NewPermitExpirableSemaphore(name)
			Expect(p.TrySetPermits(ctx, 1)).To(BeTrue())
			id, err := p.Acquire(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			return func() error { return p.Release(ctx, id) },
				func() bool { return raw.Get(ctx, name).Val() == "1" }
		}},
		"Lock.Unlock": {func(c *rlock.Client, raw *redis.Client, name string) (func() error, func() bool) {
			l := c.NewLock(name)
			owner := ctxowner.New(ctx)
			// Once before, so that the server has the release script
			// cached (a NOSCRIPT reply would be lost instead).
			Expect(l.Lock(owner)).To(Succeed())
			Expect(l.Unlock(owner)).To(Succeed())
			Expect(l.Lock(owner)).To(Succeed())
			return func() error { return l.Unlock(owner) },
				func() bool { return raw.Exists(ctx, name).Val() == 0 }
		}},
	}
	for what, cs := range cases {
		It(what+" whose connection dies says the outcome is unknown (ErrUnknownOutcome), not a bare EOF", func() {
			proxy := spectest.StartProxy()
			// No read timeout: only the reset ends the call.
			c, _ := spectest.ClientWith(&redis.Options{Addr: proxy.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ReadTimeout: -1})
			raw := redis.NewClient(&redis.Options{Addr: spectest.Server().Addr})
			DeferCleanup(raw.Close)
			name := spectest.UniqueName("unsure:" + what)
			call, ran := cs.setup(c, raw, name)
			// The settle of a lost release goes through the proxy too: keep
			// it cut off until the call returned.
			proxy.DropResponses(true)
			done := make(chan error, 1)
			go func() { done <- call() }()
			Eventually(ran).WithTimeout(5 * time.Second).Should(BeTrue())
			proxy.Partition(true)
			proxy.ResetConnections()
			var err error
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&err))
			proxy.Partition(false)
			proxy.DropResponses(false)
			GinkgoWriter.Printf("%s: %v\n", what, err)
			Expect(err).To(MatchError(rlock.ErrUnknownOutcome))
			var re *rlock.Error
			Expect(errors.As(err, &re)).To(BeTrue())
		})
	}

	It("gives every never-expiring permit of a PermitExpirableSemaphore back after a CLIENT KILL storm", func() {
		srv := spectest.StartServers(1)[0]
		raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
		DeferCleanup(raw.Close)
		c := spectest.ClientOn(srv.Addr)
		name := spectest.UniqueName("storm")
		p := c.NewPermitExpirableSemaphore(name)
		const permits = 3
		Expect(p.TrySetPermits(ctx, permits)).To(BeTrue())

		stormCtx, endStorm := context.WithTimeout(ctx, 4*time.Second)
		defer endStorm()
		var wg sync.WaitGroup
		var kills, cycles, unsureReleases atomic.Int64
		var mu sync.Mutex
		var otherErrs []error // releases that said neither released nor unknown
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			for stormCtx.Err() == nil {
				n, _ := raw.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Result()
				kills.Add(n)
				time.Sleep(7 * time.Millisecond)
			}
		}()
		for range 6 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for stormCtx.Err() == nil {
					id, ok, err := p.TryAcquire(ctx, 200*time.Millisecond, 0)
					if err != nil || !ok {
						continue
					}
					time.Sleep(time.Millisecond)
					if err := p.Release(ctx, id); err != nil {
						unsureReleases.Add(1)
						if !errors.Is(err, rlock.ErrUnknownOutcome) {
							mu.Lock()
							otherErrs = append(otherErrs, err)
							mu.Unlock()
						}
					}
					cycles.Add(1)
				}
			}()
		}
		spectest.WaitAll(&wg)
		GinkgoWriter.Printf("storm: %d connections killed, %d acquire-release cycles, %d releases failed (%d not ErrUnknownOutcome)\n", kills.Load(), cycles.Load(), unsureReleases.Load(), len(otherErrs))
		Expect(kills.Load()).To(BeNumerically(">", 10))
		Expect(cycles.Load()).To(BeNumerically(">", 5))
		Eventually(func() (int, error) { return p.AvailablePermits(ctx) }).WithTimeout(15*time.Second).Should(Equal(permits),
			"permits taken for good")
		Expect(p.AcquiredPermits(ctx)).To(BeZero())
		Expect(otherErrs).To(BeEmpty(), "a release by id said something else than released or unknown")
	})
})
