package rlock_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("over TLS (rediss://)", func() {
	var (
		srv   *redistest.Server
		admin *redis.Client
	)
	BeforeEach(func() {
		spectest.NewEnv() // goroutine-leak check at cleanup
		var err error
		srv, err = redistest.Start(redistest.WithTLS())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		admin = srv.Client()
		DeferCleanup(admin.Close)
	})
	// client returns a goredisson Client on a go-redis client made from
	// the server's rediss:// URL.
	client := func(name string) *rlock.Client {
		GinkgoHelper()
		ro, err := redis.ParseURL(srv.URL())
		Expect(err).NotTo(HaveOccurred())
		ro.ClientName = name
		Expect(ro.TLSConfig).NotTo(BeNil(), "rediss:// gives a TLS config")
		ro.TLSConfig.RootCAs = srv.TLSConfig().RootCAs
		c, _ := spectest.ClientWith(ro)
		return c
	}
	numsub := func(channel string) func() int64 {
		return func() int64 { return admin.PubSubNumSub(context.Background(), channel).Val()[channel] }
	}

	It("refuses a plain-TCP client, so the specs below do run over TLS", func() {
		plain := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
		DeferCleanup(plain.Close)
		Expect(plain.Ping(context.Background()).Err()).To(HaveOccurred())
	})

	// waitAndUnlock has a waiter on a second Client wait for a lock a first
	// Client holds with a watchdog lease (30 s), runs mid (with the waiter
	// subscribed), unlocks, and checks that the waiter was woken (it holds
	// the lock long before the lease would have ended).
	waitAndUnlock := func(mid func(channel string)) {
		GinkgoHelper()
		holder, waiter := client("holder"), client("waiter")
		owner := ctxowner.New(context.Background())
		Expect(holder.NewLock("tls:x").Lock(owner)).To(Succeed())
		got := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			got <- waiter.NewLock("tls:x").Lock(ctxowner.New(context.Background()))
		}()
		channel := spectest.LockChannel("tls:x")
		Eventually(numsub(channel)).WithTimeout(10 * time.Second).Should(BeEquivalentTo(1))
		Consistently(got).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		mid(channel)
		unlocked := time.Now()
		Expect(holder.NewLock("tls:x").Unlock(owner)).To(Succeed())
		Eventually(got).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(time.Since(unlocked)).To(BeNumerically("<", 10*time.Second), "woken, not waiting out the 30 s lease")
	}

	It("locks, waits and unlocks", func() {
		waitAndUnlock(func(string) {})
	})

	// kill closes, on the server, every connection of the Clients named
	// name (the subscription and the pooled ones), and returns how many.
	kill := func(name string) int {
		GinkgoHelper()
		ctx := context.Background()
		list, err := admin.ClientList(ctx).Result()
		Expect(err).NotTo(HaveOccurred())
		killed := 0
		for _, line := range strings.Split(list, "\n") {
			if !strings.Contains(line, " name="+name+" ") {
				continue
			}
			id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
			Expect(admin.Do(ctx, "client", "kill", "id", id).Err()).To(Succeed())
			killed++
		}
		return killed
	}

	It("wakes a waiter whose connections were killed mid-wait (CLIENT KILL)", func() {
		waitAndUnlock(func(channel string) {
			Expect(kill("waiter")).To(BeNumerically(">=", 2))
			// The waiter subscribes again over a new TLS connection.
			Eventually(numsub(channel)).WithTimeout(10 * time.Second).Should(BeEquivalentTo(1))
		})
	})

	// go-redis checks a pooled plain-TCP connection for a peer's close
	// before it reuses it, but not a TLS one: the release goes out on a
	// dead connection, and so did the settle of its lost reply, so Unlock
	// said the release may not have taken effect although a new connection
	// would have settled it at once.
	It("unlocks with nil after the holder's connections were killed (CLIENT KILL)", func() {
		waitAndUnlock(func(string) {
			Expect(kill("holder")).To(BeNumerically(">=", 1))
		})
	})
})
