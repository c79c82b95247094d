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
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// nodeConns returns the number of client connections on each node of the
// cluster (CLIENT LIST, all types; the asking connection is not counted),
// by address.
func nodeConns(cluster *redistest.Cluster) map[string]int {
	GinkgoHelper()
	out := nodeConnsOf(cluster, "")
	for addr := range out {
		out[addr]--
	}
	return out
}

// nodeConnsOf returns the number of client connections of type typ
// ("pubsub", "normal"; "" for all, the asking one included) on each node.
func nodeConnsOf(cluster *redistest.Cluster, typ string) map[string]int {
	GinkgoHelper()
	out := map[string]int{}
	for _, s := range cluster.Nodes {
		if s.Pid() == 0 {
			continue
		}
		n, err := redistest.ClientCount(context.Background(), s.Addr, typ)
		Expect(err).NotTo(HaveOccurred())
		out[s.Addr] = n
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

// ownedSlack is how many more connections a node may keep after the
// waiters left than before: go-redis keeps in its node pool every
// connection it once had in use at the same time, idle, for
// ConnMaxIdleTime (30 min by default: the user's setting). goredisson uses
// at most two of a node's pool at once per Client, one for the flusher's
// plain batches and one for the pipeline with WAIT (replica sync), both
// serialized (docs/cluster.md, "Connections"); the sequential warm-up used
// at least one of them, so at most one more may appear, and one more for
// the connection an inline lane (one per node) may hold beside them.
const ownedSlack = 2

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
	// unsubscribed (pubsub/conn.go). What may stay is ownedSlack.
	leaveAll := func(prefix string, opts ...rlock.Option) {
		const waiters = 300
		holderC, waiterC := clusterClients(cluster, 1, opts...)[0], clusterClients(cluster, 1, opts...)[0]
		names := make([]string, waiters)
		holds := make([]context.Context, waiters) // the holder's owners, one per name
		for i := range names {
			names[i] = prefix + strconv.Itoa(i)
			holds[i] = ctxowner.New(ctx)
			Expect(holderC.NewLock(names[i]).Lock(holds[i])).To(Succeed())
			if i < 30 { // every master serves some of the first 30 names
				_, err := waiterC.NewLock(names[i]).IsLocked(ctx)
				Expect(err).NotTo(HaveOccurred())
				free := waiterC.NewLock(prefix + "free:" + strconv.Itoa(i))
				Expect(free.Lock(ctx)).To(Succeed()) // replica sync: INFO and WAIT
				Expect(free.Unlock(ctx)).To(Succeed())
			}
		}
		before, subsBefore := nodeConns(cluster), nodeConnsOf(cluster, "pubsub")
		fmt.Fprintf(GinkgoWriter, "before: %v\n%s", before, connBreakdown(cluster))

		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var wg sync.WaitGroup
		errs := make(chan error, 2*waiters)
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
				// Woken by the unlock: far sooner than this bound, which
				// only turns a lost wake-up into a failure.
				lctx, lcancel := context.WithTimeout(ctx, 45*time.Second)
				defer lcancel()
				owner := ctxowner.New(lctx)
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

		// The holder unlocks all at once, as many owners would: the
		// waiters woken and the unlocks make a burst of synced calls.
		cancel()
		unlockAll := func(odd int) {
			var uwg sync.WaitGroup
			for i, name := range names {
				if i%2 == odd {
					uwg.Add(1)
					go func() {
						defer uwg.Done()
						if err := holderC.NewLock(name).Unlock(holds[i]); err != nil {
							errs <- fmt.Errorf("%s: holder's unlock: %w", name, err)
						}
					}()
				}
			}
			uwg.Wait()
		}
		unlockAll(1)
		wg.Wait()
		unlockAll(0)
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func(g Gomega) {
			now, subs := nodeConns(cluster), nodeConnsOf(cluster, "pubsub")
			for addr, n := range before {
				g.Expect(now[addr]).To(BeNumerically("<=", n+ownedSlack), "%s: before %v, during %v, now %v\n%s", addr, before, during, now, connBreakdown(cluster))
				g.Expect(subs[addr]).To(BeNumerically("<=", subsBefore[addr]), "%s: subscription connections before %v, now %v", addr, subsBefore, subs)
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
