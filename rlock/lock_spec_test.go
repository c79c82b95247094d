package rlock_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

var _ = Describe("RLock", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	Describe("mutual exclusion", func() {
		It("keeps a read-modify-write counter exact across 2 Clients x 8 owners", func() {
			const perOwner = 25
			name := spectest.UniqueName("counter-lock")
			clients := []*rlock.Client{e.Client(), e.Client()}
			var wg sync.WaitGroup
			errs := make(chan error, 16*perOwner)
			for _, c := range clients {
				for range 8 {
					wg.Add(1)
					go func(lock *rlock.Lock) {
						defer GinkgoRecover()
						defer wg.Done()
						ctx := context.Background() // goroutine owner
						for range perOwner {
							if err := lock.Lock(ctx); err != nil {
								errs <- err
								return
							}
							v, err := e.Raw.Get(ctx, "counter").Int()
							if err != nil && !errors.Is(err, redis.Nil) {
								errs <- err
							}
							if err := e.Raw.Set(ctx, "counter", v+1, 0).Err(); err != nil {
								errs <- err
							}
							if err := lock.Unlock(ctx); err != nil {
								errs <- err
							}
						}
					}(c.NewLock(name))
				}
			}
			spectest.WaitAll(&wg)
			close(errs)
			Expect(errs).To(BeEmpty())
			Expect(e.Raw.Get(ctx, "counter").Int()).To(Equal(2 * 8 * perOwner))
			Expect(e.Raw.Exists(ctx, name).Val()).To(BeZero())
		})
	})

	Describe("reentrancy", func() {
		It("counts holds 3 deep and releases on the last unlock", func() {
			lock := e.Client().NewLock("reentrant")
			for i := 1; i <= 3; i++ {
				Expect(lock.Lock(ctx)).To(Succeed())
				Expect(lock.HoldCount(ctx)).To(Equal(i))
				Expect(lock).To(rlocktest.HaveTotalHoldCount(i))
			}
			Expect(lock).To(rlocktest.BeHeldBy(ctx))
			Expect(lock).To(rlocktest.HaveTTLWithin(30 * time.Second))
			for i := 2; i >= 0; i-- {
				Expect(lock.Unlock(ctx)).To(Succeed())
				Expect(lock.HoldCount(ctx)).To(Equal(i))
				Expect(lock).To(rlocktest.HaveTotalHoldCount(i))
				Expect(lock.IsLocked(ctx)).To(Equal(i > 0))
			}
			Expect(lock).NotTo(rlocktest.BeLocked())
			Expect(lock.Unlock(ctx)).To(MatchError(rlock.ErrNotHeld))
		})

		It("keeps a fixed lease on re-entry and re-applies it on partial unlock", func() {
			lock := e.Client().NewLock("reentrant-lease")
			Expect(lock.LockLease(ctx, 5*time.Second)).To(Succeed())
			Expect(lock.LockLease(ctx, 5*time.Second)).To(Succeed())
			Expect(lock.Unlock(ctx)).To(Succeed())
			Expect(lock.RemainTTL(ctx)).To(And(BeNumerically(">", 4*time.Second), BeNumerically("<=", 5*time.Second)))
			Expect(lock.Unlock(ctx)).To(Succeed())
			Expect(lock.RemainTTL(ctx)).To(BeZero())
		})
	})

	Describe("owners", func() {
		It("refuses an unlock by a non-owner and changes nothing", func() {
			c := e.Client()
			lock := c.NewLock("owned")
			owner := ctxowner.New(ctx)
			Expect(lock.Lock(owner)).To(Succeed())

			err := lock.Unlock(ctxowner.New(ctx))
			Expect(err).To(MatchError(rlock.ErrNotHeld))
			var lerr *rlock.Error
			Expect(errors.As(err, &lerr)).To(BeTrue())
			Expect(lerr.Op).To(Equal("unlock"))
			Expect(lerr.Lock).To(Equal("owned"))

			// The same owner id through another Client is another owner.
			id, _ := ctxowner.From(owner)
			Expect(e.Client().NewLock("owned").Unlock(ctxowner.WithID(ctx, id))).To(MatchError(rlock.ErrNotHeld))
			Expect(lock.HoldCount(owner)).To(Equal(1))
			Expect(e.Raw.HGetAll(ctx, "owned").Val()).To(HaveLen(1))
			Expect(lock.Unlock(owner)).To(Succeed())
		})

		It("lets a context owner cross goroutines", func() {
			lock := e.Client().NewLock("ctx-owner")
			owner := ctxowner.New(ctx)
			Expect(lock.Lock(owner)).To(Succeed())
			done := make(chan error)
			go func() {
				if n, err := lock.HoldCount(owner); err != nil || n != 1 {
					done <- errors.New("another goroutine of the owner should see its hold")
					return
				}
				done <- lock.Unlock(owner)
			}()
			Eventually(done).Should(Receive(BeNil()))
			Expect(lock).NotTo(rlocktest.BeLocked())
		})

		It("does not let a goroutine owner cross goroutines", func() {
			lock := e.Client().NewLock("goroutine-owner")
			Expect(lock.Lock(ctx)).To(Succeed()) // this goroutine owns it
			done := make(chan error)
			go func() {
				if ok, err := lock.TryLock(ctx, 0, 0); ok || err != nil {
					done <- errors.New("another goroutine must not re-enter")
					return
				}
				done <- lock.Unlock(ctx)
			}()
			Eventually(done).Should(Receive(MatchError(rlock.ErrNotHeld)))
			Expect(lock.HoldCount(ctx)).To(Equal(1))
			Expect(lock.Unlock(ctx)).To(Succeed())
		})
	})

	Describe("the Redis layout", func() {
		It("is Redisson's: a hash with field <client id>:<owner> = count, a 30 s PTTL, and the unlock message on the lock channel", func() {
			c := e.Client()
			name := "order:42"
			lock := c.NewLock(name)
			owner := ctxowner.WithID(ctx, "7")

			sub := e.Raw.Subscribe(ctx, "redisson_lock__channel:{order:42}")
			DeferCleanup(sub.Close)
			_, err := sub.Receive(ctx) // the subscription confirmation
			Expect(err).NotTo(HaveOccurred())

			Expect(lock.Lock(owner)).To(Succeed())
			Expect(e.Raw.Keys(ctx, "*").Val()).To(ConsistOf(name), "an uncontended acquisition writes the lock hash and nothing else")
			Expect(e.Raw.Type(ctx, name).Val()).To(Equal("hash"))
			field := c.ID() + ":" + ctxowner.ContextPrefix + "7"
			Expect(e.Raw.HGetAll(ctx, name).Val()).To(Equal(map[string]string{field: "1"}))
			Expect(c.ID()).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`))
			Expect(e.Raw.PTTL(ctx, name).Val()).To(And(BeNumerically(">", 29*time.Second), BeNumerically("<=", 30*time.Second)))

			Expect(lock.Lock(owner)).To(Succeed())
			Expect(e.Raw.HGet(ctx, name, field).Val()).To(Equal("2"))
			Expect(lock.Unlock(owner)).To(Succeed())
			Expect(lock.Unlock(owner)).To(Succeed())
			msg, err := sub.ReceiveMessage(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(msg.Channel).To(Equal("redisson_lock__channel:{order:42}"))
			Expect(msg.Payload).To(Equal("0"))
			Expect(e.Raw.Keys(ctx, "*").Val()).To(BeEmpty(), "the release writes no unlock latch")
		})

		It("uses a goroutine owner's number as the owner id", func() {
			c := e.Client()
			lock := c.NewLock("goroutine-field")
			Expect(lock.Lock(ctx)).To(Succeed())
			id := ctxowner.Of(ctx)
			_, err := strconv.ParseUint(id, 10, 64)
			Expect(err).NotTo(HaveOccurred(), "a goroutine owner is the goroutine's number, as Redisson's is the thread id")
			Expect(e.Raw.HGetAll(ctx, "goroutine-field").Val()).To(Equal(map[string]string{c.ID() + ":" + id: "1"}))
			Expect(lock.Unlock(ctx)).To(Succeed())
		})

		It("publishes to a lock name with a hash tag on the tagged channel", func() {
			sub := e.Raw.Subscribe(ctx, "redisson_lock__channel:{user}:1")
			DeferCleanup(sub.Close)
			_, err := sub.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			lock := e.Client().NewLock("{user}:1")
			Expect(lock.Lock(ctx)).To(Succeed())
			Expect(lock.Unlock(ctx)).To(Succeed())
			msg, err := sub.ReceiveMessage(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(msg.Payload).To(Equal("0"))
		})

		It("runs its scripts by EVALSHA and falls back to EVAL after SCRIPT FLUSH", func() {
			Expect(e.Raw.ScriptFlush(ctx).Err()).To(Succeed())
			Expect(e.Raw.ConfigResetStat(ctx).Err()).To(Succeed())
			lock := e.Client().NewLock("after-flush")
			Expect(lock.Lock(ctx)).To(Succeed())
			Expect(lock.Unlock(ctx)).To(Succeed())
			calls := e.CommandCalls()
			Expect(calls["eval"]).To(Equal(2), "one EVAL fallback per script")
			Expect(calls["evalsha"]).To(Equal(2), "EVALSHA is tried first")
		})
	})

	Describe("leases", func() {
		It("keeps a 1.5 s watchdog lease alive for 5 s and frees it on unlock", Label("slow"), func() {
			c := e.Client(rlock.WithWatchdogTimeout(1500 * time.Millisecond))
			lock := c.NewLock("watchdog")
			Expect(lock.Lock(ctx)).To(Succeed())
			Consistently(func() time.Duration {
				return e.Raw.PTTL(ctx, "watchdog").Val()
			}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(BeNumerically(">", 400*time.Millisecond))
			Expect(lock.Unlock(ctx)).To(Succeed())
			Expect(lock).NotTo(rlocktest.BeLocked())
		})

		It("renews, on a server whose script cache was flushed, without a NOSCRIPT fallback per lock", Label("slow"), func() {
			// The first renewal loads its script in the same pipeline; else
			// every lease's call fails with NOSCRIPT and is sent again with
			// the script's source (a second round trip).
			c := e.Client(rlock.WithWatchdogTimeout(3 * time.Second))
			locks := make([]*rlock.Lock, 20)
			for i := range locks {
				locks[i] = c.NewLock("flushed:" + strconv.Itoa(i))
				Expect(locks[i].Lock(ctx)).To(Succeed())
			}
			Expect(e.Raw.ScriptFlush(ctx).Err()).To(Succeed())
			Expect(e.Raw.ConfigResetStat(ctx).Err()).To(Succeed())
			Eventually(func() int { return e.CommandCalls()["evalsha"] }).WithTimeout(5 * time.Second).Should(BeNumerically(">=", len(locks)))
			calls := e.CommandCalls()
			Expect(calls["eval"]).To(BeZero(), "renewal scripts sent again with their source")
			Expect(calls["script|load"]).To(BeNumerically(">=", 1))
			for _, l := range locks {
				Expect(l.RemainTTL(ctx)).To(BeNumerically(">", 2*time.Second))
				Expect(l.Unlock(ctx)).To(Succeed())
			}
		})

		It("does not renew a fixed lease", Label("slow"), func() {
			c := e.Client(rlock.WithWatchdogTimeout(time.Second))
			lock := c.NewLock("fixed")
			Expect(lock.LockLease(ctx, 1500*time.Millisecond)).To(Succeed())
			Expect(lock.RemainTTL(ctx)).To(BeNumerically(">", time.Second))
			Eventually(func() (bool, error) { return lock.IsLocked(ctx) }).
				WithTimeout(3 * time.Second).Should(BeFalse())
			Expect(lock.Unlock(ctx)).To(MatchError(rlock.ErrNotHeld))
		})

		It("frees the locks of a Client closed without unlocking within one watchdog timeout", Label("slow"), func() {
			c := e.Client(rlock.WithWatchdogTimeout(1500 * time.Millisecond))
			lock := c.NewLock("orphan")
			Expect(lock.Lock(ctx)).To(Succeed())
			closed := time.Now()
			Expect(c.Close()).To(Succeed())
			Eventually(func() int64 { return e.Raw.Exists(ctx, "orphan").Val() }).
				WithTimeout(2 * time.Second).WithPolling(20 * time.Millisecond).Should(BeZero())
			Expect(time.Since(closed)).To(BeNumerically("<=", 1600*time.Millisecond))
			Expect(c.Close()).To(Succeed(), "a second Close is a no-op")
			Expect(lock.Lock(ctx)).To(MatchError(rlock.ErrClosed))
		})

		It("signals the holder when its lock is lost", Label("slow"), func() {
			c := e.Client(rlock.WithWatchdogTimeout(time.Second))
			lock := c.NewLock("lost")
			Expect(lock.Lock(ctx)).To(Succeed())
			lctx, stop := rlock.LostContext(ctx, lock)
			DeferCleanup(stop)
			Consistently(lctx.Done()).WithTimeout(1500*time.Millisecond).ShouldNot(BeClosed(), "kept alive across renewals")

			Expect(e.Client().NewLock("lost").ForceUnlock(ctx)).To(BeTrue())
			Eventually(lctx.Done()).WithTimeout(2 * time.Second).Should(BeClosed())
			Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
			Expect(lock.Unlock(ctx)).To(MatchError(rlock.ErrNotHeld))
		})
	})

	Describe("waiting", func() {
		// waitFor starts a Lock by a fresh owner in a goroutine and returns
		// its owner context and the channel of its result.
		waitFor := func(lock *rlock.Lock, wctx context.Context) (context.Context, chan error) {
			owner := ctxowner.New(wctx)
			done := make(chan error, 1)
			go func() { done <- lock.Lock(owner) }()
			return owner, done
		}

		It("sleeps on the unlock channel, with a few script calls in 2 s, and wakes on Unlock", Label("slow"), func() {
			holder := e.Client().NewLock("wake")
			waiter := e.Client().NewLock("wake")
			Expect(holder.Lock(ctx)).To(Succeed())
			owner, done := waitFor(waiter, ctx)
			Eventually(func() int64 { return e.NumSub(spectest.LockChannel("wake")) }).Should(BeEquivalentTo(1))
			Expect(e.Raw.ConfigResetStat(ctx).Err()).To(Succeed())

			Consistently(done).WithTimeout(2 * time.Second).ShouldNot(Receive())
			calls := e.CommandCalls()
			Expect(calls["evalsha"] + calls["eval"]).To(BeNumerically("<=", 1))

			Expect(holder.Unlock(ctx)).To(Succeed())
			Eventually(done).WithTimeout(time.Second).Should(Receive(BeNil()))
			Expect(waiter.HoldCount(owner)).To(Equal(1))
			Expect(waiter.Unlock(owner)).To(Succeed())
		})

		It("wakes on ForceUnlock", func() {
			holder := e.Client().NewLock("force")
			waiter := e.Client().NewLock("force")
			Expect(holder.Lock(ctx)).To(Succeed())
			owner, done := waitFor(waiter, ctx)
			Eventually(func() int64 { return e.NumSub(spectest.LockChannel("force")) }).Should(BeEquivalentTo(1))
			Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())

			Expect(waiter.ForceUnlock(ctx)).To(BeTrue())
			Eventually(done).WithTimeout(time.Second).Should(Receive(BeNil()))
			Expect(waiter.IsHeldByCurrent(owner)).To(BeTrue())
			Expect(holder.Unlock(ctx)).To(MatchError(rlock.ErrNotHeld))
			Expect(waiter.ForceUnlock(ctx)).To(BeTrue())
			Expect(waiter.ForceUnlock(ctx)).To(BeFalse())
		})

		It("tries again once subscribed when the unlock came while it was subscribing", Label("slow"), func() {
			// The waiter reaches Redis through a relay that delays every
			// chunk by 150 ms: its first attempt fails, and the unlock is
			// published before its SUBSCRIBE can arrive. Only the attempt it
			// makes once the subscription is confirmed can tell it the lock
			// is free; without that attempt it sleeps out the holder's TTL.
			proxy := spectest.StartProxy()
			proxy.SetLatency(150 * time.Millisecond)
			wc, _ := spectest.ClientWith(&redis.Options{Addr: proxy.Addr})
			holder := e.Client().NewLock("subscribing")
			Expect(holder.Lock(ctx)).To(Succeed())
			before := e.CommandCalls()["evalsha"]
			owner, done := waitFor(wc.NewLock("subscribing"), ctx)
			Eventually(func() int { return e.CommandCalls()["evalsha"] }).WithTimeout(5 * time.Second).WithPolling(time.Millisecond).Should(BeNumerically(">", before))
			Expect(e.NumSub(spectest.LockChannel("subscribing"))).To(BeZero(), "the waiter subscribed before the unlock: the race was not staged")
			Expect(holder.Unlock(ctx)).To(Succeed())
			Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
			Expect(wc.NewLock("subscribing").Unlock(owner)).To(Succeed())
		})

		It("shares one channel subscription among the waiters of a Client and hands the lock to each in turn", func() {
			c := e.Client()
			lock := c.NewLock("shared")
			Expect(lock.Lock(ctx)).To(Succeed())
			owners := make([]context.Context, 5)
			dones := make([]chan error, 5)
			for i := range owners {
				owners[i], dones[i] = waitFor(lock, ctx)
			}
			Eventually(func() int64 { return e.NumSub(spectest.LockChannel("shared")) }).Should(BeEquivalentTo(1))
			Consistently(func() int64 { return e.NumSub(spectest.LockChannel("shared")) }).
				WithTimeout(300 * time.Millisecond).Should(BeEquivalentTo(1))
			Expect(lock.Unlock(ctx)).To(Succeed())
			for range owners {
				// Exactly one waiter holds it at a time; it passes the lock on.
				var got int = -1
				Eventually(func() int {
					for i, d := range dones {
						select {
						case err := <-d:
							Expect(err).NotTo(HaveOccurred())
							got = i
							return i
						default:
						}
					}
					return -1
				}).WithTimeout(2 * time.Second).ShouldNot(Equal(-1))
				Expect(e.Raw.HLen(ctx, "shared").Val()).To(BeEquivalentTo(1))
				Expect(lock.Unlock(owners[got])).To(Succeed())
			}
		})

		It("returns false when TryLock's wait runs out, and the error of a cancelled ctx, leaving no subscription and no lock", Label("slow"), func() {
			c := e.Client()
			holder := e.Client().NewLock("cancel")
			Expect(holder.Lock(ctx)).To(Succeed())
			lock := c.NewLock("cancel")

			start := time.Now()
			ok, err := lock.TryLock(ctxowner.New(ctx), 300*time.Millisecond, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse())
			Expect(time.Since(start)).To(BeNumerically(">=", 300*time.Millisecond))

			cctx, cancel := context.WithCancel(ctx)
			var dones []chan error
			for range 4 {
				_, d := waitFor(lock, cctx)
				dones = append(dones, d)
			}
			Eventually(func() int64 { return e.NumSub(spectest.LockChannel("cancel")) }).Should(BeEquivalentTo(1))
			cancel()
			for _, d := range dones {
				Eventually(d).Should(Receive(MatchError(context.Canceled)))
			}
			dctx, dcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer dcancel()
			Expect(lock.Lock(ctxowner.New(dctx))).To(MatchError(context.DeadlineExceeded))

			Eventually(func() int64 { return e.NumSub(spectest.LockChannel("cancel")) }).WithTimeout(3 * time.Second).Should(BeZero())
			Expect(holder.Unlock(ctx)).To(Succeed())
			Consistently(func() int64 { return e.Raw.Exists(ctx, "cancel").Val() }).
				WithTimeout(300 * time.Millisecond).Should(BeZero())
		})

		It("unsubscribes after the default linger once the last waiter left", Label("slow"), func() {
			c := e.Client()
			holder := e.Client().NewLock("linger")
			Expect(holder.Lock(ctx)).To(Succeed())
			ok, err := c.NewLock("linger").TryLock(ctxowner.New(ctx), 100*time.Millisecond, 0)
			Expect(ok, err).To(BeFalse())
			Expect(e.NumSub(spectest.LockChannel("linger"))).To(BeEquivalentTo(1))
			Eventually(func() int64 { return e.NumSub(spectest.LockChannel("linger")) }).
				WithTimeout(3 * time.Second).Should(BeZero())
			Expect(holder.Unlock(ctx)).To(Succeed())
		})

		It("returns ErrClosed to waiters when their Client closes", func() {
			c := e.Client()
			holder := e.Client().NewLock("closing")
			Expect(holder.Lock(ctx)).To(Succeed())
			_, done := waitFor(c.NewLock("closing"), ctx)
			Eventually(func() int64 { return e.NumSub(spectest.LockChannel("closing")) }).Should(BeEquivalentTo(1))
			Expect(c.Close()).To(Succeed())
			Eventually(done).Should(Receive(MatchError(rlock.ErrClosed)))
			Expect(holder.Unlock(ctx)).To(Succeed())
		})
	})

	Describe("bad input", func() {
		It("rejects a nil Redis client, bad options, empty names and nil contexts with ErrInvalidArgument", func() {
			_, err := rlock.NewClient(nil)
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))
			_, err = rlock.NewClient(e.RDB(), rlock.WithWatchdogTimeout(0))
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))
			_, err = rlock.NewClient(e.RDB(), rlock.WithWatchdogTimeout(-time.Second))
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))
			_, err = rlock.NewClient(e.RDB(), rlock.WithClientID(""))
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))
			_, err = rlock.NewClient(e.RDB(), nil)
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))

			c := e.Client()
			empty := c.NewLock("")
			Expect(empty.Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
			_, err = empty.TryLock(ctx, 0, 0)
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))
			Expect(empty.Unlock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
			_, err = empty.ForceUnlock(ctx)
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))

			lock := c.NewLock("bad-input")
			//lint:ignore SA1012 a nil context is the bad input under test
			Expect(lock.Lock(nil)).To(MatchError(rlock.ErrInvalidArgument)) //nolint:staticcheck
			Expect(lock.LockLease(ctx, 500*time.Microsecond)).To(MatchError(rlock.ErrInvalidArgument))
			var nilLock *rlock.Lock
			Expect(nilLock.Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
			Expect(e.Raw.DBSize(ctx).Val()).To(BeZero(), "nothing was written")
		})

		It("wraps errors with the operation and the lock name", func() {
			err := e.Client().NewLock("wrapped").Unlock(ctx)
			Expect(err).To(MatchError(rlock.ErrNotHeld))
			Expect(err.Error()).To(And(ContainSubstring("unlock"), ContainSubstring(`"wrapped"`)))
		})
	})
})
