package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// aclType is one synchronizer type with the ACL rules docs/layout.md lists
// for it (names under app:), and an exercise: a takes it, b tries for it
// while it is taken (and with wake, waits until a's release wakes it), a
// releases, b takes and releases.
type aclType struct {
	what  string
	rules []string // ~key patterns and &channels
	run   func(a, b *rlock.Client, wake bool) error
}

var bg = context.Background()

// tryWhileTaken has b try for 300 ms (it subscribes) and, with wake, wait
// (on its own goroutine) until a's release wakes it.
func tryWhileTaken(try func(wait time.Duration) (bool, error), wait func() error, release func() error, wake bool) error {
	if !wake {
		ok, err := try(300 * time.Millisecond)
		if err != nil {
			return err
		}
		if ok {
			return errors.New("taken twice")
		}
		if err := release(); err != nil {
			return err
		}
		ok, err = try(0)
		if err == nil && !ok {
			err = errors.New("not free after the release")
		}
		return err
	}
	got := make(chan error, 1)
	go func() { got <- wait() }()
	select {
	case err := <-got:
		return fmt.Errorf("did not wait: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := release(); err != nil {
		return err
	}
	select {
	case err := <-got:
		return err
	case <-time.After(10 * time.Second):
		return errors.New("the waiter was not woken within 10 s of the release (the lease is 30 s)")
	}
}

// lockType exercises a lock: a holds mkA's lock, b waits on mkB's.
func lockType(mkA, mkB func(c *rlock.Client) rlock.Locker) func(a, b *rlock.Client, wake bool) error {
	return func(a, b *rlock.Client, wake bool) error {
		oa, ob := ctxowner.New(bg), ctxowner.New(bg)
		la, lb := mkA(a), mkB(b)
		if err := la.Lock(oa); err != nil {
			return err
		}
		err := tryWhileTaken(
			func(wait time.Duration) (bool, error) { return lb.TryLock(ob, wait, -1) },
			func() error { return lb.Lock(ob) },
			func() error { return la.Unlock(oa) }, wake)
		if err != nil {
			return err
		}
		return lb.Unlock(ob)
	}
}

func locker(mk func(c *rlock.Client) rlock.Locker) func(c *rlock.Client) rlock.Locker { return mk }

// The ACL rules of each type, for names under app: (docs/layout.md).
var aclTypes = []aclType{
	{"Lock", []string{"~app:*", "~goredisson_cancel:{app:*", "~redisson_lock__channel:{app:*", "&redisson_lock__channel:{app:*"},
		lockType(locker(func(c *rlock.Client) rlock.Locker { return c.NewLock("app:lock") }), func(c *rlock.Client) rlock.Locker { return c.NewLock("app:lock") })},
	{"NonReentrantLock", []string{"~app:*", "~goredisson_cancel:{app:*", "~redisson_lock__channel:{app:*", "&redisson_lock__channel:{app:*"},
		lockType(func(c *rlock.Client) rlock.Locker { return c.NewNonReentrantLock("app:nr") }, func(c *rlock.Client) rlock.Locker { return c.NewNonReentrantLock("app:nr") })},
	{"SpinLock", []string{"~app:*", "~goredisson_cancel:{app:*", "~redisson_lock__channel:{app:*"},
		lockType(func(c *rlock.Client) rlock.Locker { return c.NewSpinLock("app:spin") }, func(c *rlock.Client) rlock.Locker { return c.NewSpinLock("app:spin") })},
	{"FencedLock", []string{"~app:*", "~goredisson_cancel:{app:*", "~redisson_lock__channel:{app:*", "~redisson_lock_token:{app:*", "&redisson_lock__channel:{app:*"},
		lockType(func(c *rlock.Client) rlock.Locker { return c.NewFencedLock("app:fenced") }, func(c *rlock.Client) rlock.Locker { return c.NewFencedLock("app:fenced") })},
	{"FairLock", []string{"~app:*", "~goredisson_cancel:{app:*", "~redisson_lock__channel:{app:*", "~redisson_lock_queue:{app:*", "~redisson_lock_timeout:{app:*", "&redisson_lock__channel:{app:*"},
		lockType(func(c *rlock.Client) rlock.Locker { return c.NewFairLock("app:fair") }, func(c *rlock.Client) rlock.Locker { return c.NewFairLock("app:fair") })},
	{"NonReentrantFairLock", []string{"~app:*", "~goredisson_cancel:{app:*", "~redisson_lock__channel:{app:*", "~redisson_lock_queue:{app:*", "~redisson_lock_timeout:{app:*", "&redisson_lock__channel:{app:*"},
		lockType(func(c *rlock.Client) rlock.Locker { return c.NewNonReentrantFairLock("app:nrfair") }, func(c *rlock.Client) rlock.Locker { return c.NewNonReentrantFairLock("app:nrfair") })},
	{"ReadWriteLock", []string{"~app:*", "~{app:*", "~goredisson_cancel:{app:*", "~redisson_rwlock:{app:*", "&redisson_rwlock:{app:*"},
		lockType(func(c *rlock.Client) rlock.Locker { return c.NewReadWriteLock("app:rw").WriteLock() }, func(c *rlock.Client) rlock.Locker { return c.NewReadWriteLock("app:rw").ReadLock() })},
	{"FasterMultiLock", []string{"~app:*", "~goredisson_cancel:{app:*", "~redisson_lock__channel:{app:*", "&redisson_lock__channel:{app:*"},
		lockType(func(c *rlock.Client) rlock.Locker { return c.NewFasterMultiLock("app:group", "v1", "v2") }, func(c *rlock.Client) rlock.Locker { return c.NewFasterMultiLock("app:group", "v2") })},
	{"Semaphore", []string{"~app:*", "~redisson_sc:{app:*", "&redisson_sc:{app:*"},
		func(a, b *rlock.Client, wake bool) error {
			sa, sb := a.NewSemaphore("app:sem"), b.NewSemaphore("app:sem")
			if _, err := sa.TrySetPermits(bg, 1); err != nil {
				return err
			}
			if err := sa.Acquire(bg, 1); err != nil {
				return err
			}
			err := tryWhileTaken(
				func(wait time.Duration) (bool, error) { return sb.TryAcquire(bg, 1, wait) },
				func() error { return sb.Acquire(bg, 1) },
				func() error { return sa.Release(bg, 1) }, wake)
			if err != nil {
				return err
			}
			return sb.Release(bg, 1)
		}},
	{"PermitExpirableSemaphore", []string{"~app:*", "~{app:*", "~goredisson_cancel:{app:*", "~redisson_sc:{app:*", "&redisson_sc:{app:*"},
		func(a, b *rlock.Client, wake bool) error {
			pa, pb := a.NewPermitExpirableSemaphore("app:pes"), b.NewPermitExpirableSemaphore("app:pes")
			if _, err := pa.TrySetPermits(bg, 1); err != nil {
				return err
			}
			ida, err := pa.Acquire(bg, -1)
			if err != nil {
				return err
			}
			var idb string
			err = tryWhileTaken(
				func(wait time.Duration) (bool, error) {
					var ok bool
					var err error
					idb, ok, err = pb.TryAcquire(bg, wait, -1)
					return ok, err
				},
				func() (err error) { idb, err = pb.Acquire(bg, -1); return err },
				func() error { return pa.Release(bg, ida) }, wake)
			if err != nil {
				return err
			}
			return pb.Release(bg, idb)
		}},
	{"CountDownLatch", []string{"~app:*", "~redisson_countdownlatch__channel__{app:*", "&redisson_countdownlatch__channel__{app:*"},
		func(a, b *rlock.Client, wake bool) error {
			la, lb := a.NewCountDownLatch("app:latch"), b.NewCountDownLatch("app:latch")
			if _, err := la.TrySetCount(bg, 1); err != nil {
				return err
			}
			return tryWhileTaken(
				func(wait time.Duration) (bool, error) { return lb.TryAwait(bg, wait) },
				func() error { return lb.Await(bg) },
				func() error { return la.CountDown(bg) }, wake)
		}},
}

var refusedKeys = regexp.MustCompile(`may not access key ([^;]+);`)

var _ = Describe("an ACL user granted exactly the rules docs/layout.md lists (names under app:)", func() {
	for _, t := range aclTypes {
		Context(t.what, func() {
			var e *spectest.Env
			BeforeEach(func() { e = spectest.NewEnv() })
			// users returns two Clients, each as a user granted rules, and
			// both Clients' logs.
			users := func(rules []string) (a, b *rlock.Client, logs func() string) {
				GinkgoHelper()
				all := append([]string{"resetchannels", "+@scripting", "+@pubsub", "+@read", "+@write", "+@connection", "+time"}, rules...)
				a, _, la := aclUser(e, all...)
				b, _, lb := aclUserNamed(e, "b", all...)
				return a, b, func() string { return la.String() + lb.String() }
			}

			It("works, and a release wakes a waiter on another Client", func() {
				a, b, logs := users(t.rules)
				Expect(t.run(a, b, true)).To(Succeed())
				Expect(logs()).To(BeEmpty())
			})

			for i, dropped := range t.rules {
				It(fmt.Sprintf("names what is missing without %s", dropped), func() {
					rules := append(append([]string{}, t.rules[:i]...), t.rules[i+1:]...)
					a, b, logs := users(rules)
					err := t.run(a, b, false)
					pattern := dropped[1:]
					if dropped[0] == '&' {
						// Releases still take effect; the warning names a
						// channel of the pattern.
						Expect(err).NotTo(HaveOccurred())
						Eventually(logs).Should(ContainSubstring(strings.TrimSuffix(pattern, "*")))
						return
					}
					Expect(err).To(HaveOccurred())
					m := refusedKeys.FindStringSubmatch(err.Error())
					Expect(m).NotTo(BeNil(), err.Error())
					named := false
					for _, k := range strings.Split(m[1], ", ") {
						if ok, _ := path.Match(pattern, k); ok {
							named = true
						}
					}
					Expect(named).To(BeTrue(), "the error names a key of %s: %v", pattern, err)
				})
			}
		})
	}
})
