package rlock_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("Listen and the Client's database", func() {
	It("is not fired by a key of the same name deleted in another database", func() {
		e := spectest.NewEnv()
		ctx := ctxowner.New(context.Background())
		was := e.Raw.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]
		Expect(e.Raw.ConfigSet(ctx, "notify-keyspace-events", "Egx").Err()).To(Succeed())
		DeferCleanup(func() {
			Expect(spectest.Server().Client().ConfigSet(context.Background(), "notify-keyspace-events", was).Err()).To(Succeed())
		})
		name := spectest.UniqueName("listen-db")
		lock := e.Client().NewLock(name) // DB 0
		events := make(chan rlock.KeyEvent, 16)
		stop, err := lock.Listen(ctx, func(ev rlock.KeyEvent) { events <- ev })
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)

		db1 := redis.NewClient(&redis.Options{Addr: spectest.Server().Addr, DB: 1})
		DeferCleanup(db1.Close)
		DeferCleanup(func() { db1.Del(context.Background(), name) })
		Expect(db1.Set(ctx, name, "x", 0).Err()).To(Succeed())
		Expect(db1.Del(ctx, name).Val()).To(BeEquivalentTo(1))
		Expect(db1.Set(ctx, name, "x", 50*time.Millisecond).Err()).To(Succeed())
		Eventually(func() int64 { return db1.Exists(ctx, name).Val() }).WithTimeout(5 * time.Second).Should(BeZero())
		// A deletion in DB 0 afterwards is delivered, alone: the DB 1
		// events, published before it, would have come first.
		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		Eventually(events).WithTimeout(5 * time.Second).Should(Receive(Equal(rlock.KeyEvent{Name: name})))
		Consistently(events, 500*time.Millisecond).ShouldNot(Receive(), "one event, DB 0's deletion: none from DB 1")
	})
})
