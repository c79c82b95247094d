package engine

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// flusherLoop is the flusher goroutine's function.
const flusherLoop = "github.com/goredisson/goredisson/internal/transport.(*batcher).loop"

// An uncontended call goes out in its caller's goroutine (issue 32 item 1):
// no flusher goroutine is started for it, so the call costs no goroutine
// hand-off; calls that queue still go through the flusher.
var _ = Describe("The inline transport", func() {
	It("sends an uncontended Lock and Unlock in the caller's goroutine, starting no flusher", func() {
		rdb := redis.NewClient(&redis.Options{Addr: specServerAddr})
		DeferCleanup(rdb.Close)
		before := gleak.Goroutines()
		c := New(rdb, testConfig())
		c.send.SetIdle(time.Hour) // a flusher, once started, stays
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l := NewHandle(c, "inline-uncontended", KindLock)
		for range 20 {
			Expect(lock(&l, ctx)).To(Succeed())
			Expect(unlock(&l, ctx)).To(Succeed())
		}
		Expect(gleak.Goroutines()).NotTo(ContainElement(gleak.IgnoringTopFunction("github.com/goredisson/goredisson/internal/transport.(*batcher).loop")), "no flusher was started")
		Expect(c.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})

	It("on a Redis Cluster, sends an uncontended call in the caller's goroutine on a lane of its node", Label("cluster"), func() {
		cl, err := redistest.StartCluster(3, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cl.Close)
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
		DeferCleanup(rdb.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		Expect(rdb.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() })).To(Succeed())
		before := gleak.Goroutines()
		c := New(rdb, testConfig())
		// Names on all three masters.
		masters := map[string]bool{}
		var locks []*Handle
		for i := 0; len(masters) < 3; i++ {
			name := "inline-cluster:" + string(rune('a'+i%26)) + time.Now().Format("150405.000000")
			node, err := rdb.MasterForKey(ctx, name)
			Expect(err).NotTo(HaveOccurred())
			if masters[node.Options().Addr] {
				continue
			}
			masters[node.Options().Addr] = true
			l := NewHandle(c, name, KindLock)
			locks = append(locks, &l)
		}
		// The first calls ask each master for its replicas (INFO, through
		// the flusher, for replica sync); none: later calls go inline.
		for _, l := range locks {
			Expect(lock(l, ctx)).To(Succeed())
			Expect(unlock(l, ctx)).To(Succeed())
		}
		Eventually(gleak.Goroutines).WithTimeout(10*time.Second).ShouldNot(ContainElement(gleak.IgnoringTopFunction(flusherLoop)), "the flushers ended")
		c.send.SetIdle(time.Hour) // a flusher, once started, stays
		for range 10 {
			for _, l := range locks {
				Expect(lock(l, ctx)).To(Succeed())
				Expect(unlock(l, ctx)).To(Succeed())
			}
		}
		Expect(gleak.Goroutines()).NotTo(ContainElement(gleak.IgnoringTopFunction(flusherLoop)), "no flusher was started")
		Expect(c.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
})
