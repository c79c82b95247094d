package goredisson_test

import (
	"context"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("FairLock", func() {
	var (
		e   *env
		ctx context.Context
	)
	BeforeEach(func() {
		e = newEnv()
		ctx = context.Background()
	})

	// serverMillis returns the Redis server's clock in ms, the clock of the
	// waiter timeouts.
	serverMillis := func() int64 {
		t, err := e.raw.Time(ctx).Result()
		Expect(err).NotTo(HaveOccurred())
		return t.UnixMilli()
	}
	queue := func(name string) []string { return e.raw.LRange(ctx, rlock.QueueKey(name), 0, -1).Val() }

	It("keeps a counter exact across 2 Clients x 8 owners", func() {
		n := guardCounter(e, 20, func(c *rlock.Client) rlock.Locker { return c.NewFairLock("fair-counter") })
		Expect(n).To(Equal(320))
		Expect(e.raw.Exists(ctx, "fair-counter", rlock.QueueKey("fair-counter"), rlock.TimeoutKey("fair-counter")).Val()).To(BeZero())
	})

	It("grants 20 queued waiters the lock in the order they asked, waking each on its own channel", func() {
		const name, n = "fair-fifo", 20
		c := e.client()
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
			Eventually(func() int64 { return e.numSub(rlock.FairChannelName(name, fields[i])) }).Should(BeEquivalentTo(1))
		}

		// Redisson's layout: a list of fields in arrival order and a sorted
		// set of their timeouts, each about one waiter timeout ahead.
		Expect(e.raw.Type(ctx, rlock.QueueKey(name)).Val()).To(Equal("list"))
		Expect(e.raw.Type(ctx, rlock.TimeoutKey(name)).Val()).To(Equal("zset"))
		Expect(rlock.QueueKey(name)).To(Equal("redisson_lock_queue:{fair-fifo}"))
		Expect(rlock.TimeoutKey(name)).To(Equal("redisson_lock_timeout:{fair-fifo}"))
		Expect(rlock.FairChannelName(name, fields[0])).To(Equal("redisson_lock__channel:{fair-fifo}:" + fields[0]))
		now := serverMillis()
		for _, f := range fields {
			score := e.raw.ZScore(ctx, rlock.TimeoutKey(name), f).Val()
			Expect(score).To(BeNumerically("~", float64(now+rlock.DefaultFairWaiterTimeout.Milliseconds()), 2000))
		}

		// The head's channel carries the unlock message; nobody else's does.
		sub := e.raw.Subscribe(ctx, rlock.FairChannelName(name, fields[0]), rlock.FairChannelName(name, fields[1]))
		DeferCleanup(sub.Close)
		_, err := sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = sub.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())

		Expect(e.raw.ConfigResetStat(ctx).Err()).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		waitAll(&wg)

		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		Expect(order).To(Equal(want))
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		msg, err := sub.ReceiveMessage(rctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(msg.Channel).To(Equal(rlock.FairChannelName(name, fields[0])))
		Expect(msg.Payload).To(Equal(rlock.UnlockMessage))

		// One acquire and one release per waiter, plus at most a few
		// heartbeats: each unlock woke one waiter, not the whole queue
		// (which would cost about n*n/2 more attempts).
		calls := e.commandCalls()
		Expect(calls["evalsha"] + calls["eval"]).To(BeNumerically("<=", 2*n+1+10))
		Expect(e.raw.Exists(ctx, name, rlock.QueueKey(name), rlock.TimeoutKey(name)).Val()).To(BeZero())
	})

	It("keeps a live waiter's place however long the holder holds", func() {
		const name = "fair-long-hold"
		c := e.client(rlock.WithFairWaiterTimeout(150 * time.Millisecond))
		lock := c.NewFairLock(name)
		Expect(lock.Lock(ctx)).To(Succeed())
		first, second := ctxowner.New(ctx), ctxowner.New(ctx)
		got := make(chan string, 2)
		go func() {
			if lock.Lock(first) == nil {
				got <- "first"
				_ = lock.Unlock(first)
			}
		}()
		Eventually(func() int { return len(queue(name)) }).Should(Equal(1))
		go func() {
			if lock.Lock(second) == nil {
				got <- "second"
				_ = lock.Unlock(second)
			}
		}()
		Eventually(func() int { return len(queue(name)) }).Should(Equal(2))
		// Many waiter timeouts pass; the heartbeats keep both queued.
		Consistently(func() []string { return queue(name) }).WithTimeout(time.Second).
			Should(Equal([]string{c.ID() + ":" + ctxowner.Of(first), c.ID() + ":" + ctxowner.Of(second)}))
		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(got).Should(Receive(Equal("first")))
		Eventually(got).Should(Receive(Equal("second")))
	})

	It("purges a waiter whose process was killed once its timeout passes", func() {
		const name = "fair-killed"
		const timeout = 600 * time.Millisecond
		c := e.client(rlock.WithFairWaiterTimeout(timeout))
		lock := c.NewFairLock(name)
		Expect(lock.Lock(ctx)).To(Succeed())

		dead := startHelper("fair-waiter", "HELPER_LOCK="+name, "HELPER_WAITER_TIMEOUT_MS="+strconv.Itoa(int(timeout.Milliseconds())))
		Eventually(func() []string { return queue(name) }).WithTimeout(5 * time.Second).Should(Equal([]string{dead.Field}))
		live := ctxowner.New(ctx)
		got := make(chan int64, 1)
		go func() {
			if lock.Lock(live) == nil {
				got <- serverMillis()
				_ = lock.Unlock(live)
			}
		}()
		Eventually(func() int { return len(queue(name)) }).Should(Equal(2))

		dead.Kill()
		deadline := int64(e.raw.ZScore(ctx, rlock.TimeoutKey(name), dead.Field).Val())
		// The unlock wakes the head, which is dead: the live waiter keeps
		// its turn behind it until the dead one's timeout passes, and then
		// gets the lock within one heartbeat (a third of the timeout).
		Expect(lock.Unlock(ctx)).To(Succeed())
		var at int64
		Eventually(got).WithTimeout(3 * time.Second).Should(Receive(&at))
		Expect(at).To(BeNumerically(">=", deadline-5))
		Expect(at).To(BeNumerically("<=", deadline+timeout.Milliseconds()/3+300))
		Eventually(func() int64 {
			return e.raw.Exists(ctx, name, rlock.QueueKey(name), rlock.TimeoutKey(name)).Val()
		}).Should(BeZero())
	})

	It("drops a cancelled or timed-out waiter from the queue at once and lets the next one move up", func() {
		const name = "fair-cancel"
		c := e.client()
		lock := c.NewFairLock(name)
		Expect(lock.Lock(ctx)).To(Succeed())

		cctx, cancel := context.WithCancel(ctxowner.New(ctx))
		cancelled := make(chan error, 1)
		go func() { cancelled <- lock.Lock(cctx) }()
		Eventually(func() int { return len(queue(name)) }).Should(Equal(1))
		next := ctxowner.New(ctx)
		got := make(chan error, 1)
		go func() { got <- lock.Lock(next) }()
		Eventually(func() int { return len(queue(name)) }).Should(Equal(2))

		cancel()
		Eventually(cancelled).Should(Receive(MatchError(context.Canceled)))
		Eventually(func() []string { return queue(name) }).WithTimeout(500 * time.Millisecond).
			Should(Equal([]string{c.ID() + ":" + ctxowner.Of(next)}))

		// A wait that runs out leaves the queue before TryLock returns.
		ok, err := lock.TryLock(ctxowner.New(ctx), 100*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse())
		Expect(queue(name)).To(Equal([]string{c.ID() + ":" + ctxowner.Of(next)}))

		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(got).Should(Receive(BeNil()))
		Expect(lock.HoldCount(next)).To(Equal(1))
		Expect(lock.Unlock(next)).To(Succeed())
	})

	It("wakes the next waiter when the head gives up while the lock is free", func() {
		// A Redisson client queued first and then went quiet: its entry (as
		// Redisson writes it) blocks the free lock until it is removed.
		const name = "fair-head-gone"
		javaField := "8d8f5a8e-0000-4000-8000-000000000000:57"
		Expect(e.raw.RPush(ctx, rlock.QueueKey(name), javaField).Err()).To(Succeed())
		Expect(e.raw.ZAdd(ctx, rlock.TimeoutKey(name), redis.Z{Score: float64(serverMillis() + 60_000), Member: javaField}).Err()).To(Succeed())

		c := e.client()
		lock := c.NewFairLock(name)
		// A single attempt neither jumps the queue nor joins it.
		ok, err := lock.TryLock(ctxowner.New(ctx), 0, 0)
		Expect(ok, err).To(BeFalse())
		Expect(queue(name)).To(Equal([]string{javaField}))

		owner := ctxowner.New(ctx)
		got := make(chan error, 1)
		go func() { got <- lock.Lock(owner) }()
		Eventually(func() int { return len(queue(name)) }).Should(Equal(2))
		Consistently(got).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())

		// Redisson's dequeue of that waiter is what fair_dequeue.lua does.
		keys := []string{name, rlock.QueueKey(name), rlock.TimeoutKey(name), rlock.ChannelName(name)}
		src := rlock.Scripts()["fair_dequeue"].Source
		Expect(e.raw.Eval(ctx, src, keys, javaField, rlock.UnlockMessage, "publish").Int()).To(Equal(1))
		Eventually(got).WithTimeout(time.Second).Should(Receive(BeNil()))
		Expect(lock.Unlock(owner)).To(Succeed())
	})

	It("is reentrant, keeps the RLock hash and signals loss on a force unlock", func() {
		const name = "order:fair"
		c := e.client(rlock.WithWatchdogTimeout(300 * time.Millisecond))
		lock := c.NewFairLock(name)
		owner := ctxowner.WithID(ctx, "3")
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock.LockLease(owner, time.Minute)).To(Succeed())
		Expect(lock.HoldCount(owner)).To(Equal(2))
		Expect(e.raw.HGetAll(ctx, name).Val()).To(Equal(map[string]string{c.ID() + ":ctx:3": "2"}))
		Expect(e.raw.PTTL(ctx, name).Val()).To(BeNumerically(">", 59*time.Second))
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))

		Expect(lock.Lock(owner)).To(Succeed())
		lctx, stop := lock.LostContext(owner)
		DeferCleanup(stop)
		Expect(lock.ForceUnlock(ctx)).To(BeTrue())
		Eventually(lctx.Done()).Should(BeClosed())
		Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
		Expect(lock.ForceUnlock(ctx)).To(BeFalse())
	})

	It("rejects bad input and changes nothing in Redis", func() {
		_, err := rlock.NewClient(e.rdb(), rlock.WithFairWaiterTimeout(10*time.Millisecond))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		c := e.client()
		Expect(c.NewFairLock("").Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		_, err = c.NewFairLock("fair-bad").TryLock(ctx, time.Second, time.Microsecond)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		var nilLock *rlock.FairLock
		Expect(nilLock.Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(nilLock.Unlock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.raw.DBSize(ctx).Val()).To(BeZero())
	})
})
