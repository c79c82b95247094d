package goredisson_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// scriptCounter counts the scripts a go-redis client sends through its
// own pool (hooks do not see the inline lane's).
type scriptCounter struct{ n atomic.Int64 }

func (h *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if n := cmd.Name(); n == "evalsha" || n == "eval" {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

var _ = Describe("the inline lane on Sentinel", Label("sentinel"), func() {
	It("sends an uncontended Lock and Unlock inline, past the go-redis client's pool", func() {
		topo, err := redistest.StartSentinels(1, 1)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(topo.Close()).To(Succeed()) })
		before := gleak.Goroutines()
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: topo.MasterName, SentinelAddrs: topo.SentinelAddrs()})
		hook := &scriptCounter{}
		rdb.AddHook(hook)
		c, err := rlock.NewClient(rdb, rlock.WithReplicaSync(0, 0))
		Expect(err).NotTo(HaveOccurred())
		ctx := ctxowner.New(context.Background())
		lock := c.NewLock("sentinel-lane")
		// The lane starts once the Sentinels' hello named them (every 2 s).
		Eventually(func() int64 {
			n := hook.n.Load()
			Expect(lock.Lock(ctx)).To(Succeed())
			Expect(lock.Unlock(ctx)).To(Succeed())
			return hook.n.Load() - n
		}).WithTimeout(20*time.Second).WithPolling(50*time.Millisecond).Should(BeZero(), "a pair past the pool")
		n := hook.n.Load()
		for range 20 {
			Expect(lock.Lock(ctx)).To(Succeed())
			Expect(lock.Unlock(ctx)).To(Succeed())
		}
		Expect(hook.n.Load()-n).To(BeZero(), "20 pairs, all inline")
		Expect(c.Close()).To(Succeed())
		Expect(rdb.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
})
