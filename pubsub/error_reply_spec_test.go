package pubsub_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/pubsub"
)

// A SUBSCRIBE answered with an error other than NOPERM or MOVED (here
// BUSY: a real server running a long script; on a Cluster TRYAGAIN,
// CLUSTERDOWN, LOADING) is tried again, not left pending for ever.
var _ = Describe("a SUBSCRIBE answered with a generic error reply", func() {
	It("is tried again until the server confirms it, and messages then reach the channel", func() {
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		ctx := context.Background()
		before := gleak.Goroutines()
		seen := make(chan struct{}, 100)
		raw, rdb, busy := srv.Client(), srv.Client(), srv.Client()
		hub := pubsub.New(rdb, pubsub.WithLinger(0), pubsub.WithLogger(slog.New(&busySeen{
			Handler: slog.NewTextHandler(GinkgoWriter, &slog.HandlerOptions{Level: slog.LevelDebug}), seen: seen})))
		DeferCleanup(func() {
			_ = raw.ScriptKill(ctx).Err()
			_ = hub.Close()
			for _, c := range []*redis.Client{raw, rdb, busy} {
				Expect(c.Close()).To(Succeed())
			}
			Eventually(gleak.Goroutines).WithTimeout(5 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		a, err := hub.Subscribe(ctx, "err-reply:a") // the Hub's connection, confirmed
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Close)
		Expect(raw.ConfigSet(ctx, "busy-reply-threshold", "50").Err()).To(Succeed())

		ran := make(chan error, 1)
		go func() { ran <- busy.Eval(ctx, "while true do end", nil).Err() }()
		Eventually(func() string { return fmt.Sprint(raw.Ping(ctx).Err()) }).WithTimeout(5 * time.Second).
			Should(HavePrefix("BUSY"))

		// The SUBSCRIBE of b is answered BUSY (the Hub logs the reply);
		// the script is killed then, before the connection's health check
		// (a PING after 3 s of silence) could find it, and messages on a
		// keep the connection busy from then on: only a retry of b's
		// SUBSCRIBE subscribes it.
		subscribed := make(chan *pubsub.Sub, 1)
		go func() {
			defer GinkgoRecover()
			b, err := hub.Subscribe(ctx, "err-reply:b")
			Expect(err).NotTo(HaveOccurred())
			subscribed <- b
		}()
		Eventually(seen).WithTimeout(5 * time.Second).Should(Receive())
		Expect(raw.ScriptKill(ctx).Err()).To(Succeed())
		Eventually(ran).WithTimeout(5 * time.Second).Should(Receive(MatchError(ContainSubstring("killed"))))
		stop := make(chan struct{})
		pubDone := make(chan struct{})
		go func() {
			defer close(pubDone)
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
					raw.Publish(ctx, "err-reply:a", "x")
				}
			}
		}()
		DeferCleanup(func() { close(stop); <-pubDone })
		var b *pubsub.Sub
		Eventually(subscribed).WithTimeout(10 * time.Second).Should(Receive(&b))
		DeferCleanup(b.Close)

		Eventually(func() int64 { return raw.PubSubNumSub(ctx, "err-reply:b").Val()["err-reply:b"] }).
			WithTimeout(10*time.Second).Should(BeEquivalentTo(1), "subscribed again once the server answers")
		woken := make(chan bool, 1)
		go func() { w, _ := b.Wait(ctx, 10*time.Second); woken <- w }()
		Eventually(func() int64 { return raw.Publish(ctx, "err-reply:b", "1").Val() }).
			WithTimeout(5 * time.Second).Should(BeEquivalentTo(1))
		Eventually(woken).WithTimeout(5 * time.Second).Should(Receive(BeTrue()))
	})
})

// busySeen is a log handler that signals each record naming a BUSY reply.
type busySeen struct {
	slog.Handler
	seen chan struct{}
}

func (b *busySeen) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if strings.HasPrefix(a.Value.String(), "BUSY") {
			select {
			case b.seen <- struct{}{}:
			default:
			}
			return false
		}
		return true
	})
	return b.Handler.Handle(ctx, r)
}
