package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/inline"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// Issue 39, items 1 and 4: a call whose reply is lost to a server stall
// (go-redis's ReadTimeout 500 ms, the server asleep in DEBUG SLEEP or
// stopped by SIGSTOP) is settled within the clean-up bound whatever comes
// next; what HoldCount, IsHeldByCurrent and IsHeldByOwner say is true at
// every look; and a call whose bytes never left (a fresh connection's
// HELLO unanswered) is reported as not run, not as of unknown outcome.
// Each spec has a redis-server of its own (the stalls would hold up the
// suite's).
var _ = Describe("issue 39: calls lost to a server stall", Label("fault", "slow"), func() {
	// readTimeout is the go-redis ReadTimeout of the Client under test:
	// short, so that a call's reply is lost while the server stalls.
	const readTimeout = 500 * time.Millisecond
	// bound is the clean-up bound (rlock's cleanupTimeout), and slack what
	// a loaded machine may add to it.
	const bound, slack = 5 * time.Second, 3 * time.Second
	var (
		ctx context.Context
		srv *redistest.Server
		raw *redis.Client
		c   *rlock.Client
	)
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(15 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		ctx = context.Background()
		var err error
		srv, err = redistest.Start(redistest.WithArgs("--enable-debug-command", "yes"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		DeferCleanup(func() { _ = srv.Resume() }) // a spec that failed while it was stopped
		raw = redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 20 * time.Second, MaxRetries: -1})
		DeferCleanup(raw.Close)
		c, _ = spectest.ClientWith(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ReadTimeout: readTimeout})
	})

	// events returns the keyspace events of key (hincrby, hset, del,
	// expired, ...), as Redis publishes them, from now on.
	events := func(key string) <-chan string {
		GinkgoHelper()
		Expect(raw.ConfigSet(ctx, "notify-keyspace-events", "KA").Err()).To(Succeed())
		sub := raw.Subscribe(ctx, "__keyspace@0__:"+key)
		DeferCleanup(sub.Close)
		_, err := sub.Receive(ctx) // confirmed
		Expect(err).NotTo(HaveOccurred())
		out := make(chan string, 100)
		msgs := sub.Channel()
		go func() {
			for m := range msgs {
				out <- m.Payload
			}
		}()
		return out
	}

	// stall has the server sleep d (DEBUG SLEEP, on a connection of its
	// own) and returns once it sleeps; the channel is closed when it woke.
	stall := func(d time.Duration) <-chan struct{} {
		GinkgoHelper()
		sleeper := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: -1, MaxRetries: -1})
		probe := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
		defer probe.Close()
		woke := make(chan struct{})
		go func() {
			defer close(woke)
			defer sleeper.Close()
			err := sleeper.Do(ctx, "debug", "sleep", strconv.FormatFloat(d.Seconds(), 'f', 3, 64)).Err()
			GinkgoWriter.Printf("DEBUG SLEEP %v: %v\n", d, err)
		}()
		DeferCleanup(func() { Eventually(woke).WithTimeout(d + 10*time.Second).Should(BeClosed()) })
		Eventually(func() error { return probe.Ping(ctx).Err() }).WithTimeout(d/2).WithPolling(10*time.Millisecond).
			Should(HaveOccurred(), "the server did not go to sleep")
		return woke
	}

	// warm makes a first acquisition and release of a lock made by mk on
	// the Client, so that the server has its scripts (an EVALSHA lost to
	// the stall would come back NOSCRIPT, not run) and the lane keeps a
	// connection: the next call goes out at once.
	warm := func(name string, mk func(*rlock.Client, string) rlock.Locker) {
		GinkgoHelper()
		w := ctxowner.New(ctx)
		l := mk(c, name+":warm")
		Expect(l.TryLock(w, 0, 0)).To(BeTrue())
		Expect(l.Unlock(w)).To(Succeed())
	}

	// scripts returns how many scripts the server ran (INFO commandstats).
	scripts := func() int {
		GinkgoHelper()
		info, err := raw.Info(ctx, "commandstats").Result()
		Expect(err).NotTo(HaveOccurred())
		n := 0
		for _, cmd := range []string{"evalsha", "eval"} {
			var calls int
			if i := strings.Index(info, "cmdstat_"+cmd+":calls="); i >= 0 {
				_, _ = fmt.Sscanf(info[i+len("cmdstat_"+cmd+":calls="):], "%d", &calls)
			}
			n += calls
		}
		return n
	}

	// lookFrom has the owner's HoldCount, IsHeldByCurrent and IsHeldByOwner
	// look at the lock, one after the other, from now until stop, which
	// returns every answer; count tells how many so far.
	type look struct {
		what string
		held bool
		err  error
	}
	lookFrom := func(l rlock.Locker, owner context.Context) (count func() int, stop func() []look) {
		var mu sync.Mutex
		var seen []look
		quit, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			for {
				select {
				case <-quit:
					return
				case <-time.After(20 * time.Millisecond): // pace the looks
				}
				lctx, cancel := context.WithTimeout(owner, 2*bound)
				n, err := l.HoldCount(lctx)
				cur, cerr := l.IsHeldByCurrent(lctx)
				by, berr := l.(ownerLooker).IsHeldByOwner(lctx, ctxowner.Of(owner))
				cancel()
				mu.Lock()
				seen = append(seen, look{"HoldCount", n > 0, err}, look{"IsHeldByCurrent", cur, cerr}, look{"IsHeldByOwner", by, berr})
				mu.Unlock()
			}
		}()
		var once sync.Once
		stop = func() []look {
			once.Do(func() { close(quit) })
			Eventually(done).WithTimeout(4 * bound).Should(BeClosed())
			mu.Lock()
			defer mu.Unlock()
			return seen
		}
		DeferCleanup(func() { stop() }) // a spec that failed before it stopped
		count = func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(seen)
		}
		return count, stop
	}
	heldLooks := func(seen []look) []look {
		var out []look
		for _, s := range seen {
			if s.held {
				out = append(out, s)
			}
		}
		return out
	}

	// loseTryLock has a new owner (an owner per request, which makes no
	// other call) try a lock made by mk once while the server sleeps 3 s: the
	// TryLock's reply is lost. It returns the lock, the owner, the lock
	// key's keyspace events, the end of the stall and when TryLock failed.
	type lostTry struct {
		name   string
		l      rlock.Locker
		owner  context.Context
		ev     <-chan string
		woke   <-chan struct{}
		failed time.Time
	}
	loseTryLock := func(prefix string, mk func(*rlock.Client, string) rlock.Locker) lostTry {
		GinkgoHelper()
		t := lostTry{name: spectest.UniqueName(prefix), owner: ctxowner.New(ctx)}
		warm(t.name, mk)
		t.ev = events(t.name)
		t.l = mk(c, t.name)
		t.woke = stall(3 * time.Second)
		ok, err := t.l.TryLock(t.owner, 0, 0)
		t.failed = time.Now()
		Expect(err).To(HaveOccurred(), "the TryLock's reply was not lost: nothing to specify")
		Expect(ok).To(BeFalse())
		GinkgoWriter.Printf("TryLock during the stall: %v\n", err)
		return t
	}

	for _, kind := range []string{"Lock", "FencedLock", "FairLock", "SpinLock", "ReadLock", "WriteLock"} {
		It("settles a lost single-attempt TryLock of a "+kind+" within the clean-up bound with no further call of its owner", func() {
			t := loseTryLock("lost-trylock", singleKeyKinds[kind])
			name, l, owner, ev, failed := t.name, t.l, t.owner, t.ev, t.failed
			Eventually(t.woke).WithTimeout(10 * time.Second).Should(BeClosed())
			// The lost acquire ran when the server woke: it took the lock
			// (hincrby, or hset for a read-write lock's mode).
			Eventually(ev).WithTimeout(5*time.Second).Should(Receive(BeElementOf("hincrby", "hset")), "the lost acquire never ran")
			// Its settle gives it back within the bound, without another call.
			Eventually(ev).WithTimeout(time.Until(failed.Add(bound+slack))).Should(Receive(Equal("del")),
				"the lock taken by the lost acquire was not given back within the clean-up bound")
			GinkgoWriter.Printf("%s: the lost hold was given back %v after TryLock failed\n", kind, time.Since(failed))
			Expect(raw.Exists(ctx, name).Val()).To(BeZero())
			Expect(l.HoldCount(owner)).To(BeZero())
			Expect(l.IsHeldByCurrent(owner)).To(BeFalse())
			Expect(l.(ownerLooker).IsHeldByOwner(ctx, ctxowner.Of(owner))).To(BeFalse())
			// Another owner takes it at once, not a lease later.
			other, o := singleKeyKinds[otherKind(kind)](c, name), ctxowner.New(ctx)
			Expect(other.TryLock(o, 0, 0)).To(BeTrue())
			Expect(other.Unlock(o)).To(Succeed())
		})
	}

	It("never says the owner of a lost single-attempt TryLock holds the lock, at any look after the error", func() {
		t := loseTryLock("lost-trylock-looks", singleKeyKinds["Lock"])
		name, ev := t.name, t.ev
		count, stopLooking := lookFrom(t.l, t.owner)
		Eventually(t.woke).WithTimeout(10 * time.Second).Should(BeClosed())
		Eventually(ev).WithTimeout(5*time.Second).Should(Receive(Equal("hincrby")), "the lost acquire never ran")
		Eventually(func() int64 { return raw.Exists(ctx, name).Val() }).WithTimeout(bound + slack).Should(BeZero())
		more := count() + 6 // two more rounds of looks with the lock free
		Eventually(count).WithTimeout(2 * bound).Should(BeNumerically(">=", more))
		all := stopLooking()
		errs := 0
		for _, s := range all {
			if s.err != nil {
				errs++
			}
		}
		GinkgoWriter.Printf("%d looks, %d of them errors\n", len(all), errs)
		Expect(len(all)).To(BeNumerically(">=", 6))
		Expect(heldLooks(all)).To(BeEmpty(), "a look said the owner holds the lock it was told it did not get")
	})

	It("tells the truth when the settle of a lost TryLock cannot reach Redis within its bound", func() {
		name := spectest.UniqueName("lost-trylock-stopped")
		warm(name, singleKeyKinds["Lock"])
		ev := events(name)
		owner := ctxowner.New(ctx)
		l := c.NewLock(name)
		Expect(srv.Pause()).To(Succeed()) // SIGSTOP: longer than the bound
		ok, err := l.TryLock(owner, 0, 0)
		Expect(err).To(HaveOccurred())
		Expect(ok).To(BeFalse())
		// A look while Redis is still stopped, past the settle's bound,
		// cannot know: it fails; it never says held.
		lctx, cancel := context.WithTimeout(owner, bound+2*time.Second)
		n, err := l.HoldCount(lctx)
		cancel()
		GinkgoWriter.Printf("HoldCount with Redis stopped: %d, %v\n", n, err)
		Expect(n).To(BeZero())
		Expect(err).To(HaveOccurred())
		Expect(srv.Resume()).To(Succeed())
		// The lost acquire runs now, after its settle gave up: the lock is
		// taken in Redis for the owner that was told it failed.
		Eventually(ev).WithTimeout(5*time.Second).Should(Receive(Equal("hincrby")), "the lost acquire never ran")
		Expect(raw.HLen(ctx, name).Val()).To(Equal(int64(1)))
		// Looks settle it first: they say what is true.
		Expect(l.IsHeldByOwner(ctx, ctxowner.Of(owner))).To(BeFalse())
		Expect(l.IsHeldByCurrent(owner)).To(BeFalse())
		Expect(l.HoldCount(owner)).To(BeZero())
		Expect(raw.Exists(ctx, name).Val()).To(BeZero(), "the kept settle gave the lost hold back")
	})

	It("settles an Unlock whose reply is lost to a stall within its bound and reports it done", func() {
		name := spectest.UniqueName("lost-unlock")
		warm(name, singleKeyKinds["Lock"])
		owner := ctxowner.New(ctx)
		l := c.NewLock(name)
		Expect(l.Lock(owner)).To(Succeed())
		woke := stall(3 * time.Second)
		start := time.Now()
		err := l.Unlock(owner)
		GinkgoWriter.Printf("Unlock during the stall: %v after %v\n", err, time.Since(start))
		Expect(err).NotTo(HaveOccurred(), "the release took effect within the bound: the Unlock says so")
		Eventually(woke).WithTimeout(10 * time.Second).Should(BeClosed())
		Expect(raw.Exists(ctx, name).Val()).To(BeZero())
		Expect(l.HoldCount(owner)).To(BeZero())
	})

	It("reports an Unlock that never went out (its connection's HELLO unanswered) as failed, not of unknown outcome", func() {
		name := spectest.UniqueName("unsent-unlock")
		warm(name, singleKeyKinds["Lock"])
		owner := ctxowner.New(ctx)
		l := c.NewLock(name)
		// A fixed lease: no renewal runs a script meanwhile.
		Expect(l.LockLease(owner, time.Minute)).To(Succeed())
		// The lane's kept connection goes: the release needs a new one,
		// whose HELLO the stopped server never answers. The lane finds it
		// closed once it sat idle inline.PeekIdle (it checks it then; a
		// call sooner would go out on it, and fail with no reply read).
		Expect(raw.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err()).To(Succeed())
		time.Sleep(inline.PeekIdle)
		ran := scripts()
		Expect(srv.Pause()).To(Succeed())
		err := l.Unlock(owner)
		Expect(srv.Resume()).To(Succeed())
		GinkgoWriter.Printf("Unlock with its connection's set-up unanswered: %v\n", err)
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, rlock.ErrUnknownOutcome)).To(BeFalse(), "no release was sent: %v", err)
		Consistently(scripts).WithTimeout(time.Second).Should(Equal(ran), "a script ran: the release was sent")
		Expect(raw.HLen(ctx, name).Val()).To(Equal(int64(1)), "the lock is still held, as the Unlock said")
		// The owner's next call settles the failed release first.
		Expect(l.HoldCount(owner)).To(BeZero())
		Expect(raw.Exists(ctx, name).Val()).To(BeZero())
	})
})

// ownerLooker is what every single-key lock has besides Locker: Redisson's
// isHeldByThread.
type ownerLooker interface {
	IsHeldByOwner(ctx context.Context, owner string) (bool, error)
}
