package rlock_test

import (
	"context"
	"encoding/hex"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// The rest of Redisson's synchronizer API (revision 3), beyond what the
// ported Java tests cover: layouts, messages, bad input, cancelled waits,
// and where goredisson's docs say what Redisson does.

// listen subscribes a raw client to channels and returns the payloads it
// receives, "channel=payload", in order.
func listen(e *spectest.Env, channels ...string) <-chan string {
	GinkgoHelper()
	sub := e.Raw.Subscribe(context.Background(), channels...)
	DeferCleanup(sub.Close)
	for range channels {
		_, err := sub.Receive(context.Background())
		Expect(err).NotTo(HaveOccurred())
	}
	out := make(chan string, 64)
	go func() {
		for m := range sub.Channel() {
			out <- m.Channel + "=" + m.Payload
		}
	}()
	return out
}

// received returns what arrived on msgs within d.
func received(msgs <-chan string, d time.Duration) []string {
	got := []string{}
	timeout := time.After(d)
	for {
		select {
		case m := <-msgs:
			got = append(got, m)
		case <-timeout:
			return got
		}
	}
}

var _ = Describe("Semaphore, the rest of Redisson's API", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("drains a negative count as Redisson's drainPermits does: returns it and sets the count to 0", func() {
		sem := e.Client().NewSemaphore("sem-drain-neg")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		Expect(sem.AddPermits(ctx, -3)).To(Succeed())
		Expect(sem.DrainPermits(ctx)).To(Equal(-2), "the count it found")
		Expect(sem.AvailablePermits(ctx)).To(BeZero(), "reset to 0, which gives back the 2 missing permits")
		Expect(sem.DrainPermits(ctx)).To(BeZero())
	})

	It("sets permits with a time to live once, publishing them; the key, permits and all, expires", func() {
		sem := e.Client().NewSemaphore("sem-ttl")
		msgs := listen(e, "redisson_sc:{sem-ttl}")
		Expect(sem.TrySetPermitsTTL(ctx, 3, time.Minute)).To(BeTrue())
		Expect(sem.TrySetPermitsTTL(ctx, 5, time.Minute)).To(BeFalse())
		Expect(sem.TrySetPermits(ctx, 5)).To(BeFalse())
		Expect(e.Raw.PTTL(ctx, "sem-ttl").Val()).To(And(BeNumerically(">", 59*time.Second), BeNumerically("<=", time.Minute)))
		Expect(sem.RemainTTL(ctx)).To(BeNumerically(">", 59*time.Second))
		Expect(sem.Release(ctx, 1)).To(Succeed())
		Expect(e.Raw.PTTL(ctx, "sem-ttl").Val()).To(BeNumerically(">", 0), "a release keeps the time to live")
		Expect(received(msgs, 200*time.Millisecond)).To(Equal([]string{"redisson_sc:{sem-ttl}=3", "redisson_sc:{sem-ttl}=4"}))
		Expect(sem.AddPermits(ctx, 1)).To(Succeed())
		Expect(sem.RemainTTL(ctx)).To(Equal(rlock.NoExpiry), "AddPermits rewrites the counter, as Redisson's")
	})

	It("releases only into a semaphore that exists, publishing the permits then available", func() {
		sem := e.Client().NewSemaphore("sem-rie")
		msgs := listen(e, "redisson_sc:{sem-rie}")
		Expect(sem.ReleaseIfExists(ctx, 2)).To(BeFalse())
		Expect(sem.IsExists(ctx)).To(BeFalse(), "nothing made")
		Expect(sem.ReleaseIfExists(ctx, 0)).To(BeFalse(), "zero permits: nothing, as Redisson")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		Expect(sem.ReleaseIfExists(ctx, 2)).To(BeTrue())
		Expect(sem.AvailablePermits(ctx)).To(Equal(3))
		Expect(received(msgs, 200*time.Millisecond)).To(Equal([]string{"redisson_sc:{sem-rie}=1", "redisson_sc:{sem-rie}=3"}))
		rctx, cancel := context.WithCancel(ctx)
		cancel()
		Expect(sem.ReleaseIfExists(rctx, 1)).To(BeTrue(), "cleanup, like Release: an ended ctx does not stop it")
	})

	It("lets a negative count wait for releases, as Redisson and java.util.concurrent do", func() {
		sem := e.Client().NewSemaphore("sem-neg")
		Expect(sem.TrySetPermits(ctx, -1)).To(BeTrue())
		Expect(sem.TryAcquire(ctx, 1, 0)).To(BeFalse())
		Expect(sem.Release(ctx, 1)).To(Succeed())
		Expect(sem.TryAcquire(ctx, 1, 0)).To(BeFalse())
		Expect(sem.Release(ctx, 1)).To(Succeed())
		Expect(sem.TryAcquire(ctx, 1, 0)).To(BeTrue())
	})

	It("deletes, expires and persists its key as Redisson's RExpirable does, publishing nothing", func() {
		sem := e.Client().NewSemaphore("sem-obj")
		msgs := listen(e, "redisson_sc:{sem-obj}")
		Expect(sem.Expire(ctx, time.Minute)).To(BeFalse(), "no key yet")
		Expect(sem.RemainTTL(ctx)).To(BeZero())
		Expect(sem.ClearExpire(ctx)).To(BeFalse())
		Expect(e.Raw.Set(ctx, "sem-obj", 2, 0).Err()).To(Succeed())
		Expect(sem.RemainTTL(ctx)).To(Equal(rlock.NoExpiry))
		Expect(sem.Expire(ctx, time.Minute)).To(BeTrue())
		Expect(sem.RemainTTL(ctx)).To(BeNumerically(">", 59*time.Second))
		Expect(sem.ClearExpire(ctx)).To(BeTrue())
		Expect(sem.ClearExpire(ctx)).To(BeFalse())
		Expect(sem.IsExists(ctx)).To(BeTrue())
		Expect(sem.Delete(ctx)).To(BeTrue())
		Expect(sem.Delete(ctx)).To(BeFalse())
		Expect(sem.IsExists(ctx)).To(BeFalse())
		Expect(received(msgs, 200*time.Millisecond)).To(BeEmpty())
		Expect(sem.Name()).To(Equal("sem-obj"))
	})
})

var _ = Describe("PermitExpirableSemaphore, the rest of Redisson's API", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("words an expired, released or unknown permit id as a permit, not a lock, and still errors.Is ErrNotHeld", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-words")
		Expect(sem.TrySetPermits(ctx, 2)).To(BeTrue())
		const unknown = "00112233445566778899aabbccddeeff"
		err := sem.Release(ctx, unknown)
		Expect(err).To(MatchError(rlock.ErrNotHeld))
		Expect(err.Error()).To(Equal(`goredisson: release "psem-words": permit with id ` + unknown + ` has already been released or does not exist`))
		Expect(err.Error()).NotTo(ContainSubstring("lock"))
		ids, err := sem.AcquireN(ctx, 2, 0)
		Expect(err).NotTo(HaveOccurred())
		err = sem.ReleaseN(ctx, append(ids, unknown))
		Expect(err).To(MatchError(rlock.ErrNotHeld))
		Expect(err.Error()).To(ContainSubstring("permits with ids [" + ids[0] + ", " + ids[1] + ", " + unknown + "] have already been released or do not exist"))
		_, err = sem.LeaseTime(ctx, unknown)
		Expect(err).To(MatchError(rlock.ErrNotHeld))
		Expect(err.Error()).To(ContainSubstring("permit with id " + unknown + " has already been released"))
		Expect(sem.AvailablePermits(ctx)).To(BeZero(), "the refused ReleaseN gave nothing back")
	})

	It("takes n permits in one script: one score for all of them, the counter down by n", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-n")
		Expect(sem.TrySetPermits(ctx, 5)).To(BeTrue())
		ids, err := sem.AcquireN(ctx, 3, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids).To(HaveLen(3))
		Expect(e.Raw.Get(ctx, "psem-n").Val()).To(Equal("2"))
		zs := e.Raw.ZRangeWithScores(ctx, "{psem-n}:timeout", 0, -1).Val()
		Expect(zs).To(HaveLen(3))
		for _, z := range zs {
			Expect(z.Score).To(Equal(zs[0].Score))
			Expect(hex.EncodeToString([]byte(z.Member.(string)))).To(BeElementOf(ids))
		}
		Expect(sem.LeaseTime(ctx, ids[0])).To(And(BeNumerically(">", 59*time.Second), BeNumerically("<=", time.Minute)))
		Expect(sem.Permits(ctx)).To(Equal(5))
		Expect(sem.AcquiredPermits(ctx)).To(Equal(3))
		_, ok, err := sem.TryAcquireN(ctx, 3, 0, 0)
		Expect(ok, err).To(BeFalse(), "only 2 left")
		Expect(sem.AvailablePermits(ctx)).To(Equal(2), "a failed attempt takes none")
	})

	It("wakes a waiter for n permits only once n are there, on Redisson's messages", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-wait-n")
		Expect(sem.TrySetPermits(ctx, 2)).To(BeTrue())
		held, err := sem.AcquireN(ctx, 2, 0)
		Expect(err).NotTo(HaveOccurred())
		got := make(chan []string, 1)
		go func() {
			defer GinkgoRecover()
			ids, err := e.Client().NewPermitExpirableSemaphore("psem-wait-n").AcquireN(ctx, 2, 0)
			Expect(err).NotTo(HaveOccurred())
			got <- ids
		}()
		Eventually(func() int64 { return e.NumSub("redisson_sc:{psem-wait-n}") }).Should(BeEquivalentTo(1))
		Expect(sem.Release(ctx, held[0])).To(Succeed())
		Consistently(got).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		released := time.Now()
		Expect(sem.Release(ctx, held[1])).To(Succeed())
		var ids []string
		Eventually(got).WithTimeout(2 * time.Second).Should(Receive(&ids))
		Expect(time.Since(released)).To(BeNumerically("<", time.Second))
		Expect(ids).To(HaveLen(2))
	})

	It("leaves nothing behind when a wait for n permits is cancelled", Label("slow"), func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-cancel-n")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := sem.AcquireN(cctx, 2, time.Minute); done <- err }()
		Eventually(func() int64 { return e.NumSub("redisson_sc:{psem-cancel-n}") }).Should(BeEquivalentTo(1))
		cancel()
		Eventually(done).Should(Receive(MatchError(context.Canceled)))
		Expect(e.Raw.ZCard(ctx, "{psem-cancel-n}:timeout").Val()).To(BeZero())
		Expect(sem.AvailablePermits(ctx)).To(Equal(1))
		Eventually(func() int64 { return e.NumSub("redisson_sc:{psem-cancel-n}") }).WithTimeout(3 * time.Second).Should(BeZero())
	})

	It("gives back the permits of an AcquireN whose reply was lost while Redis hung", Label("fault"), func() {
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		c, rdb := spectest.ClientAndRedis(srv.Addr)
		sem := c.NewPermitExpirableSemaphore("psem-hung")
		Expect(sem.TrySetPermits(ctx, 3)).To(BeTrue())
		Expect(srv.Pause()).To(Succeed())
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err = sem.AcquireN(dctx, 2, 0)
		Expect(err).To(MatchError(context.DeadlineExceeded))
		Expect(srv.Resume()).To(Succeed())
		Eventually(func() string { return rdb.Get(ctx, "psem-hung").Val() }).WithTimeout(6 * time.Second).Should(Equal("3"))
		Expect(rdb.ZCard(ctx, "{psem-hung}:timeout").Val()).To(BeZero())
	})

	It("updates a lease from now, makes it permanent with a lease <= 0, and refuses an id that is gone", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-update")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		id, err := sem.Acquire(ctx, time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(sem.UpdateLeaseTime(ctx, id, time.Hour)).To(BeTrue())
		Expect(sem.LeaseTime(ctx, id)).To(BeNumerically(">", 59*time.Minute))
		Expect(sem.UpdateLeaseTime(ctx, id, 0)).To(BeTrue())
		Expect(sem.LeaseTime(ctx, id)).To(Equal(rlock.NoExpiry))
		raw, _ := hex.DecodeString(id)
		Expect(e.Raw.ZScore(ctx, "{psem-update}:timeout", string(raw)).Val()).To(BeEquivalentTo(922337203685477))
		Expect(sem.Release(ctx, id)).To(Succeed())
		Expect(sem.UpdateLeaseTime(ctx, id, time.Hour)).To(BeFalse())
		Expect(sem.TryRelease(ctx, id)).To(BeFalse())
	})

	It("refuses bad counts, leases, waits and ids with ErrInvalidArgument, changing nothing", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-bad")
		Expect(sem.TrySetPermits(ctx, 3)).To(BeTrue())
		for _, n := range []int{0, -1} {
			_, err := sem.AcquireN(ctx, n, 0)
			Expect(err).To(MatchError(rlock.ErrInvalidArgument), "AcquireN(%d)", n)
			_, _, err = sem.TryAcquireN(ctx, n, 0, 0)
			Expect(err).To(MatchError(rlock.ErrInvalidArgument), "TryAcquireN(%d)", n)
		}
		_, err := sem.AcquireN(ctx, 1, 500*time.Microsecond)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, _, err = sem.TryAcquireN(ctx, 1, 0, 10) // a 10 ns lease (a 10 ns wait is one attempt)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(sem.ReleaseN(ctx, nil)).To(MatchError(rlock.ErrInvalidArgument))
		_, err = sem.TryReleaseN(ctx, []string{})
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = sem.TryRelease(ctx, "zz")
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = sem.UpdateLeaseTime(ctx, "", time.Second)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = sem.LeaseTime(ctx, "nothex")
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = sem.Expire(ctx, 0)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(sem.AvailablePermits(ctx)).To(Equal(3))
		Expect(e.Raw.Exists(ctx, "{psem-bad}:timeout").Val()).To(BeZero())
	})

	It("releases n ids all or none; a duplicate id counts once", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-many")
		Expect(sem.TrySetPermits(ctx, 3)).To(BeTrue())
		ids, err := sem.AcquireN(ctx, 3, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(sem.TryReleaseN(ctx, []string{ids[0], "ffff"})).To(Equal(0))
		Expect(sem.AvailablePermits(ctx)).To(BeZero())
		Expect(sem.ReleaseN(ctx, []string{ids[0], ids[0], ids[1]})).To(Succeed())
		Expect(sem.AvailablePermits(ctx)).To(Equal(2))
		Expect(sem.TryReleaseN(ctx, []string{ids[2]})).To(Equal(1))
	})

	It("publishes what Redisson's operations publish: setPermits the new total, addPermits the added count, a multi-release the count released", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-msgs")
		msgs := listen(e, "redisson_sc:{psem-msgs}")
		Expect(sem.SetPermits(ctx, 4)).To(Succeed())
		Expect(sem.SetPermits(ctx, 4)).To(Succeed())
		ids, err := sem.AcquireN(ctx, 3, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(sem.SetPermits(ctx, 5)).To(Succeed())
		Expect(sem.AddPermits(ctx, 2)).To(Succeed())
		Expect(sem.AddPermits(ctx, -1)).To(Succeed())
		Expect(sem.TryReleaseN(ctx, ids[:2])).To(Equal(2))
		Expect(sem.Release(ctx, ids[2])).To(Succeed())
		Expect(received(msgs, 200*time.Millisecond)).To(Equal([]string{
			"redisson_sc:{psem-msgs}=4", "redisson_sc:{psem-msgs}=5", "redisson_sc:{psem-msgs}=2",
			"redisson_sc:{psem-msgs}=2", "redisson_sc:{psem-msgs}=6"}))
		Expect(sem.AvailablePermits(ctx)).To(Equal(6))
	})

	It("expires, persists and deletes its counter and its permits taken together", func() {
		sem := e.Client().NewPermitExpirableSemaphore("psem-obj")
		Expect(sem.TrySetPermits(ctx, 2)).To(BeTrue())
		_, err := sem.Acquire(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(sem.Expire(ctx, time.Minute)).To(BeTrue())
		for _, k := range []string{"psem-obj", "{psem-obj}:timeout"} {
			Expect(e.Raw.PTTL(ctx, k).Val()).To(BeNumerically(">", 59*time.Second), k)
		}
		Expect(sem.ClearExpire(ctx)).To(BeTrue())
		Expect(e.Raw.PTTL(ctx, "{psem-obj}:timeout").Val()).To(BeEquivalentTo(-1))
		Expect(sem.Delete(ctx)).To(BeTrue())
		Expect(e.Raw.DBSize(ctx).Val()).To(BeZero())
		Expect(sem.IsExists(ctx)).To(BeFalse())
	})
})

var _ = Describe("CountDownLatch, the rest of Redisson's API", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("keeps the key of TrySetCount(0), as Redisson: open, but no new count until a CountDown or Delete removes it", func() {
		latch := e.Client().NewCountDownLatch("latch-zero")
		Expect(latch.TrySetCount(ctx, 0)).To(BeTrue())
		Expect(latch.Count(ctx)).To(BeZero())
		Expect(latch.IsExists(ctx)).To(BeTrue())
		Expect(latch.TryAwait(ctx, 0)).To(BeTrue(), "open")
		Expect(latch.TrySetCount(ctx, 3)).To(BeFalse(), "its key is there")
		Expect(latch.CountDown(ctx)).To(Succeed())
		Expect(latch.IsExists(ctx)).To(BeFalse(), "a count-down below zero removes the key")
		Expect(latch.TrySetCount(ctx, 3)).To(BeTrue())
		Expect(latch.Delete(ctx)).To(BeTrue())
		Expect(latch.TrySetCount(ctx, 2)).To(BeTrue())
	})

	It("wakes the awaiters of every goredisson client when the latch is deleted, publishing 1 as Redisson's delete does", func() {
		latch := e.Client().NewCountDownLatch("latch-del")
		Expect(latch.TrySetCount(ctx, 2)).To(BeTrue())
		msgs := listen(e, "redisson_countdownlatch__channel__{latch-del}")
		done := make(chan time.Time, 2)
		for range 2 {
			go func() {
				defer GinkgoRecover()
				Expect(e.Client().NewCountDownLatch("latch-del").Await(ctx)).To(Succeed())
				done <- time.Now()
			}()
		}
		Eventually(func() int64 { return e.NumSub("redisson_countdownlatch__channel__{latch-del}") }).Should(BeEquivalentTo(3))
		Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		deleted := time.Now()
		Expect(latch.Delete(ctx)).To(BeTrue())
		for range 2 {
			var at time.Time
			Eventually(done).WithTimeout(5 * time.Second).Should(Receive(&at))
			Expect(at.Sub(deleted)).To(BeNumerically("<", time.Second))
		}
		Expect(received(msgs, 200*time.Millisecond)).To(Equal([]string{"redisson_countdownlatch__channel__{latch-del}=1"}))
		Expect(latch.Delete(ctx)).To(BeFalse())
	})

	It("tries to await within a wait: false when it runs out, one look for a wait <= 0 or below 1 ms", func() {
		latch := e.Client().NewCountDownLatch("latch-try")
		Expect(latch.TryAwait(ctx, -1)).To(BeTrue(), "an open latch")
		Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
		Expect(latch.TryAwait(ctx, 0)).To(BeFalse())
		start := time.Now()
		Expect(latch.TryAwait(ctx, 200*time.Millisecond)).To(BeFalse())
		Expect(time.Since(start)).To(BeNumerically(">=", 200*time.Millisecond))
		Expect(latch.TryAwait(ctx, 10)).To(BeFalse(), "10ns is 0 ms: one look")
		go func() {
			defer GinkgoRecover()
			time.Sleep(100 * time.Millisecond)
			Expect(latch.CountDown(ctx)).To(Succeed())
		}()
		Expect(latch.TryAwait(ctx, 5*time.Second)).To(BeTrue())
		Expect(latch.Name()).To(Equal("latch-try"))
	})
})

var _ = Describe("Synchronizers on a Redis Cluster", Label("cluster"), func() {
	It("refuse a name whose auxiliary keys would land in other slots", func() {
		cl, err := redistest.StartCluster(3, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cl.Close)
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
		DeferCleanup(rdb.Close)
		c, err := rlock.NewClient(rdb)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		ctx := context.Background()
		_, err = c.NewPermitExpirableSemaphore("a}b").TrySetPermits(ctx, 1)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		sem := c.NewPermitExpirableSemaphore("{jobs}:42")
		Expect(sem.TrySetPermits(ctx, 2)).To(BeTrue())
		ids, err := sem.AcquireN(ctx, 2, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(sem.ReleaseN(ctx, ids)).To(Succeed())
		Expect(sem.Expire(ctx, time.Minute)).To(BeTrue())
		Expect(sem.Delete(ctx)).To(BeTrue())
	})
})
