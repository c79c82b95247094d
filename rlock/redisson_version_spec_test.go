package rlock_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("WithRedissonVersion and WithNameMapper", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})
	tenant := rlock.WithNameMapper(
		func(n string) string { return "tenant:" + n },
		func(n string) string { return strings.TrimPrefix(n, "tenant:") })

	DescribeTable("refuses at NewClient a release string it does not know",
		func(v string) {
			_, err := rlock.NewClient(e.RDB(), rlock.WithRedissonVersion(v))
			Expect(err).To(MatchError(rlock.ErrInvalidArgument))
			Expect(err.Error()).To(ContainSubstring("redisson version"))
		},
		Entry("empty", ""),
		Entry("no minor", "3"),
		Entry("not a number", "3.x"),
		Entry("a leading zero", "3.022"),
		Entry("four parts", "3.22.1.1"),
		Entry("before the oldest measured (3.18)", "3.17.9"),
		Entry("after the newest measured (4.7)", "4.8.0"),
	)

	DescribeTable("takes the releases it knows",
		func(v string) {
			c, err := rlock.NewClient(e.RDB(), rlock.WithRedissonVersion(v))
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Close()).To(Succeed())
		},
		Entry(nil, "3.18.1"), Entry(nil, "3.22"), Entry(nil, "redisson-4.7.0"), Entry(nil, "4.7.3"),
	)

	It("refuses sharded pub/sub with a release before 3.22.0, which never uses it", func() {
		_, err := rlock.NewClient(e.RDB(), rlock.WithRedissonVersion("3.21.3"), rlock.WithShardedPubSub(true))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		c, err := rlock.NewClient(e.RDB(), rlock.WithRedissonVersion("3.22.0"), rlock.WithShardedPubSub(true))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Close()).To(Succeed())
	})

	It("refuses a nil map or unmap function at NewClient", func() {
		_, err := rlock.NewClient(e.RDB(), rlock.WithNameMapper(nil, strings.ToLower))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = rlock.NewClient(e.RDB(), rlock.WithNameMapper(strings.ToLower, nil))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})

	It("keeps a lock, its channel and its holder under the mapped name, and Name the given one", func() {
		c := e.Client(tenant)
		name := spectest.UniqueName("mapped")
		l := c.NewLock(name)
		owner := ctxowner.New(ctx)
		Expect(l.Lock(owner)).To(Succeed())
		Expect(l.Name()).To(Equal(name))
		Expect(e.RDB().Exists(ctx, "tenant:"+name).Val()).To(Equal(int64(1)))
		Expect(e.RDB().Exists(ctx, name).Val()).To(Equal(int64(0)))
		// a waiter listens on the mapped name's channel
		other := ctxowner.New(ctx)
		got := make(chan error, 1)
		go func() { got <- l.Lock(other) }()
		Eventually(func() int64 { return e.NumSub("redisson_lock__channel:{tenant:" + name + "}") }).WithTimeout(5 * time.Second).Should(Equal(int64(1)))
		Expect(l.Unlock(owner)).To(Succeed())
		Eventually(got).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
		Expect(l.Unlock(other)).To(Succeed())
	})

	DescribeTable("puts a fair lock's queue where the release does",
		func(version, queue string) {
			opts := []rlock.Option{tenant}
			if version != "" {
				opts = append(opts, rlock.WithRedissonVersion(version))
			}
			c := e.Client(opts...)
			name := "{" + spectest.UniqueName("fairq") + "}"
			l := c.NewFairLock(name)
			owner := ctxowner.New(ctx)
			want := strings.ReplaceAll(queue, "N", name)
			Expect(l.Lock(owner)).To(Succeed())
			w := ctxowner.New(ctx)
			done := make(chan error, 1)
			go func() { done <- l.Lock(w) }()
			Eventually(func() int64 { return e.RDB().Exists(ctx, want).Val() }).WithTimeout(5*time.Second).Should(Equal(int64(1)), want)
			Expect(l.Unlock(owner)).To(Succeed())
			Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
			Expect(l.Unlock(w)).To(Succeed())
		},
		Entry("the newest: from the mapped name", "", "redisson_lock_queue:tenant:N"),
		Entry("3.52.0: from the mapped name", "3.52.0", "redisson_lock_queue:tenant:N"),
		Entry("3.50.0: from the unmapped name (#6759)", "3.50.0", "redisson_lock_queue:N"),
	)

	DescribeTable("keys a read-write lock where the release does",
		func(version, key string) {
			c := e.Client(tenant, rlock.WithRedissonVersion(version))
			name := spectest.UniqueName("rwmap")
			rw := c.NewReadWriteLock(name)
			owner := ctxowner.New(ctx)
			Expect(rw.ReadLock().Lock(owner)).To(Succeed())
			Expect(e.RDB().HGet(ctx, strings.ReplaceAll(key, "N", name), "mode").Val()).To(Equal("read"))
			Expect(rw.ReadLock().Unlock(owner)).To(Succeed())
		},
		Entry("3.20.1: mapped once", "3.20.1", "tenant:N"),
		Entry("3.18.1: mapped twice (#4925)", "3.18.1", "tenant:tenant:N"),
	)

	DescribeTable("keeps a permit semaphore's leases where the release does",
		func(version, timeouts string) {
			c := e.Client(tenant, rlock.WithRedissonVersion(version))
			name := spectest.UniqueName("psmap")
			p := c.NewPermitExpirableSemaphore(name)
			Expect(p.TrySetPermits(ctx, 1)).To(BeTrue())
			id, err := p.Acquire(ctx, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(e.RDB().Get(ctx, "tenant:"+name).Val()).To(Equal("0"))
			Expect(e.RDB().ZCard(ctx, strings.ReplaceAll(timeouts, "N", name)).Val()).To(Equal(int64(1)))
			Expect(p.Release(ctx, id)).To(Succeed())
		},
		Entry("3.19.1 on: from the mapped name", "3.20.1", "{tenant:N}:timeout"),
		Entry("3.18.1: from the unmapped name (#4708)", "3.18.1", "{N}:timeout"),
	)

	It("maps the synchronizers' keys and channels", func() {
		c := e.Client(tenant)
		name := spectest.UniqueName("syncmap")
		Expect(c.NewSemaphore(name).TrySetPermits(ctx, 3)).To(BeTrue())
		Expect(e.RDB().Get(ctx, "tenant:"+name).Val()).To(Equal("3"))
		l := c.NewCountDownLatch(name + ":latch")
		Expect(l.TrySetCount(ctx, 1)).To(BeTrue())
		Expect(e.RDB().Get(ctx, "tenant:"+name+":latch").Val()).To(Equal("1"))
		done := make(chan error, 1)
		go func() { done <- l.Await(ctx) }()
		Eventually(func() int64 { return e.NumSub("redisson_countdownlatch__channel__{tenant:" + name + ":latch}") }).WithTimeout(5 * time.Second).Should(Equal(int64(1)))
		Expect(l.CountDown(ctx)).To(Succeed())
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
		Expect(l.Name()).To(Equal(name + ":latch"))
	})

	It("refuses a name the mapper empties, or maps onto another name's key", func() {
		c := e.Client(rlock.WithNameMapper(
			func(n string) string {
				if n == "gone" {
					return ""
				}
				return "shared"
			},
			func(string) string { return "first" }))
		owner := ctxowner.New(ctx)
		err := c.NewLock("gone").Lock(owner)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(err.Error()).To(ContainSubstring("empty name"))
		err = c.NewLock("second").Lock(owner)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(err.Error()).To(ContainSubstring("two names would share a key"))
		_, err = c.NewSemaphore("gone").TryAcquire(ctx, 1, 0)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.RDB().Exists(ctx, "shared").Val()).To(Equal(int64(0)))
	})
})
