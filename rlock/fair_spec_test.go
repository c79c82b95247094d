package rlock_test

import (
	"context"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("FairLock", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// Redisson's names for a fair lock without braces in its name.
	queueKey := func(name string) string { return "redisson_lock_queue:{" + name + "}" }
	timeoutKey := func(name string) string { return "redisson_lock_timeout:{" + name + "}" }
	waiterChannel := func(name, field string) string { return "redisson_lock__channel:{" + name + "}:" + field }
	queue := func(name string) []string { return e.Raw.LRange(ctx, queueKey(name), 0, -1).Val() }
	score := func(name, field string) int64 { return int64(e.Raw.ZScore(ctx, timeoutKey(name), field).Val()) }
	// serverMillis returns the Redis server's clock in ms, the clock of the
	// waiter timeouts.
	serverMillis := func() int64 {
		t, err := e.Raw.Time(ctx).Result()
		Expect(err).NotTo(HaveOccurred())
		return t.UnixMilli()
	}
	// queueUp starts Lock by a fresh owner once the previous waiters are
	// queued, and returns the owner, its field and its result.
	queueUp := func(c *rlock.Client, lock *rlock.FairLock, before int) (context.Context, string, chan error) {
		owner := ctxowner.New(ctx)
		done := make(chan error, 1)
		go func() { done <- lock.Lock(owner) }()
		field := c.ID() + ":" + ctxowner.Of(owner)
		Eventually(func() int { return len(queue(lock.Name())) }).Should(Equal(before + 1))
		Expect(queue(lock.Name())[before]).To(Equal(field))
		return owner, field, done
	}

	It("keeps a counter exact across 2 Clients x 8 owners", func() {
		n := guardCounter(e, 20, func(c *rlock.Client) rlock.Locker { return c.NewFairLock("fair-counter") })
		Expect(n).To(Equal(320))
		Expect(e.Raw.Exists(ctx, "fair-counter", queueKey("fair-counter"), timeoutKey("fair-counter")).Val()).To(BeZero())
	})

	It("grants 20 queued waiters the lock in the order they asked, waking each on its own channel", func() {
		const name, n = "fair-fifo", 20
		c := e.Client()
		lock := c.NewFairLock(name)
		Expect(lock.Lock(ctx)).To(Succeed())

		var (
			mu    sync.Mutex // orders the appends; the lock orders the holders
			order []int
			wg    sync.WaitGroup
		)
		fields := make([]string, n)
		for i := range n {
			owner := ctxowner.New(ctx)
			fields[i] = c.ID() + ":" + ctxowner.Of(owner)
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				Expect(lock.Lock(owner)).To(Succeed())
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				Expect(lock.Unlock(owner)).To(Succeed())
			}()
			// The next waiter asks only once this one is queued and
			// listening on its own channel.
			Eventually(func() []string { return queue(name) }).Should(Equal(fields[:i+1]))
			Eventually(func() int64 { return e.NumSub(waiterChannel(name, fields[i])) }).Should(BeEquivalentTo(1))
		}

		// Redisson's layout: a list of fields in arrival order and a sorted
		// set of timeouts chained as Redisson chains them: the first is the
		// lock's PTTL + threadWaitTime (5 minutes by default) from when it
		// queued, every later one exactly threadWaitTime after the one ahead.
		Expect(e.Raw.Type(ctx, queueKey(name)).Val()).To(Equal("list"))
		Expect(e.Raw.Type(ctx, timeoutKey(name)).Val()).To(Equal("zset"))
		Expect(score(name, fields[0])).To(BeNumerically("~", serverMillis()+(30*time.Second+5*time.Minute).Milliseconds(), 5000))
		for i := 1; i < n; i++ {
			Expect(score(name, fields[i]) - score(name, fields[i-1])).To(Equal((5 * time.Minute).Milliseconds()))
		}

		// The head's channel carries the unlock message; nobody else's does.
		sub := e.Raw.Subscribe(ctx, waiterChannel(name, fields[0]), waiterChannel(name, fields[1]))
		DeferCleanup(sub.Close)
		_, err := sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())

		Expect(e.Raw.ConfigResetStat(ctx).Err()).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		spectest.WaitAll(&wg)

		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		Expect(order).To(Equal(want))
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		msg, err := sub.ReceiveMessage(rctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(msg.Channel).To(Equal(waiterChannel(name, fields[0])))
		Expect(msg.Payload).To(Equal("0"))

		// One acquire and one release per waiter: each unlock woke one
		// waiter, not the whole queue (which would cost about n*n/2 more
		// attempts).
		calls := e.CommandCalls()
		Expect(calls["evalsha"] + calls["eval"]).To(BeNumerically("<=", 2*n+1+5))
		Expect(e.Raw.Exists(ctx, name, queueKey(name), timeoutKey(name)).Val()).To(BeZero())
	})

	It("pulls every remaining timeout in by threadWaitTime when a waiter takes the lock from the queue, as Redisson does", func() {
		const name = "fair-decrement"
		c := e.Client()
		lock := c.NewFairLock(name)
		Expect(lock.LockLease(ctx, 20*time.Second)).To(Succeed())
		first, _, firstDone := queueUp(c, lock, 0)
		_, second, _ := queueUp(c, lock, 1)
		_, third, _ := queueUp(c, lock, 2)
		before2, before3 := score(name, second), score(name, third)
		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(firstDone).Should(Receive(BeNil()))
		wait := (5 * time.Minute).Milliseconds()
		Expect(score(name, second)).To(Equal(before2 - wait))
		Expect(score(name, third)).To(Equal(before3 - wait))
		Expect(queue(name)).To(Equal([]string{second, third}))
		Expect(lock.Unlock(first)).To(Succeed())
	})

	It("sets no expiry on the queue keys, as Redisson: a Redisson waiter queued after a goredisson one keeps its place when that one leaves", Label("slow"), func() {
		const name = "fair-no-queue-ttl"
		c := e.Client(rlock.WithFairLockWaitTimeout(time.Second))
		lock := c.NewFairLock(name)
		Expect(lock.LockLease(ctx, 10*time.Second)).To(Succeed())
		gctx, leave := context.WithCancel(ctxowner.New(ctx))
		left := make(chan error, 1)
		go func() { left <- lock.Lock(gctx) }()
		Eventually(func() int { return len(queue(name)) }).Should(Equal(1))
		Expect(e.Raw.PTTL(ctx, queueKey(name)).Val()).To(Equal(time.Duration(-1)), "the queue has no TTL")
		Expect(e.Raw.PTTL(ctx, timeoutKey(name)).Val()).To(Equal(time.Duration(-1)), "the timeouts have no TTL")
		// A Redisson waiter queues behind it as Redisson's script does (its
		// ZADD and RPUSH leave a key's TTL as it is), with Redisson's default
		// threadWaitTime of 5 minutes.
		const java = "9f1c2b7e-0000-4000-8000-000000000001:77"
		goField := queue(name)[0]
		Expect(e.Raw.ZAdd(ctx, timeoutKey(name), redis.Z{Score: float64(score(name, goField) + 300_000), Member: java}).Err()).To(Succeed())
		Expect(e.Raw.RPush(ctx, queueKey(name), java).Err()).To(Succeed())
		leave()
		Eventually(left).Should(Receive(MatchError(context.Canceled)))
		Eventually(func() []string { return queue(name) }).Should(Equal([]string{java}))
		Consistently(func() []string { return queue(name) }).WithTimeout(4*time.Second).WithPolling(100*time.Millisecond).
			Should(Equal([]string{java}), "past the goredisson waiter's own timeout, the Redisson waiter is still queued")
		Expect(lock.Unlock(ctx)).To(Succeed())
	})

	It("chains the timeouts of TryLock waiters with their own wait as threadWaitTime", func() {
		const name = "fair-trylock-wait"
		c := e.Client()
		lock := c.NewFairLock(name)
		Expect(lock.LockLease(ctx, 20*time.Second)).To(Succeed())
		fields := make([]string, 2)
		for i, wait := range []time.Duration{3 * time.Second, 7 * time.Second} {
			owner := ctxowner.New(ctx)
			fields[i] = c.ID() + ":" + ctxowner.Of(owner)
			go func() { _, _ = lock.TryLock(owner, wait, 0) }()
			Eventually(func() int { return len(queue(name)) }).Should(Equal(i + 1))
		}
		Expect(score(name, fields[0])).To(BeNumerically("~", serverMillis()+20_000+3_000, 2000))
		Expect(score(name, fields[1]) - score(name, fields[0])).To(Equal(int64(7_000)))
		Expect(lock.Unlock(ctx)).To(Succeed())
	})

	It("keeps a live waiter's place however long the holder holds, where Redisson would purge it", Label("slow"), func() {
		const name = "fair-long-hold"
		// threadWaitTime 1 s: with Redisson's arithmetic alone, the head's
		// timeout passes about 3 s after it queued and it is purged.
		c := e.Client(rlock.WithFairLockWaitTimeout(time.Second))
		lock := c.NewFairLock(name)
		holder := ctxowner.New(ctx)
		Expect(lock.LockLease(holder, 2*time.Second)).To(Succeed())
		// The holder keeps the lock by re-entering with a fresh 2 s lease.
		stopKeeping := every(200*time.Millisecond, func() {
			_ = lock.LockLease(holder, 2*time.Second)
			_ = lock.Unlock(holder)
		})
		firstOwner, first, firstDone := queueUp(c, lock, 0)
		secondOwner, second, secondDone := queueUp(c, lock, 1)
		_, third, thirdDone := queueUp(c, lock, 2)
		Consistently(func() []string { return queue(name) }).WithTimeout(5*time.Second).WithPolling(50*time.Millisecond).
			Should(Equal([]string{first, second, third}), "several timeouts pass; each attempt of a live waiter refreshes its own")
		stopKeeping()
		Expect(lock.Unlock(holder)).To(Succeed())
		Eventually(firstDone).WithTimeout(3 * time.Second).Should(Receive(BeNil()))

		// The acquisition from the queue pulled the others in by
		// threadWaitTime; a refreshed timeout must survive that: each
		// waiter's refresh counts its place in the queue, as the chain does.
		now := serverMillis()
		Expect(score(name, second)).To(BeNumerically(">", now), "the new head's timeout after the pull-in")
		Expect(score(name, third)).To(BeNumerically(">", score(name, second)), "the chain keeps its order")
		Consistently(func() []string { return queue(name) }).WithTimeout(1500*time.Millisecond).WithPolling(50*time.Millisecond).
			Should(Equal([]string{second, third}), "the first holds longer than threadWaitTime; neither waiter is purged")
		Expect(lock.Unlock(firstOwner)).To(Succeed())
		Eventually(secondDone).WithTimeout(3 * time.Second).Should(Receive(BeNil()))
		Consistently(thirdDone).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		Expect(lock.Unlock(secondOwner)).To(Succeed())
		Eventually(thirdDone).WithTimeout(3 * time.Second).Should(Receive(BeNil()))
	})

	It("purges a waiter whose process was killed once its timeout passes", Label("slow"), func() {
		const name = "fair-killed"
		const wait = time.Second
		c := e.Client(rlock.WithFairLockWaitTimeout(wait))
		lock := c.NewFairLock(name)
		holder := ctxowner.New(ctx)
		Expect(lock.LockLease(holder, 2*time.Second)).To(Succeed())
		// A waiter's timeout is the lock's TTL when it queues plus the
		// wait: the 2 s lease keeps the dead one's short. The helper process
		// may take seconds to start on a loaded machine: the lease is
		// extended until the unlock, so that the waiters find it held.
		stopKeeping := every(300*time.Millisecond, func() { _ = lock.Extend(holder, 2*time.Second) })

		dead := spectest.StartHelper("fair-waiter", "HELPER_LOCK="+name, "HELPER_FAIR_WAIT_MS="+strconv.Itoa(int(wait.Milliseconds())))
		Eventually(func() []string { return queue(name) }).WithTimeout(20 * time.Second).Should(Equal([]string{dead.Field}))
		live := ctxowner.New(ctx)
		got := make(chan int64, 1)
		go func() {
			if lock.Lock(live) == nil {
				got <- serverMillis()
				_ = lock.Unlock(live)
			}
		}()
		Eventually(func() int { return len(queue(name)) }).WithTimeout(10 * time.Second).Should(Equal(2))

		dead.Kill()
		deadline := score(name, dead.Field)
		// The unlock wakes the head, which is dead: the live waiter keeps
		// its turn behind it until the dead one's timeout passes, and then
		// gets the lock within about one heartbeat.
		stopKeeping()
		Expect(lock.Unlock(holder)).To(Succeed())
		var at int64
		Eventually(got).WithTimeout(5 * time.Second).Should(Receive(&at))
		Expect(at).To(BeNumerically(">=", deadline-5))
		// Within about one heartbeat (a third of the wait) of the dead
		// one's timeout, and the scheduling delays of a loaded machine.
		Expect(at).To(BeNumerically("<=", deadline+wait.Milliseconds()/3+1500))
		Eventually(func() int64 {
			return e.Raw.Exists(ctx, name, queueKey(name), timeoutKey(name)).Val()
		}).Should(BeZero())
	})

	It("drops a cancelled or timed-out waiter from the queue at once and lets the next one move up", func() {
		const name = "fair-cancel"
		c := e.Client()
		lock := c.NewFairLock(name)
		Expect(lock.Lock(ctx)).To(Succeed())

		cctx, cancel := context.WithCancel(ctxowner.New(ctx))
		cancelled := make(chan error, 1)
		go func() { cancelled <- lock.Lock(cctx) }()
		Eventually(func() int { return len(queue(name)) }).Should(Equal(1))
		next, nextField, got := queueUp(c, lock, 1)
		behind := score(name, nextField)

		cancel()
		Eventually(cancelled).Should(Receive(MatchError(context.Canceled)))
		Eventually(func() []string { return queue(name) }).WithTimeout(time.Second).Should(Equal([]string{nextField}))
		Expect(score(name, nextField)).To(Equal(behind-(5*time.Minute).Milliseconds()),
			"as Redisson's acquireFailed, a waiter that gives up pulls in those behind it")

		// A wait that runs out leaves the queue before TryLock returns.
		ok, err := lock.TryLock(ctxowner.New(ctx), 100*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse())
		Expect(queue(name)).To(Equal([]string{nextField}))

		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(got).Should(Receive(BeNil()))
		Expect(lock.HoldCount(next)).To(Equal(1))
		Expect(lock.Unlock(next)).To(Succeed())
	})

	It("neither jumps the queue nor joins it on a single attempt", func() {
		// A Redisson client queued, as Redisson writes its entry.
		const name = "fair-single"
		javaField := "8d8f5a8e-0000-4000-8000-000000000000:57"
		Expect(e.Raw.RPush(ctx, queueKey(name), javaField).Err()).To(Succeed())
		Expect(e.Raw.ZAdd(ctx, timeoutKey(name), redis.Z{Score: float64(serverMillis() + 60_000), Member: javaField}).Err()).To(Succeed())
		lock := e.Client().NewFairLock(name)
		for _, wait := range []time.Duration{0, -1} {
			ok, err := lock.TryLock(ctxowner.New(ctx), wait, 0)
			Expect(ok, err).To(BeFalse())
			Expect(queue(name)).To(Equal([]string{javaField}))
		}
		Expect(e.Raw.Exists(ctx, name).Val()).To(BeZero())
	})

	It("is reentrant, keeps the RLock hash and signals loss on a force unlock", func() {
		const name = "order:fair"
		c := e.Client(rlock.WithWatchdogTimeout(time.Second))
		lock := c.NewFairLock(name)
		owner := ctxowner.WithID(ctx, "3")
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock.LockLease(owner, time.Minute)).To(Succeed())
		Expect(lock.HoldCount(owner)).To(Equal(2))
		Expect(e.Raw.HGetAll(ctx, name).Val()).To(Equal(map[string]string{c.ID() + ":ctx:3": "2"}))
		Expect(e.Raw.PTTL(ctx, name).Val()).To(BeNumerically("<=", time.Second),
			"a fixed re-entry of a watchdog-managed hold leaves it watchdog-managed (Redisson would set the minute)")
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))

		Expect(lock.Lock(owner)).To(Succeed())
		lctx, stop := rlock.LostContext(owner, lock)
		DeferCleanup(stop)
		Expect(lock.ForceUnlock(ctx)).To(BeTrue())
		Eventually(lctx.Done()).WithTimeout(2 * time.Second).Should(BeClosed())
		Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
		Expect(lock.ForceUnlock(ctx)).To(BeFalse())
	})

	It("rejects bad input and changes nothing in Redis", func() {
		_, err := rlock.NewClient(e.RDB(), rlock.WithFairLockWaitTimeout(10*time.Millisecond))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		c := e.Client()
		Expect(c.NewFairLock("").Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		_, err = c.NewFairLock("fair-bad").TryLock(ctx, time.Second, time.Microsecond)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		var nilLock *rlock.FairLock
		Expect(nilLock.Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(nilLock.Unlock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.Raw.DBSize(ctx).Val()).To(BeZero())
	})
})

// every calls f at once and then every d on a goroutine of its own until
// the returned stop is called; stop returns once f's last call ended.
func every(d time.Duration, f func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			f()
			select {
			case <-quit:
				return
			case <-time.After(d):
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
