package rlock_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// logBuffer collects a Client's log lines (slog's text format) for specs
// that check a warning.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// count returns how many lines contain s.
func (b *logBuffer) count(s string) int {
	n := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// aclUser creates a Redis ACL user with the given rules (after "on >pw
// resetkeys resetchannels"), deleted at cleanup, and returns a goredisson
// Client logged in as that user, with its logs.
func aclUser(e *spectest.Env, rules ...string) (*rlock.Client, *redis.Client, *logBuffer) {
	GinkgoHelper()
	return aclUserNamed(e, "a", rules...)
}

// aclUserNamed is aclUser for a second user of the same spec (suffix
// tells them apart).
func aclUserNamed(e *spectest.Env, suffix string, rules ...string) (*rlock.Client, *redis.Client, *logBuffer) {
	GinkgoHelper()
	ctx := context.Background()
	user := fmt.Sprintf("acl%d%s", GinkgoParallelProcess(), suffix)
	args := []any{"acl", "setuser", user, "reset", "on", ">pw"}
	for _, r := range rules {
		args = append(args, r)
	}
	Expect(e.Raw.Do(ctx, args...).Err()).To(Succeed())
	DeferCleanup(func() { e.Raw.Do(context.Background(), "acl", "deluser", user) })
	logs := &logBuffer{}
	c, rdb := spectest.ClientWith(&redis.Options{Addr: spectest.Server().Addr, Username: user, Password: "pw"}, rlock.WithLogger(logs.logger()))
	return c, rdb, logs
}

var _ = Describe("an ACL user without channel permissions (resetchannels)", func() {
	var e *spectest.Env
	BeforeEach(func() { e = spectest.NewEnv() })

	It("unlocks every lock kind with nil when the release took effect, and warns once that it could not publish", func() {
		c, _, logs := aclUser(e, "~*", "resetchannels", "+@all")
		ctx := ctxowner.New(context.Background())
		locks := map[string]rlock.Locker{
			"lock":      c.NewLock("acl:lock"),
			"fair":      c.NewFairLock("acl:fair"),
			"nonre":     c.NewNonReentrantLock("acl:nonre"),
			"fenced":    c.NewFencedLock("acl:fenced"),
			"read":      c.NewReadWriteLock("acl:rw").ReadLock(),
			"write":     c.NewReadWriteLock("acl:rw2").WriteLock(),
			"faster":    c.NewFasterMultiLock("acl:faster", "a", "b"),
			"nonrefair": c.NewNonReentrantFairLock("acl:nonrefair"),
		}
		for what, l := range locks {
			Expect(l.Lock(ctx)).To(Succeed(), what)
			Expect(l.Unlock(ctx)).To(Succeed(), what)
			Expect(l.IsLocked(ctx)).To(BeFalse(), what)
		}
		// Force unlocks publish too.
		for what, l := range locks {
			if what == "faster" {
				continue // its force unlock frees the group; checked below
			}
			Expect(l.Lock(ctx)).To(Succeed(), what)
			ok, err := l.ForceUnlock(ctx)
			Expect(err).NotTo(HaveOccurred(), what)
			Expect(ok).To(BeTrue(), what)
		}

		sem := c.NewSemaphore("acl:sem")
		Expect(sem.TrySetPermits(ctx, 1)).To(BeTrue())
		Expect(sem.Acquire(ctx, 1)).To(Succeed())
		Expect(sem.Release(ctx, 1)).To(Succeed())
		Expect(sem.AddPermits(ctx, 2)).To(Succeed())
		Expect(sem.AvailablePermits(ctx)).To(Equal(3))

		pes := c.NewPermitExpirableSemaphore("acl:pes")
		Expect(pes.TrySetPermits(ctx, 1)).To(BeTrue())
		id, err := pes.Acquire(ctx, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(pes.Release(ctx, id)).To(Succeed())
		Expect(pes.AvailablePermits(ctx)).To(Equal(1))

		latch := c.NewCountDownLatch("acl:latch")
		Expect(latch.TrySetCount(ctx, 1)).To(BeTrue())
		Expect(latch.CountDown(ctx)).To(Succeed())
		Expect(latch.Count(ctx)).To(BeZero())

		Eventually(logs.String).Should(ContainSubstring("may not publish"))
		Expect(logs.count("may not publish")).To(Equal(1), logs.String())
	})

	It("has a waiter whose subscription was refused poll, so it takes the lock soon after the unlock, and warns once naming the channel", func() {
		c, _, logs := aclUser(e, "~*", "resetchannels", "+@all")
		owner := ctxowner.New(context.Background())
		lock := c.NewLock("acl:poll")
		Expect(lock.LockLease(owner, 20*time.Second)).To(Succeed())
		got := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			got <- lock.Lock(ctxowner.New(context.Background()))
		}()
		// The refusal is reported at once, naming the channel.
		Eventually(logs.String).WithTimeout(2 * time.Second).Should(ContainSubstring("redisson_lock__channel:{acl:poll}"))
		Expect(logs.count("subscription refused")).To(Equal(1), logs.String())
		// Past the subscription's 3 s confirmation timeout, so that the
		// waiter has made its attempt after it and gone to sleep.
		Consistently(got).WithTimeout(4 * time.Second).ShouldNot(Receive())
		Expect(lock.Unlock(owner)).To(Succeed())
		unlocked := time.Now()
		// No message wakes it; it polls (every second) rather than sleeping
		// out the 20 s lease it saw.
		Eventually(got).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(time.Since(unlocked)).To(BeNumerically("<", 10*time.Second))
	})
})
