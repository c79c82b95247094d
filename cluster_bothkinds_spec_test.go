package goredisson_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/rlock"
)

// Both kinds of pub/sub on a Cluster: what WithRedissonVersion 3.22.0 to
// 3.27.x (or WithPubSubMode(PubSubBoth)) does, for a fleet whose Redisson
// clients each chose sharded or classic pub/sub at their start. The Java
// side of either kind is played by hand: its unlock deletes the lock and
// publishes "0" with PUBLISH or SPUBLISH, its waiter listens with
// SUBSCRIBE or SSUBSCRIBE (interop/ runs the real Redisson, opt-in).
var _ = Describe("on Redis Cluster with both kinds of pub/sub (3 masters, 3 replicas)", Ordered, Label("cluster"), func() {
	var cluster *redistest.Cluster
	ctx := context.Background()
	sharedCluster(&cluster)

	// subs counts the subscriptions to channel on every node, classic and
	// sharded.
	subs := func(channel string) func() [2]int64 {
		return func() [2]int64 {
			var n [2]int64
			for _, s := range cluster.Nodes {
				c := s.Client()
				n[0] += c.PubSubNumSub(ctx, channel).Val()[channel]
				n[1] += c.PubSubShardNumSub(ctx, channel).Val()[channel]
				_ = c.Close()
			}
			return n
		}
	}
	// master is a client of the master of channel's slot.
	master := func(channel string) *redis.Client {
		GinkgoHelper()
		owner, err := cluster.Owner(ctx, pubsub.Slot(channel))
		Expect(err).NotTo(HaveOccurred())
		c := redis.NewClient(&redis.Options{Addr: owner.Addr})
		DeferCleanup(c.Close)
		return c
	}
	// waitFor starts l.Lock for a fresh owner; the channel gets its error
	// once the lock is held (and released again, unless keep).
	waitFor := func(l *rlock.Lock, keep bool) chan error {
		done := make(chan error, 1)
		go func() {
			owner := ctxowner.New(ctx)
			err := l.Lock(owner)
			if err == nil && !keep {
				err = l.Unlock(owner)
			}
			done <- err
		}()
		return done
	}

	It("takes WithRedissonVersion 3.22.0 to 3.27.x and listens and publishes both ways; 3.28 and later are AUTO", func() {
		for i, v := range []string{"3.22.0", "3.24.3", "3.26.1", "3.27.2", "3.28.0", "3.29.0"} {
			both := i < 4
			name := tagInSlot(300+i) + ":" + v
			channel := "redisson_lock__channel:" + name
			holder := clusterClients(cluster, 1, rlock.WithRedissonVersion(v))[0]
			waiter := clusterClients(cluster, 1, rlock.WithRedissonVersion(v))[0]
			lock := holder.NewLock(name)
			Expect(lock.LockLease(ctx, 30*time.Second)).To(Succeed())
			done := waitFor(waiter.NewLock(name), false)
			want := [2]int64{0, 1} // sharded (AUTO on Redis 7)
			if both {
				want = [2]int64{1, 1}
			}
			Eventually(subs(channel)).WithTimeout(5*time.Second).Should(Equal(want), v)
			m := master(channel)
			if both {
				// Both on the slot's master: its twin messages come next
				// to each other on one connection.
				Expect(m.PubSubNumSub(ctx, channel).Val()[channel]).To(BeEquivalentTo(1), v)
			}
			Expect(m.ConfigResetStat(ctx).Err()).To(Succeed())
			Expect(lock.Unlock(ctx)).To(Succeed())
			Eventually(done).WithTimeout(2*time.Second).Should(Receive(BeNil()), v)
			stats := m.Info(ctx, "commandstats").Val()
			Expect(stats).To(MatchRegexp(`cmdstat_spublish:calls=[1-9]`), v)
			if both {
				Expect(stats).To(MatchRegexp(`cmdstat_publish:calls=[1-9]`), v)
			} else {
				Expect(stats).NotTo(ContainSubstring("cmdstat_publish:"), v)
			}
		}
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		// An explicit mode wins over the release's default.
		for _, opt := range []rlock.Option{rlock.WithShardedPubSub(true), rlock.WithShardedPubSub(false), rlock.WithPubSubMode(rlock.PubSubSharded)} {
			c, err := rlock.NewClient(cc, rlock.WithRedissonVersion("3.24.3"), opt)
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Close()).To(Succeed())
		}
		_, err := rlock.NewClient(cc, rlock.WithPubSubMode(rlock.PubSubMode(9)))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})

	It("wakes its waiter for a Java unlock of either kind, and its unlock reaches Java waiters of both kinds", func() {
		g := clusterClients(cluster, 1, rlock.WithRedissonVersion("3.27.2"))[0]
		for i, kind := range []string{"publish", "spublish"} {
			name := tagInSlot(400+i) + ":java-" + kind
			channel := "redisson_lock__channel:" + name
			m := master(channel)
			// "Java" holds it: Redisson's hash, field <uuid>:<thread>.
			Expect(m.HSet(ctx, name, "7a3f:1", 1).Err()).To(Succeed())
			Expect(m.PExpire(ctx, name, 30*time.Second).Err()).To(Succeed())
			done := waitFor(g.NewLock(name), false)
			Eventually(subs(channel)).WithTimeout(5 * time.Second).Should(Equal([2]int64{1, 1}))
			time.Sleep(100 * time.Millisecond) // the waiter is asleep
			start := time.Now()
			Expect(m.Eval(ctx, fmt.Sprintf("redis.call('del', KEYS[1]); return redis.call('%s', KEYS[2], '0')", kind),
				[]string{name, channel}).Err()).To(Succeed())
			Eventually(done).WithTimeout(2*time.Second).Should(Receive(BeNil()), kind)
			AddReportEntry("Go waiter woken by a Java "+kind, time.Since(start).String())
		}

		// Java waiters of both kinds hear one Go unlock.
		name := tagInSlot(402) + ":go-unlocks"
		channel := "redisson_lock__channel:" + name
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		classic := cc.Subscribe(ctx, channel)
		DeferCleanup(classic.Close)
		sharded := cc.SSubscribe(ctx, channel)
		DeferCleanup(sharded.Close)
		for _, ps := range []*redis.PubSub{classic, sharded} {
			_, err := ps.Receive(ctx) // the confirmation
			Expect(err).NotTo(HaveOccurred())
		}
		owner := ctxowner.New(ctx)
		lock := g.NewLock(name)
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(Succeed())
		for _, ps := range []*redis.PubSub{classic, sharded} {
			msg, err := ps.ReceiveTimeout(ctx, 2*time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(msg).To(Equal(&redis.Message{Channel: channel, Payload: "0"}))
		}
	})

	It("publishes a semaphore's release and a latch's count-down both ways, and its semaphore waiter wakes for a Java release of either kind", func() {
		g := clusterClients(cluster, 1, rlock.WithRedissonVersion("3.27.2"))[0]
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		listen := func(channel string) []*redis.PubSub {
			GinkgoHelper()
			out := []*redis.PubSub{cc.Subscribe(ctx, channel), cc.SSubscribe(ctx, channel)}
			for _, ps := range out {
				DeferCleanup(ps.Close)
				_, err := ps.Receive(ctx)
				Expect(err).NotTo(HaveOccurred())
			}
			return out
		}
		heard := func(raws []*redis.PubSub, channel, payload string) {
			GinkgoHelper()
			for i, ps := range raws {
				msg, err := ps.ReceiveTimeout(ctx, 2*time.Second)
				Expect(err).NotTo(HaveOccurred(), "subscriber %d", i)
				Expect(msg).To(Equal(&redis.Message{Channel: channel, Payload: payload}), "subscriber %d", i)
			}
		}
		sem := tagInSlot(700) + ":sem"
		semChannel := "redisson_sc:" + sem
		raws := listen(semChannel)
		s := g.NewSemaphore(sem)
		Expect(s.TrySetPermits(ctx, 0)).To(BeTrue())
		heard(raws, semChannel, "0") // trySetPermits publishes the permits, as Redisson's
		Expect(s.Release(ctx, 2)).To(Succeed())
		heard(raws, semChannel, "2")
		Expect(s.Acquire(ctx, 2)).To(Succeed())

		latch := plainNameInSlot(701, "latch")
		latchChannel := "redisson_countdownlatch__channel__{" + latch + "}"
		raws = listen(latchChannel)
		l := g.NewCountDownLatch(latch)
		Expect(l.TrySetCount(ctx, 1)).To(BeTrue())
		heard(raws, latchChannel, "1")
		Expect(l.CountDown(ctx)).To(Succeed())
		heard(raws, latchChannel, "0")

		m := master(semChannel)
		for _, kind := range []string{"publish", "spublish"} {
			done := make(chan error, 1)
			go func() { done <- s.Acquire(ctx, 1) }()
			Eventually(subs(semChannel)).WithTimeout(5*time.Second).Should(Equal([2]int64{2, 2}), kind) // the test's and the waiter's
			Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
			// A Java release of that kind: the permits, then the message.
			Expect(m.Eval(ctx, fmt.Sprintf("redis.call('incrby', KEYS[1], 1); return redis.call('%s', KEYS[2], '1')", kind),
				[]string{sem, semChannel}).Err()).To(Succeed())
			Eventually(done).WithTimeout(2*time.Second).Should(Receive(BeNil()), kind)
		}
	})

	It("wakes one waiter per Client for each unlock published with both kinds (one attempt each)", func() {
		name := tagInSlot(500) + ":one"
		channel := "redisson_lock__channel:" + name
		m := master(channel)
		holder := clusterClients(cluster, 1, rlock.WithPubSubMode(rlock.PubSubBoth))[0]
		waiter := clusterClients(cluster, 1, rlock.WithPubSubMode(rlock.PubSubBoth))[0]
		owner := ctxowner.New(ctx)
		Expect(holder.NewLock(name).LockLease(owner, 30*time.Second)).To(Succeed())
		var dones []chan error
		for range 3 {
			dones = append(dones, waitFor(waiter.NewLock(name), true))
		}
		Eventually(subs(channel)).WithTimeout(5 * time.Second).Should(Equal([2]int64{1, 1}))
		time.Sleep(300 * time.Millisecond) // all three asleep
		for round := range 3 {
			Expect(m.ConfigResetStat(ctx).Err()).To(Succeed())
			Expect(holder.NewLock(name).Unlock(owner)).To(Succeed())
			// One waiter takes the lock; the others sleep on (a second
			// wake would cost a second acquire script).
			var got int
			Eventually(func() int {
				for i, d := range dones {
					select {
					case err := <-d:
						Expect(err).NotTo(HaveOccurred())
						dones = append(dones[:i], dones[i+1:]...)
						got++
						return got
					default:
					}
				}
				return got
			}).WithTimeout(2 * time.Second).Should(Equal(1))
			time.Sleep(300 * time.Millisecond)
			calls := scriptCallsOf(m)
			Expect(calls).To(Equal(2), "round %d: the release and one acquire, not %d scripts", round, calls)
			// The holder is now the woken waiter's owner; the test takes
			// the lock over for the next round.
			Expect(m.Del(ctx, name).Err()).To(Succeed())
			Expect(holder.NewLock(name).LockLease(owner, 30*time.Second)).To(Succeed())
		}
		Expect(holder.NewLock(name).Unlock(owner)).To(Succeed())
	})

	It("follows a migration of the slot with both subscriptions, and leaves none on the old master", func() {
		name := tagInSlot(600) + ":moves"
		channel := "redisson_lock__channel:" + name
		slot := pubsub.Slot(channel)
		holder := clusterClients(cluster, 1, rlock.WithPubSubMode(rlock.PubSubBoth))[0]
		waiter := clusterClients(cluster, 1, rlock.WithPubSubMode(rlock.PubSubBoth))[0]
		owner := ctxowner.New(ctx)
		lock := holder.NewLock(name)
		Expect(lock.LockLease(owner, 30*time.Second)).To(Succeed())
		done := waitFor(waiter.NewLock(name), false)
		Eventually(subs(channel)).WithTimeout(5 * time.Second).Should(Equal([2]int64{1, 1}))
		from, err := cluster.Owner(ctx, slot)
		Expect(err).NotTo(HaveOccurred())
		masters, err := cluster.Masters(ctx)
		Expect(err).NotTo(HaveOccurred())
		var to redistest.NodeInfo
		for _, n := range masters {
			if n.ID != from.ID {
				to = n
				break
			}
		}
		// A waiter on another slot of the same master keeps the old
		// connection open: the channel's classic half must leave it too.
		var stay string
		for i := 0; stay == ""; i++ {
			if t := fmt.Sprintf("{s%d}", i); pubsub.Slot(t) != slot && from.Serves(pubsub.Slot(t)) {
				stay = t + ":stays"
			}
		}
		Expect(holder.NewLock(stay).LockLease(owner, 30*time.Second)).To(Succeed())
		stayDone := waitFor(waiter.NewLock(stay), false)
		Eventually(subs("redisson_lock__channel:" + stay)).WithTimeout(5 * time.Second).Should(Equal([2]int64{1, 1}))
		Expect(cluster.MigrateSlot(ctx, slot, to.Addr)).To(Succeed())
		DeferCleanup(func() { _ = cluster.MigrateSlot(ctx, slot, from.Addr) })
		onNode := func(addr string) func() [2]int64 {
			return func() [2]int64 {
				c := redis.NewClient(&redis.Options{Addr: addr})
				defer c.Close()
				return [2]int64{c.PubSubNumSub(ctx, channel).Val()[channel], c.PubSubShardNumSub(ctx, channel).Val()[channel]}
			}
		}
		Eventually(onNode(to.Addr)).WithTimeout(10 * time.Second).Should(Equal([2]int64{1, 1}))
		Eventually(onNode(from.Addr)).WithTimeout(5 * time.Second).Should(Equal([2]int64{0, 0}))
		Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		Expect(lock.Unlock(owner)).To(Succeed())
		Eventually(done).WithTimeout(2 * time.Second).Should(Receive(BeNil()))
		Expect(holder.NewLock(stay).Unlock(owner)).To(Succeed())
		Eventually(stayDone).WithTimeout(2 * time.Second).Should(Receive(BeNil()))
	})
})

// scriptCallsOf returns the EVALSHA and EVAL calls rdb's server has served
// since its stats were reset (INFO commandstats).
func scriptCallsOf(rdb *redis.Client) int {
	GinkgoHelper()
	info := rdb.Info(context.Background(), "commandstats").Val()
	var n int
	for _, cmd := range []string{"evalsha", "eval"} {
		var calls int
		if _, rest, ok := strings.Cut(info, "cmdstat_"+cmd+":calls="); ok {
			_, _ = fmt.Sscanf(rest, "%d", &calls)
		}
		n += calls
	}
	return n
}
