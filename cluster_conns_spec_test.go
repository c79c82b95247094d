package goredisson_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// nodeConns returns the number of client connections on each node of the
// cluster (CLIENT LIST, all types; the asking connection is not counted),
// by address.
func nodeConns(cluster *redistest.Cluster) map[string]int {
	GinkgoHelper()
	out := map[string]int{}
	for _, s := range cluster.Nodes {
		if s.Pid() == 0 {
			continue
		}
		n, err := redistest.ClientCount(context.Background(), s.Addr, "")
		Expect(err).NotTo(HaveOccurred())
		out[s.Addr] = n - 1
	}
	return out
}

// connBreakdown describes a node's connections by type and last command,
// for a failure message.
func connBreakdown(cluster *redistest.Cluster) string {
	var b strings.Builder
	for _, s := range cluster.Nodes {
		if s.Pid() == 0 {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
		text, err := rdb.ClientList(context.Background()).Result()
		_ = rdb.Close()
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", s.Addr, err)
			continue
		}
		kinds := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			var flags, cmd string
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "flags="); ok {
					flags = v
				}
				if v, ok := strings.CutPrefix(f, "cmd="); ok {
					cmd = v
				}
			}
			kinds["flags="+flags+" cmd="+cmd]++
		}
		keys := make([]string, 0, len(kinds))
		for k := range kinds {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "%s:", s.Addr)
		for _, k := range keys {
			fmt.Fprintf(&b, " [%s]x%d", k, kinds[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// subscribedChannels counts the lock channels subscribed on the cluster's
// nodes, sharded and classic.
func subscribedChannels(cluster *redistest.Cluster, prefix string) int {
	GinkgoHelper()
	total := 0
	for _, s := range cluster.Nodes {
		if s.Pid() == 0 {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
		classic, err := rdb.PubSubChannels(context.Background(), "redisson_lock__channel:*"+prefix+"*").Result()
		Expect(err).NotTo(HaveOccurred())
		sharded, err := rdb.PubSubShardChannels(context.Background(), "redisson_lock__channel:*"+prefix+"*").Result()
		Expect(err).NotTo(HaveOccurred())
		_ = rdb.Close()
		total += len(classic) + len(sharded)
	}
	return total
}

var _ = Describe("connections on Redis Cluster (3 masters, 3 replicas)", Ordered, Label("cluster"), func() {
	var cluster *redistest.Cluster
	ctx := context.Background()
	sharedCluster(&cluster)

	// 300 waiters, each on its own name (spread over the three masters),
	// each blocked on a lock another Client holds; half leave by their
	// context, half are woken by the holder's unlock and take and release
	// the lock. Afterwards every node has as many connections as before
	// the waiters came. The "before" state is taken with both Clients
	// warmed up on every master: the holder took its 300 locks one after
	// another, the waiter Client made one call per master. The Hub's
	// subscription connections are not part of it (it has none before the
	// first wait), and it closes them once their last channel is
	// unsubscribed (pubsub/conn.go), so no slack is allowed.
	leaveAll := func(prefix string, opts ...rlock.Option) {
		const waiters = 300
		holderC, waiterC := clusterClients(cluster, 1, opts...)[0], clusterClients(cluster, 1, opts...)[0]
		names := make([]string, waiters)
		for i := range names {
			names[i] = prefix + strconv.Itoa(i)
			Expect(holderC.NewLock(names[i]).Lock(ctx)).To(Succeed())
			if i < 30 { // every master serves some of the first 30 names
				_, err := waiterC.NewLock(names[i]).IsLocked(ctx)
				Expect(err).NotTo(HaveOccurred())
			}
		}
		before := nodeConns(cluster)
		fmt.Fprintf(GinkgoWriter, "before: %v\n%s", before, connBreakdown(cluster))

		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var wg sync.WaitGroup
		errs := make(chan error, waiters)
		for i, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := waiterC.NewLock(name)
				if i%2 == 0 { // leaves by its context
					owner := ctxowner.New(wctx)
					if err := l.Lock(owner); err == nil {
						errs <- fmt.Errorf("%s: acquired a lock still held", name)
					}
					return
				}
				owner := ctxowner.New(ctx)
				if err := l.Lock(owner); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
				if err := l.Unlock(owner); err != nil {
					errs <- fmt.Errorf("%s: unlock: %w", name, err)
				}
			}()
		}
		Eventually(func() int { return subscribedChannels(cluster, prefix) }).
			WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(waiters))
		during := nodeConns(cluster)
		fmt.Fprintf(GinkgoWriter, "during: %v\n%s", during, connBreakdown(cluster))

		cancel()
		for i, name := range names {
			if i%2 == 1 {
				Expect(holderC.NewLock(name).Unlock(ctx)).To(Succeed())
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		for i, name := range names {
			if i%2 == 0 {
				Expect(holderC.NewLock(name).Unlock(ctx)).To(Succeed())
			}
		}
		Eventually(func(g Gomega) {
			now := nodeConns(cluster)
			for addr, n := range before {
				g.Expect(now[addr]).To(BeNumerically("<=", n), "%s: before %v, during %v, now %v\n%s", addr, before, during, now, connBreakdown(cluster))
			}
		}).WithTimeout(20 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "after: %v\n", nodeConns(cluster))
	}

	It("returns every node to its connection count once 300 waiters on 300 names have left (sharded pub/sub)", func() {
		leaveAll("conns-sharded:", rlock.WithShardedPubSub(true))
	})

	It("returns every node to its connection count once 300 waiters on 300 names have left (classic pub/sub)", func() {
		leaveAll("conns-classic:", rlock.WithShardedPubSub(false))
	})
})
