package rlock_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// An ErrNotHeld says whose call it was and who holds the lock, so that the
// log line of a refused Unlock is enough to tell a bug (another goroutine,
// another request's owner) from a lost lease (nobody, another client).
var _ = Describe("ErrNotHeld's message", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	// notHeld checks err's shape and returns its message.
	notHeld := func(err error, op, name string) string {
		GinkgoHelper()
		Expect(err).To(MatchError(rlock.ErrNotHeld))
		var re *rlock.Error
		Expect(errors.As(err, &re)).To(BeTrue(), "an *rlock.Error")
		Expect(re.Op).To(Equal(op))
		Expect(re.Lock).To(Equal(name))
		return err.Error()
	}

	It("names the caller's owner and says nobody holds a free lock", func() {
		lock := e.Client().NewLock("nh:free")
		msg := notHeld(lock.Unlock(ctxowner.WithID(ctx, "job-7")), "unlock", "nh:free")
		Expect(msg).To(Equal(`goredisson: unlock "nh:free": lock not held by this owner (owner "ctx:job-7"; nobody holds it)`))
	})

	It("names the goroutine as the owner when ctx carries none", func() {
		lock := e.Client().NewLock("nh:goroutine")
		var err error
		var owner string
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner = ctxowner.Of(ctx)
			err = lock.Unlock(ctx)
		}()
		wg.Wait()
		_, convErr := strconv.ParseUint(owner, 10, 64)
		Expect(convErr).NotTo(HaveOccurred(), "a goroutine's owner is its number")
		Expect(notHeld(err, "unlock", "nh:goroutine")).To(ContainSubstring(`(owner "` + owner + `"; nobody holds it)`))
	})

	It("names the holder when another owner of the same Client holds the lock", func() {
		c := e.Client()
		Expect(c.NewLock("nh:same").Lock(ctxowner.WithID(ctx, "job-8"))).To(Succeed())
		msg := notHeld(c.NewLock("nh:same").Unlock(ctxowner.WithID(ctx, "job-7")), "unlock", "nh:same")
		Expect(msg).To(HaveSuffix(`lock not held by this owner (owner "ctx:job-7"; held by owner "ctx:job-8" of this client)`))
	})

	It("names the other Client by its id when another Client holds the lock", func() {
		other := e.Client()
		Expect(other.NewFairLock("nh:other").Lock(ctxowner.WithID(ctx, "job-8"))).To(Succeed())
		msg := notHeld(e.Client().NewFairLock("nh:other").Unlock(ctxowner.WithID(ctx, "job-7")), "unlock", "nh:other")
		Expect(msg).To(HaveSuffix(`(owner "ctx:job-7"; held by owner "ctx:job-8" of another client, ` + other.ID() + `)`))
	})

	It("names the writer of a read-write lock, and counts the readers", func() {
		c := e.Client()
		rw := c.NewReadWriteLock("nh:rw")
		Expect(rw.WriteLock().Lock(ctxowner.WithID(ctx, "w"))).To(Succeed())
		msg := notHeld(rw.WriteLock().Unlock(ctxowner.WithID(ctx, "job-7")), "writeunlock", "nh:rw")
		Expect(msg).To(HaveSuffix(`(owner "ctx:job-7"; held by owner "ctx:w" of this client (the writer))`))
		Expect(rw.WriteLock().Unlock(ctxowner.WithID(ctx, "w"))).To(Succeed())

		for _, r := range []string{"r1", "r2", "r3", "r4"} {
			Expect(rw.ReadLock().Lock(ctxowner.WithID(ctx, r))).To(Succeed())
		}
		msg = notHeld(rw.ReadLock().Unlock(ctxowner.WithID(ctx, "job-7")), "readunlock", "nh:rw")
		Expect(msg).To(HaveSuffix(`(owner "ctx:job-7"; held by 4 owners: owner "ctx:r1" of this client, owner "ctx:r2" of this client, owner "ctx:r3" of this client and 1 more)`))
	})

	It("names the owner and the holder on Extend too", func() {
		c := e.Client()
		Expect(c.NewLock("nh:extend").LockLease(ctxowner.WithID(ctx, "job-8"), time.Minute)).To(Succeed())
		msg := notHeld(c.NewLock("nh:extend").Extend(ctxowner.WithID(ctx, "job-7"), time.Minute), "extend", "nh:extend")
		Expect(msg).To(HaveSuffix(`(owner "ctx:job-7"; held by owner "ctx:job-8" of this client)`))
	})

	It("says the key is not a lock when another application wrote a hash there", func() {
		Expect(e.Raw.HSet(ctx, "nh:app", "name", "ann").Err()).To(Succeed())
		msg := notHeld(e.Client().NewLock("nh:app").Unlock(ctxowner.WithID(ctx, "job-7")), "unlock", "nh:app")
		Expect(msg).To(ContainSubstring(`(owner "ctx:job-7"; its key is not a lock: `))
	})

	It("reads who holds the lock only when the call fails: a successful Unlock sends one script", func() {
		lock := e.Client().NewLock("nh:success")
		owner := ctxowner.WithID(ctx, "job-7")
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(e.Raw.ConfigResetStat(ctx).Err()).To(Succeed())
		Expect(lock.Unlock(owner)).To(Succeed())
		calls := e.CommandCalls()
		Expect(calls).To(HaveKeyWithValue("evalsha", 1), "the release script")
		Expect(calls).NotTo(Or(HaveKey("type"), HaveKey("hscan"), HaveKey("pttl")), "and no read of the lock")

		Expect(e.Raw.ConfigResetStat(ctx).Err()).To(Succeed())
		Expect(lock.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		Expect(e.CommandCalls()).To(And(HaveKey("type"), HaveKey("pttl")), "the failure path reads the lock")
	})
})
