package probe_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/interop/probe"
	"github.com/goredisson/goredisson/interop/probe/probetest"
)

// A locksmith-style port (read-write locks and permit-expirable semaphores
// on Redisson 4.x) proven against the real Redisson: the example of
// docs/redisson.md, "Your port against your Redisson in CI".
var _ = Describe("a locksmith-style port against the real Redisson", Label("redisson"), func() {
	It("read-write: Java's writer shuts Go's reader out; each side's unlock wakes the other", func(sctx SpecContext) {
		java := probetest.Start(probe.Config{Addrs: []string{srv.Addr()}})
		client := probetest.NewClient(java, rdb()) // WithRedissonVersion (the jar's) and the rest
		ctx := ctxowner.WithID(sctx, "reader")     // one Go owner across goroutines
		writer := java.Thread("writer").NewReadWriteLock("doc:42").WriteLock()
		reader := client.NewReadWriteLock("doc:42").ReadLock()
		Expect(writer.Lock(ctx)).To(Succeed())
		probetest.ExpectRefused(ctx, reader)
		probetest.JavaWakesGo(ctx, time.Second, reader.Lock, writer.Unlock)
		probetest.GoWakesJava(ctx, time.Second, writer.Thread(), writer.Lock, reader.Unlock)
		Expect(writer.Unlock(ctx)).To(Succeed())
	})
	It("permits: ids cross sides; each side's release wakes the other's waiter", func(ctx SpecContext) {
		java := probetest.Start(probe.Config{Addrs: []string{srv.Addr()}})
		seats := probetest.NewClient(java, rdb()).NewPermitExpirableSemaphore("seats")
		jseats := java.Thread("booker").NewPermitExpirableSemaphore("seats")
		Expect(jseats.TrySetPermits(ctx, 1)).To(BeTrue())
		jid, err := jseats.Acquire(ctx, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		var gid string
		goTake := func(ctx context.Context) (err error) { gid, err = seats.Acquire(ctx, time.Minute); return err }
		probetest.JavaWakesGo(ctx, time.Second, goTake, func(ctx context.Context) error { return jseats.Release(ctx, jid) })
		javaTake := func(ctx context.Context) (err error) { jid, err = jseats.Acquire(ctx, time.Minute); return err }
		probetest.GoWakesJava(ctx, time.Second, jseats.Thread(), javaTake, func(ctx context.Context) error { return seats.Release(ctx, gid) })
		Expect(seats.Release(ctx, jid)).To(Succeed()) // Go releases the permit Java took, by id
	})
})
