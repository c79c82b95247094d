package transport

import (
	"context"
	"errors"
	"log/slog"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// testConfig is a Config with no Client behind it.
func testConfig(done chan struct{}) Config {
	return Config{
		Sync:        SyncAuto,
		SyncTimeout: time.Second,
		Done:        done,
		Closed: func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		},
		ErrClosed:       errors.New("closed"),
		IsCleanup:       func(context.Context) bool { return false },
		InfoTimeout:     5 * time.Second,
		PublishRefused:  func(string) {},
		NameRefusedKeys: func(*Op) {},
		Logger:          slog.Default,
	}
}

// startCluster starts a 3-master Cluster for the spec and returns a
// ClusterClient on it that has reached every master (readTimeout 0:
// go-redis's default).
func startCluster(readTimeout time.Duration) *redis.ClusterClient {
	cl, err := redistest.StartCluster(3, 0)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cl.Close)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ReadTimeout: readTimeout})
	DeferCleanup(rdb.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	Expect(rdb.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() })).To(Succeed())
	return rdb
}

// inlineBatcher waits until s has a batcher for addr with a call in
// flight inline on it, and returns that batcher.
func inlineBatcher(s *Sender, addr string) *batcher {
	var b *batcher
	Eventually(func() bool {
		s.mu.Lock()
		b = s.byAddr[addr]
		s.mu.Unlock()
		return b != nil && b.inFlight()
	}).WithTimeout(10 * time.Second).Should(BeTrue())
	return b
}

// expectCutByClose waits until popped's BLPOP of key, sent inline, blocks
// on server (a call marked in flight may still be dialing: Close would cut
// it before it was sent, and its outcome would be not run), closes s (done,
// then Shut), and expects Close to end the call (abandoned: "closed"); a
// push then answers the BLPOP, whose reply the cut call's tail reads.
func expectCutByClose(s *Sender, done chan struct{}, popped <-chan error, server *redis.Client, key string) {
	GinkgoHelper()
	ctx := context.Background()
	Eventually(func() (string, error) {
		return server.Info(ctx, "clients").Result()
	}).WithTimeout(10*time.Second).Should(ContainSubstring("blocked_clients:1"), "the BLPOP reached Redis")
	close(done)
	s.Shut()
	var perr error
	Eventually(popped).WithTimeout(10*time.Second).Should(Receive(&perr), "Close ends the call in flight")
	reason, ok := Abandoned(perr)
	Expect(ok).To(BeTrue())
	Expect(reason).To(MatchError("closed"))
	Expect(server.RPush(ctx, key, "x").Err()).To(Succeed())
}

// On a Cluster each node's batcher has an inline lane of its own; when
// go-redis replaces the node's client, the old lane is retired: a call in
// flight on it finishes with its reply (it is not cut), then the lane is
// shut; after Close new batchers get no lane.
var _ = Describe("The inline lane of a Cluster node", Label("cluster"), func() {
	It("is retired when go-redis replaces the node's client, without cutting the call in flight", func() {
		rdb := startCluster(0)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		node, err := rdb.MasterForKey(ctx, "lane-q")
		Expect(err).NotTo(HaveOccurred())
		before := gleak.Goroutines()
		done := make(chan struct{})
		s := NewSender(testConfig(done), rdb)
		addr := node.Options().Addr
		Expect(rdb.Del(ctx, "lane-q").Err()).To(Succeed())

		// A call that blocks on the node until we push: in flight inline.
		pop := NewOp(ctx, "blpop", "lane-q", 20)
		popped := make(chan error, 1)
		go func() { popped <- s.Exec(ctx, pop) }()
		b1 := inlineBatcher(s, addr)
		Expect(b1.lane).NotTo(BeNil())

		// go-redis made a new client for the node.
		fresh := redis.NewClient(&redis.Options{Addr: addr})
		b2 := s.batcherFor(fresh, addr)
		Expect(b2).NotTo(BeIdenticalTo(b1))
		Expect(b2.lane).NotTo(BeNil())

		Expect(rdb.RPush(ctx, "lane-q", "x").Err()).To(Succeed())
		Eventually(popped).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(pop.Outcome()).To(Equal(Replied))
		Expect(pop.cut).To(BeFalse())
		Expect(pop.V).To(Equal([]any{"lane-q", "x"}))
		Expect(b1.lane.Begin(ctx, false, false)).To(BeFalse(), "the old lane is shut")

		// The new batcher sends inline.
		set := NewOp(ctx, "set", "lane-q", "y")
		Expect(s.Exec(ctx, set)).To(Succeed())
		Expect(set.V).To(Equal("OK"))

		close(done)
		s.Shut()
		Expect(b2.lane.Begin(ctx, false, false)).To(BeFalse(), "Close shut the lanes")
		other := redis.NewClient(&redis.Options{Addr: addr})
		Expect(s.batcherFor(other, addr).lane).To(BeNil(), "no lane after Close")
		Expect(fresh.Close()).To(Succeed())
		Expect(other.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
})
