package transport

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/cluster"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// Issue 41 item 3 on a Cluster: the batches a flusher writes as RESP on
// its lane still follow ASK (ASKING written before the op, in the same
// write, on the same connection) while a slot migrates, and MOVED once it
// moved; every call reads its own reply.
var _ = Describe("Batches on a Cluster whose slot migrates", Label("cluster", "slow"), func() {
	It("follow ASK with ASKING in the batch's write, then MOVED, each call reading its own reply", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		before := gleak.Goroutines()
		DeferCleanup(func() { // after the clients' clean-ups (they run first)
			Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		cl, err := redistest.StartCluster(3, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cl.Close)
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
		DeferCleanup(rdb.Close)
		done := make(chan struct{})
		s := NewSender(testConfig(done), rdb)
		DeferCleanup(func() { close(done); s.Shut() })

		// A script that reads no key but declares one, never written: in a
		// migrating slot the source answers ASK for it (the key is not
		// there), the target runs it after ASKING.
		echo := &Script{Name: "echo", Src: "return ARGV[1]"}
		key := func(c int) string { return "{mig}k" + strconv.Itoa(c) }
		slot := cluster.Slot(key(0))
		background := func() (context.Context, context.CancelFunc) { return ctx, func() {} }
		hammerOK := func(what string) map[string]int {
			GinkgoHelper()
			wrong, counts := hammerKeys(s, 16, time.Second, echo, background, key)
			GinkgoWriter.Printf("%s: %v\n", what, counts)
			Expect(wrong).To(BeEmpty(), what)
			Expect(counts["replied"]).To(BeNumerically(">", 100), what)
			Expect(counts["unknown"]+counts["not run"]).To(BeZero(), what)
			return counts
		}
		hammerOK("before the migration")

		from, err := cl.Owner(ctx, slot)
		Expect(err).NotTo(HaveOccurred())
		masters, err := cl.Masters(ctx)
		Expect(err).NotTo(HaveOccurred())
		var to redistest.NodeInfo
		for _, m := range masters {
			if m.ID != from.ID {
				to = m
				break
			}
		}
		m, err := cl.BeginMigration(ctx, slot, to.Addr)
		Expect(err).NotTo(HaveOccurred())
		Expect(m.MoveKeys(ctx)).To(Succeed())
		askBefore := nodeStat(ctx, from.Addr, "errorstats", "errorstat_ASK")
		askingBefore := nodeStat(ctx, to.Addr, "commandstats", "cmdstat_asking")
		hammerOK("while the slot migrates")
		target := batcherAt(s, to.Addr) // made at the first ASK to it
		asks := nodeStat(ctx, from.Addr, "errorstats", "errorstat_ASK") - askBefore
		askings := nodeStat(ctx, to.Addr, "commandstats", "cmdstat_asking") - askingBefore
		GinkgoWriter.Printf("ASK replies %d, ASKING run on the target %d\n", asks, askings)
		Expect(asks).To(BeNumerically(">", 100))
		Expect(askings).To(Equal(asks), "every ASK followed once, after ASKING")
		Expect(target.flushedOnLanes()).To(BeNumerically(">", 0), "the target's flushers sent them (an ASK'd call never goes inline)")
		Expect(target.lane).NotTo(BeNil())
		for _, l := range target.lanes() {
			Expect(dialed(l)).To(BeNumerically("<=", 1), "on the lanes' own connections")
		}

		Expect(m.Finish(ctx)).To(Succeed())
		movedBefore := nodeStat(ctx, from.Addr, "errorstats", "errorstat_MOVED")
		hammerOK("once the slot moved")
		moved := nodeStat(ctx, from.Addr, "errorstats", "errorstat_MOVED") - movedBefore
		GinkgoWriter.Printf("MOVED replies %d\n", moved)
		Expect(moved).To(BeNumerically(">", 0), "calls met the move")
	})
})

// batcherAt returns s's batcher of the node at addr (host:port, matched
// by port: the Cluster names its nodes by IP).
func batcherAt(s *Sender, addr string) *batcher {
	GinkgoHelper()
	_, port, _ := strings.Cut(addr, ":")
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, b := range s.byAddr {
		if strings.HasSuffix(a, ":"+port) {
			return b
		}
	}
	Fail("no batcher for " + addr)
	return nil
}

// nodeStat returns the calls (or count) of name in the INFO section of the
// node at addr (0: none yet).
func nodeStat(ctx context.Context, addr, section, name string) int {
	GinkgoHelper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, section).Result()
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), name+":")
		if !ok {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "count="); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
	}
	return 0
}
