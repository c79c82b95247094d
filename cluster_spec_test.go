package goredisson_test

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/spectest"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("on Redis Cluster (3 masters, 3 replicas)", Ordered, Label("cluster"), func() {
	var (
		cluster *redistest.Cluster
		ctx     context.Context
	)
	BeforeAll(func() {
		var err error
		cluster, err = redistest.StartCluster(3, 1)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Close)
	})
	BeforeEach(func() {
		ctx = context.Background()
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
	})
	clusterClient := func(opts ...rlock.Option) *rlock.Client {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		c, err := rlock.NewClient(cc, opts...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close() })
		return c
	}

	// Every lock type: a holder on one Client, a waiter on another (its
	// subscription on whatever node go-redis picked); the unlock wakes the
	// waiter at once, not after the 30 s lease.
	type maker func(c *rlock.Client, name string) rlock.Locker
	types := map[string]maker{
		"Lock":       func(c *rlock.Client, n string) rlock.Locker { return c.NewLock(n) },
		"FairLock":   func(c *rlock.Client, n string) rlock.Locker { return c.NewFairLock(n) },
		"FencedLock": func(c *rlock.Client, n string) rlock.Locker { return c.NewFencedLock(n) },
		"WriteLock":  func(c *rlock.Client, n string) rlock.Locker { return c.NewReadWriteLock(n).WriteLock() },
		"ReadLock after WriteLock": func(c *rlock.Client, n string) rlock.Locker {
			return c.NewReadWriteLock(n).ReadLock()
		},
	}
	handoff := func(opts ...rlock.Option) {
		holderC, waiterC := clusterClient(opts...), clusterClient(opts...)
		for kind, newLock := range types {
			for i := range 4 { // names spread over the slots of all masters
				name := kind + ":" + strconv.Itoa(i)
				holder := newLock(holderC, name)
				if kind == "ReadLock after WriteLock" {
					holder = holderC.NewReadWriteLock(name).WriteLock()
				}
				Expect(holder.Lock(ctx)).To(Succeed(), name)
				owner := ctxowner.New(ctx)
				done := make(chan error, 1)
				go func() { done <- newLock(waiterC, name).Lock(owner) }()
				Consistently(done).WithTimeout(100*time.Millisecond).ShouldNot(Receive(), name)
				Expect(holder.Unlock(ctx)).To(Succeed(), name)
				Eventually(done).WithTimeout(2*time.Second).Should(Receive(BeNil()), name)
				Expect(newLock(waiterC, name).Unlock(owner)).To(Succeed(), name)
			}
		}
	}

	It("wakes waiters connected to any node for every lock type (PUBLISH)", func() {
		handoff()
	})

	It("wakes waiters with sharded pub/sub (SPUBLISH, SSUBSCRIBE)", func() {
		handoff(rlock.WithShardedPubSub(true))
	})

	It("keeps a counter exact across 2 Clients x 4 owners and keeps each lock's keys in one slot", func() {
		c1, c2 := clusterClient(), clusterClient()
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		for _, name := range []string{"cluster-counter", "{user}:1"} {
			var lockers []rlock.Locker
			for _, c := range []*rlock.Client{c1, c2, c1, c2, c1, c2, c1, c2} {
				lockers = append(lockers, c.NewFairLock(name))
			}
			Expect(spectest.CountInside(lockers, 10)).To(Equal(80))
		}
		// pubsub.Slot, which picks a sharded subscription's node, agrees
		// with the cluster.
		for _, k := range []string{"a", "order:42", "{user}:1", "redisson_lock__channel:{x}", "foo{}{bar}"} {
			Expect(pubsub.Slot(k)).To(BeEquivalentTo(cc.ClusterKeySlot(ctx, k).Val()), k)
		}
		// Every auxiliary key shares its lock's slot (Redisson's names).
		for name, keys := range map[string][]string{
			"cluster-counter": {"redisson_lock_queue:{cluster-counter}", "redisson_lock_timeout:{cluster-counter}",
				"redisson_lock_token:{cluster-counter}", "redisson_lock__channel:{cluster-counter}", "goredisson_cancel:{cluster-counter}"},
			"{user}:1": {"redisson_lock_queue:{user}:1", "redisson_lock_timeout:{user}:1", "redisson_lock_token:{user}:1",
				"redisson_lock__channel:{user}:1", "{user}:1:c:7:rwlock_timeout:1", "goredisson_cancel:{user}:1"},
		} {
			slot := cc.ClusterKeySlot(ctx, name).Val()
			for _, k := range keys {
				Expect(cc.ClusterKeySlot(ctx, k).Val()).To(Equal(slot), k)
			}
		}
	})
})
