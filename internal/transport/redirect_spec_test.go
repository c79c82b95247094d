package transport

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/cluster"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// A MOVED may name a node go-redis's slot map does not list yet (a
// reload answered by a node that has not heard of it). A CI run on Valkey
// failed the root suite's CLUSTER FAILOVER spec this way: a semaphore's
// release ended with "node ... is not in the cluster's slot map" and its
// permit was lost. Such a call waits, within the redirect budget, for the
// map to learn the node.
var _ = Describe("A call redirected to a node the slot map does not list yet", Label("cluster"), func() {
	It("is sent there once the map lists it, within the redirect budget", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cl, err := redistest.StartCluster(3, 1)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cl.Close)
		before := gleak.Goroutines()
		DeferCleanup(func() { // after the clients' clean-ups (they run first)
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		masters, err := cl.Masters(ctx)
		Expect(err).NotTo(HaveOccurred())
		victim := masters[0]
		replica, err := cl.ReplicaOf(ctx, victim.ID)
		Expect(err).NotTo(HaveOccurred())
		var key string
		for i := 0; key == ""; i++ {
			if k := "{r" + strconv.Itoa(i) + "}k"; cluster.Slot(k) == victim.Slots[0][0] {
				key = k
			}
		}

		// Nodes are named by host name (go-redis rewrites a loopback IP in
		// a map given by ClusterSlots, never a name), in MOVED replies too.
		byName := func(addr string) string {
			_, port, err := net.SplitHostPort(addr)
			Expect(err).NotTo(HaveOccurred())
			return net.JoinHostPort("localhost", port)
		}
		Expect(cl.AnnounceHostnames(ctx)).To(Succeed())
		// The map lists the masters only until told to ask the cluster.
		var mastersOnly []redis.ClusterSlot
		for _, m := range masters {
			for _, rg := range m.Slots {
				mastersOnly = append(mastersOnly, redis.ClusterSlot{Start: rg[0], End: rg[1],
					Nodes: []redis.ClusterNode{{ID: m.ID, Addr: byName(m.Addr)}}})
			}
		}
		live := redis.NewClient(&redis.Options{Addr: masters[1].Addr})
		DeferCleanup(live.Close)
		var learn atomic.Bool
		rdb := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: cl.Addrs(),
			ClusterSlots: func(ctx context.Context) ([]redis.ClusterSlot, error) {
				if !learn.Load() {
					return mastersOnly, nil
				}
				//lint:ignore SA1019 the ClusterSlots hook takes CLUSTER SLOTS's answer, as go-redis reads it itself
				return live.ClusterSlots(ctx).Result() // host names: see above
			},
		})
		DeferCleanup(rdb.Close)

		done := make(chan struct{})
		s := NewSender(testConfig(done), rdb)
		first := NewOp(ctx, "set", key, "1")
		Expect(s.Exec(ctx, first)).To(Succeed())
		Expect(first.Err).NotTo(HaveOccurred())

		Expect(cl.Failover(ctx, replica.Addr)).To(Succeed())
		t := time.AfterFunc(time.Second, func() { learn.Store(true) })
		DeferCleanup(t.Stop)
		moved := NewOp(ctx, "set", key, "2")
		Expect(s.Exec(ctx, moved)).To(Succeed())
		Expect(moved.Err).NotTo(HaveOccurred(), "sent to the new master once the map listed it")
		Expect(moved.V).To(Equal("OK"))
		Expect(learn.Load()).To(BeTrue(), "it waited for the map")
		check := redis.NewClient(&redis.Options{Addr: replica.Addr})
		DeferCleanup(check.Close)
		Expect(check.Get(ctx, key).Val()).To(Equal("2"))

		close(done)
		s.Shut()
	})
})
