package goredisson_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("on Redis Cluster with WithRedissonVersion (3 masters, 3 replicas)", Ordered, Label("cluster"), func() {
	var cluster *redistest.Cluster
	ctx := context.Background()
	sharedCluster(&cluster)

	It("publishes and listens classic, as Redisson before 3.22.0 always does, though the Cluster has sharded pub/sub", func() {
		tag := tagInSlot(200)
		name := tag + ":v321"
		channel := "redisson_lock__channel:" + name
		opt := rlock.WithRedissonVersion("3.21.3")
		holder, waiter := clusterClients(cluster, 1, opt)[0], clusterClients(cluster, 1, opt)[0]
		lock := holder.NewLock(name)
		Expect(lock.LockLease(ctx, 30*time.Second)).To(Succeed())
		done := make(chan error, 1)
		go func() {
			owner := ctxowner.New(ctx)
			l := waiter.NewLock(name)
			err := l.Lock(owner)
			if err == nil {
				err = l.Unlock(owner)
			}
			done <- err
		}()
		subs := func(count func(c *redis.Client) int64) int64 {
			var n int64
			for _, s := range cluster.Nodes {
				c := s.Client()
				n += count(c)
				_ = c.Close()
			}
			return n
		}
		// The waiter listens with SUBSCRIBE (a Redisson 3.21 waiter would), not SSUBSCRIBE.
		Eventually(func() int64 {
			return subs(func(c *redis.Client) int64 { return c.PubSubNumSub(ctx, channel).Val()[channel] })
		}).WithTimeout(5 * time.Second).Should(BeEquivalentTo(1))
		Expect(subs(func(c *redis.Client) int64 { return c.PubSubShardNumSub(ctx, channel).Val()[channel] })).To(BeZero())
		// The unlock PUBLISHes, which a Redisson 3.21 waiter hears, and wakes the waiter at once.
		for _, s := range cluster.Nodes {
			c := s.Client()
			Expect(c.ConfigResetStat(ctx).Err()).To(Succeed())
			_ = c.Close()
		}
		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(done).WithTimeout(2 * time.Second).Should(Receive(BeNil()))
		stats := ""
		for _, s := range cluster.Nodes {
			c := s.Client()
			stats += c.Info(ctx, "commandstats").Val()
			_ = c.Close()
		}
		Expect(stats).To(MatchRegexp(`cmdstat_publish:calls=[1-9]`))
		Expect(stats).NotTo(ContainSubstring("cmdstat_spublish:"))
	})
})
