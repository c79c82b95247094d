package rlock_test

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("Listen and the expiry calls on a Redis Cluster", Label("cluster"), func() {
	It("hear each key's events from the master of its slot, and expire a fair lock's keys in one slot", func() {
		cl, err := redistest.StartCluster(3, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cl.Close)
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
		DeferCleanup(rdb.Close)
		ctx := ctxowner.New(context.Background())
		Expect(rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return m.ConfigSet(ctx, "notify-keyspace-events", "Egx").Err()
		})).To(Succeed())
		c, err := rlock.NewClient(rdb)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)

		// Names spread over the slots of all three masters.
		masters := map[string]bool{}
		for i := range 6 {
			name := "cl-listen:" + strconv.Itoa(i)
			node, err := rdb.MasterForKey(ctx, name)
			Expect(err).NotTo(HaveOccurred())
			masters[node.Options().Addr] = true

			lock := c.NewLock(name)
			events := make(chan rlock.KeyEvent, 4)
			stop, err := lock.Listen(ctx, func(ev rlock.KeyEvent) { events <- ev })
			Expect(err).NotTo(HaveOccurred())
			Expect(lock.Lock(ctx)).To(Succeed())
			Expect(lock.Unlock(ctx)).To(Succeed())
			Eventually(events).WithTimeout(5*time.Second).Should(Receive(Equal(rlock.KeyEvent{Name: name})), name)
			stop()
		}
		Expect(masters).To(HaveLen(3), "the names covered every master")

		fair := c.NewFairLock("{cl-fair}:1")
		for _, k := range []string{"{cl-fair}:1", "redisson_lock_queue:{cl-fair}:1", "redisson_lock_timeout:{cl-fair}:1"} {
			Expect(rdb.Set(ctx, k, "1", 0).Err()).To(Succeed())
		}
		Expect(fair.ExpireIf(ctx, rlock.IfNotSet, time.Now().Add(time.Hour))).To(BeTrue())
		Expect(rdb.PTTL(ctx, "redisson_lock_timeout:{cl-fair}:1").Val()).To(BeNumerically(">", 59*time.Minute))
		Expect(fair.ExpireTime(ctx)).To(BeTemporally("~", time.Now().Add(time.Hour), time.Minute))
	})
})
