package rlock_test

import (
	"context"
	"net"
	"sync"
	"syscall"
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

// Issue 39, the gap item 2 left: an acquisition, re-entry or Extend that
// Redis confirms past the hold's local deadline (the hold counts as lost
// from that deadline on: a confirmation after it does not revive it) must
// not report success. Two ways to make a reply late, both deterministic:
// the server stopped (SIGSTOP) while the call is sent, so that Redis runs it
// late and the key lives a whole lease after the late confirmation; or the
// reply held back on its way to the Client (readGate: a process paused
// between its send and its read), so that Redis ran the call in time and
// the lease it set outlives the deadline the Client counts. Each spec has a
// redis-server of its own (the stops would hold up the suite's).
var _ = Describe("issue 39: a confirmation that comes past the hold's local deadline", Label("fault", "slow"), func() {
	// lease is the fixed lease (or watchdog timeout) the late calls ask
	// for; late is how long their reply is held back at least, counted
	// from before the call began: always past the lease.
	const lease = 1500 * time.Millisecond
	const late = lease + time.Second
	var (
		ctx context.Context
		srv *redistest.Server
		raw *redis.Client
	)
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(15 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		ctx = context.Background()
		srv = spectest.StartServers(1)[0]
		DeferCleanup(func() { _ = srv.Resume() }) // a spec that failed while it was stopped
		raw = redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 20 * time.Second, MaxRetries: -1})
		DeferCleanup(raw.Close)
	})

	// newClient returns a Client on the spec's server whose calls wait up
	// to 20 s for a reply (every late reply comes sooner), and the gate
	// that holds back what its connections read.
	newClient := func(opts ...rlock.Option) (*rlock.Client, *readGate) {
		GinkgoHelper()
		g := &readGate{}
		c, _ := spectest.ClientWith(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ReadTimeout: 20 * time.Second, Dialer: g.dial}, opts...)
		return c, g
	}

	// lateBy runs call while stop holds its reply back, at least late from
	// before call began, then lets it through with resume, and returns
	// call's error.
	lateBy := func(stop, resume func(), call func() error) error {
		GinkgoHelper()
		stop()
		began := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			close(began)
			done <- call()
		}()
		<-began
		Consistently(done).WithTimeout(late).WithPolling(50*time.Millisecond).ShouldNot(Receive(), "answered while held back")
		resume()
		var err error
		Eventually(done).WithTimeout(15 * time.Second).Should(Receive(&err))
		GinkgoWriter.Printf("late call: %v\n", err)
		return err
	}
	// stopped runs call with the server stopped (Redis runs it late).
	stopped := func(call func() error) error {
		GinkgoHelper()
		return lateBy(func() { Expect(srv.Pause()).To(Succeed()) }, func() { Expect(srv.Resume()).To(Succeed()) }, call)
	}
	// heldBack runs call with its reply held back by g (Redis runs it in
	// time).
	heldBack := func(g *readGate, call func() error) error {
		GinkgoHelper()
		return lateBy(g.hold, g.release, call)
	}

	// warm takes and gives back a lock made by mk on c, with Extend too
	// when it has one, so that the server has the scripts (an EVALSHA
	// answered NOSCRIPT would be sent again after the stop) and the Client
	// keeps a connection: the late call goes out at once.
	warm := func(c *rlock.Client, name string, mk func(*rlock.Client, string) rlock.Locker) {
		GinkgoHelper()
		w := ctxowner.New(ctx)
		l := mk(c, name+":warm")
		Expect(l.TryLock(w, 0, time.Minute)).To(BeTrue())
		Expect(l.TryLock(w, 0, time.Minute)).To(BeTrue())
		if x, ok := l.(extender); ok {
			Expect(x.Extend(w, time.Minute)).To(Succeed())
		}
		Expect(l.Unlock(w)).To(Succeed())
		Expect(l.Unlock(w)).To(Succeed())
	}

	// expectGone checks, right after the late call failed, that nothing of
	// the owner's hold is left: the looks say so, Redis has no key, and
	// another owner takes the lock at once.
	expectGone := func(l rlock.Locker, owner context.Context, other rlock.Locker, keys ...string) {
		GinkgoHelper()
		Expect(l.HoldCount(owner)).To(BeZero(), "HoldCount right after the late call")
		Expect(l.IsHeldByCurrent(owner)).To(BeFalse(), "IsHeldByCurrent right after the late call")
		Expect(raw.Exists(ctx, keys...).Val()).To(BeZero(), "the late hold was not given back")
		o := ctxowner.New(ctx)
		Expect(other.TryLock(o, 0, 0)).To(BeTrue(), "another owner could not take the lock at once")
		Expect(other.Unlock(o)).To(Succeed())
	}

	for _, kind := range []string{"Lock", "FencedLock", "FairLock", "SpinLock", "ReadLock", "WriteLock"} {
		mk := singleKeyKinds[kind]
		It("fails a LockLease of a "+kind+" that Redis confirms past its lease, and gives the lock back", func() {
			c, _ := newClient()
			name := spectest.UniqueName("late-acquire-" + kind)
			warm(c, name, mk)
			l, owner := mk(c, name), ctxowner.New(ctx)
			err := stopped(func() error { return l.LockLease(owner, lease) })
			Expect(err).To(MatchError(rlock.ErrLockLost), "the owner was told it holds a lock whose lease had run out when it knew")
			expectGone(l, owner, singleKeyKinds[otherKind(kind)](c, name), name)
		})

		It("fails a re-entry of a "+kind+" confirmed past the hold's deadline, and gives every hold back", func() {
			c, g := newClient()
			name := spectest.UniqueName("late-reentry-" + kind)
			warm(c, name, mk)
			l, owner := mk(c, name), ctxowner.New(ctx)
			Expect(l.LockLease(owner, lease)).To(Succeed())
			lctx, stop := rlock.LostContext(owner, l)
			DeferCleanup(stop)
			// Redis runs the re-entry at once: the key lives 20 s more.
			err := heldBack(g, func() error { return l.LockLease(owner, 20*time.Second) })
			Expect(err).To(MatchError(rlock.ErrLockLost), "a re-entry revived a hold lost at its deadline")
			Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
			expectGone(l, owner, singleKeyKinds[otherKind(kind)](c, name), name)
			Expect(l.Unlock(owner)).To(MatchError(rlock.ErrNotHeld), "the outer hold's Unlock")
		})
	}

	It("fails a watchdog Lock that Redis confirms past the watchdog timeout, and gives the lock back", func() {
		c, _ := newClient(rlock.WithWatchdogTimeout(lease))
		name := spectest.UniqueName("late-watchdog")
		warm(c, name, singleKeyKinds["Lock"])
		l, owner := c.NewLock(name), ctxowner.New(ctx)
		err := stopped(func() error { return l.Lock(owner) })
		Expect(err).To(MatchError(rlock.ErrLockLost))
		expectGone(l, owner, c.NewLock(name), name)
	})

	for _, kind := range []string{"Lock", "FencedLock"} {
		mk := singleKeyKinds[kind]
		It("fails an Extend of a "+kind+" that Redis confirms past the lease it sets, and gives the lock back", func() {
			c, _ := newClient()
			name := spectest.UniqueName("late-extend-" + kind)
			warm(c, name, mk)
			l, owner := mk(c, name), ctxowner.New(ctx)
			Expect(l.LockLease(owner, 20*time.Second)).To(Succeed())
			err := stopped(func() error { return l.(extender).Extend(owner, lease) })
			Expect(err).To(MatchError(rlock.ErrLockLost), "Extend said the hold lasts while its new lease had run out when it knew")
			expectGone(l, owner, mk(c, name), name)
		})
	}

	It("fails an Extend confirmed past the hold's earlier deadline, and gives the lock back", func() {
		c, g := newClient()
		name := spectest.UniqueName("late-extend-earlier")
		warm(c, name, singleKeyKinds["Lock"])
		l, owner := c.NewLock(name), ctxowner.New(ctx)
		Expect(l.LockLease(owner, lease)).To(Succeed())
		// Redis runs the Extend at once: the key lives 20 s more.
		err := heldBack(g, func() error { return l.Extend(owner, 20*time.Second) })
		Expect(err).To(MatchError(rlock.ErrLockLost), "an Extend revived a hold lost at its deadline")
		expectGone(l, owner, c.NewLock(name), name)
	})

	It("fails a MultiLock's Extend that Redis confirms past the lease it sets", func() {
		c, _ := newClient()
		name := spectest.UniqueName("late-multi-extend")
		warm(c, name, singleKeyKinds["Lock"])
		m, err := rlock.NewMultiLock(c.NewLock(name+":a"), c.NewLock(name+":b"))
		Expect(err).NotTo(HaveOccurred())
		owner := ctxowner.New(ctx)
		Expect(m.LockLease(owner, 20*time.Second)).To(Succeed())
		// One lock after the other: a's Extend is sent while the server is
		// stopped and comes back late; b's goes out after, in time.
		err = stopped(func() error { return m.Extend(owner, lease) })
		Expect(err).To(MatchError(rlock.ErrLockLost))
		Expect(m.HoldCount(owner)).To(BeZero())
		Expect(m.IsHeldByCurrent(owner)).To(BeFalse())
		Expect(raw.Exists(ctx, name+":a").Val()).To(BeZero(), "the late lock was not given back")
		// The rest stays the owner's until its Unlock, as after any Extend
		// that failed on one lock.
		Expect(m.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		Expect(raw.Exists(ctx, name+":b").Val()).To(BeZero())
	})

	It("fails a MultiLock's Extend when its first lock's new lease ran out before the last lock's Extend was confirmed", func() {
		c1, _ := newClient()
		c2, g := newClient()
		name := spectest.UniqueName("late-multi-extend-first")
		warm(c1, name+":1", singleKeyKinds["Lock"])
		warm(c2, name+":2", singleKeyKinds["Lock"])
		a, b := c1.NewLock(name+":a"), c2.NewLock(name+":b")
		m, err := rlock.NewMultiLock(a, b)
		Expect(err).NotTo(HaveOccurred())
		owner := ctxowner.New(ctx)
		Expect(m.LockLease(owner, 20*time.Second)).To(Succeed())
		// A look of the owner at b whose reply is held back: b's Extend,
		// which comes after a's, waits for it (one call of an owner on a
		// lock at a time), then goes out and is confirmed in time.
		g.hold()
		looked := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			_, err := b.HoldCount(owner)
			looked <- err
		}()
		Consistently(looked).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		err = lateBy(func() {}, g.release, func() error { return m.Extend(owner, lease) })
		Expect(err).To(MatchError(rlock.ErrLockLost), "the MultiLock's Extend said held while a's new lease had run out")
		Eventually(looked).Should(Receive(BeNil()))
		Expect(m.IsHeldByCurrent(owner)).To(BeFalse())
		_ = m.Unlock(owner)
		Expect(raw.Exists(ctx, name+":a", name+":b").Val()).To(BeZero())
	})

	It("fails a RedLock's Extend that every master confirms past the lease it sets", func() {
		c, _ := newClient()
		name := spectest.UniqueName("late-red-extend")
		warm(c, name, singleKeyKinds["Lock"])
		r, err := rlock.NewRedLock(c.NewLock(name+":1"), c.NewLock(name+":2"), c.NewLock(name+":3"))
		Expect(err).NotTo(HaveOccurred())
		// Each master's part waits out the stop (the default 200 ms would
		// make it a lost call, not a late one).
		r, err = r.With(rlock.RedLockAttemptTimeout(20 * time.Second))
		Expect(err).NotTo(HaveOccurred())
		owner := ctxowner.New(ctx)
		Expect(r.LockLease(owner, 20*time.Second)).To(Succeed())
		err = stopped(func() error { return r.Extend(owner, lease) })
		Expect(err).To(MatchError(rlock.ErrLockLost))
		Expect(r.IsHeldByCurrent(owner)).To(BeFalse())
		Expect(raw.Exists(ctx, name+":1", name+":2", name+":3").Val()).To(BeZero())
	})

	It("fails a MultiLock acquisition whose first lock's lease ran out while the second was awaited, and holds neither", func() {
		c, _ := newClient()
		name := spectest.UniqueName("late-multi")
		a, b := c.NewLock(name+":a"), c.NewLock(name+":b")
		m, err := rlock.NewMultiLock(a, b)
		Expect(err).NotTo(HaveOccurred())
		other := ctxowner.New(ctx)
		Expect(b.LockLease(other, time.Minute)).To(Succeed())
		owner := ctxowner.New(ctx)
		err = lateBy(func() {}, func() { Expect(b.Unlock(other)).To(Succeed()) },
			func() error { return m.LockLease(owner, lease) })
		Expect(err).To(MatchError(rlock.ErrLockLost), "the MultiLock said held while its first lock's lease had run out")
		Expect(m.IsHeldByCurrent(owner)).To(BeFalse())
		Expect(raw.Exists(ctx, name+":a", name+":b").Val()).To(BeZero(), "a lock of the failed MultiLock stayed held")
	})

	It("fails an AcquireKept that Redis confirms past the watchdog timeout, and gives the permit back", func() {
		c, _ := newClient(rlock.WithWatchdogTimeout(lease))
		name := spectest.UniqueName("late-kept")
		sem := c.NewPermitExpirableSemaphore(name)
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		warmed, err := sem.AcquireKept(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(warmed.Release(ctx)).To(Succeed())
		var k *rlock.KeptPermit
		err = stopped(func() error {
			var err error
			k, _, err = sem.TryAcquireKept(ctx, 0)
			return err
		})
		Expect(err).To(MatchError(rlock.ErrLockLost), "a permit was handed out whose lease had run out when it was known")
		Expect(k).To(BeNil())
		Expect(sem.AvailablePermits(ctx)).To(Equal(1), "the late permit was not given back")
	})

	It("hands a woken waiter's wake on when its acquisition is confirmed late: the next waiter of its Client gets the lock at once", func() {
		c, g := newClient()
		hc, _ := newClient()
		name := spectest.UniqueName("late-woken")
		warm(c, name, singleKeyKinds["Lock"])
		holder := ctxowner.New(ctx)
		// The holder's lease outlasts the spec: a waiter that is not woken
		// waits for it.
		Expect(hc.NewLock(name).LockLease(holder, time.Minute)).To(Succeed())
		l := c.NewLock(name)
		wait := func(owner context.Context) <-chan error {
			done := make(chan error, 1)
			go func() {
				defer GinkgoRecover()
				done <- l.LockLease(owner, lease)
			}()
			return done
		}
		blocked := func() int { return rlock.BlockedWaiters(c, spectest.LockChannel(name)) }
		w1, w2 := ctxowner.New(ctx), ctxowner.New(ctx)
		first := wait(w1)
		Eventually(blocked).WithTimeout(5 * time.Second).Should(Equal(1))
		second := wait(w2)
		// The second queues behind the first (rlock's queue pause, 100 ms),
		// then makes its attempt and blocks until woken.
		Consistently(second).WithTimeout(time.Second).ShouldNot(Receive())
		Eventually(blocked).WithTimeout(5 * time.Second).Should(Equal(2))
		// The holder's unlock wakes the first waiter, blocked longest; its
		// attempt takes the lock, but the reply is held back past its lease.
		err := lateBy(g.hold, g.release, func() error {
			Expect(hc.NewLock(name).Unlock(holder)).To(Succeed())
			return <-first
		})
		Expect(err).To(MatchError(rlock.ErrLockLost))
		// Redis had let the late hold expire (no unlock message): only the
		// wake the first waiter handed on tells the second to try.
		var err2 error
		Eventually(second).WithTimeout(5*time.Second).Should(Receive(&err2), "the second waiter was not woken")
		Expect(err2).NotTo(HaveOccurred())
		Expect(l.IsHeldByCurrent(w2)).To(BeTrue())
		Expect(l.Unlock(w2)).To(Succeed())
	})
})

// readGate holds back what the connections it dialled read, while held: a
// reply reaches the Client only once released (a process paused between
// its send and its read). A read already blocked when the gate is held is
// not held back.
type readGate struct {
	mu   sync.Mutex
	shut chan struct{} // nil: open; closed by release
}

func (g *readGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut == nil {
		g.shut = make(chan struct{})
	}
}

func (g *readGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}

func (g *readGate) wait() {
	g.mu.Lock()
	ch := g.shut
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// dial is a go-redis Dialer whose connections g gates.
func (g *readGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: conn, g: g}, nil
}

// gatedConn is a connection whose reads wait for its gate. It passes the
// socket on (syscall.Conn), so that go-redis and the Client check it
// before reuse as they do a plain one.
type gatedConn struct {
	net.Conn
	g *readGate
}

func (c *gatedConn) Read(b []byte) (int, error) {
	c.g.wait()
	return c.Conn.Read(b)
}

func (c *gatedConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}
