package rlock_test

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// The value fields of Redisson's RedissonFasterMultiLock for "Jack_001" and
// "Mary_002" (StringCodec), as Redisson's own Hash.hash128toBase64 printed
// them.
const (
	jackField = "7pNoDdizVy2xY792MaFv+w"
	maryField = "kIX2DFOX4IWct7G7K6tV9A"
)

var _ = Describe("FasterMultiLock", func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})
	serverMillis := func() int64 {
		t, err := e.Raw.Time(ctx).Result()
		Expect(err).NotTo(HaveOccurred())
		return t.UnixMilli()
	}
	fieldInt := func(key, field string) int64 {
		n, err := e.Raw.HGet(ctx, key, field).Int64()
		Expect(err).NotTo(HaveOccurred(), "HGET %s %s", key, field)
		return n
	}

	It("holds its values in Redisson's layout: one group hash, a field per value naming the holder, its expire_time and lock_count", func() {
		c := e.Client()
		lock := c.NewFasterMultiLock("class_100", "Jack_001", "Mary_002", "Jack_001")
		Expect(lock.Name()).To(Equal("class_100"))
		owner := ctxowner.WithID(ctx, "1")
		holder := c.ID() + ":ctx:1"
		Expect(lock.Lock(owner)).To(Succeed())
		all := e.Raw.HGetAll(ctx, "class_100").Val()
		Expect(all).To(HaveLen(6), "three fields per value, a duplicate value once: %v", all)
		for _, f := range []string{jackField, maryField} {
			Expect(all).To(HaveKeyWithValue(f, holder))
			Expect(all).To(HaveKeyWithValue(f+":"+holder+":lock_count", "1"))
			Expect(fieldInt("class_100", f+":"+holder+":expire_time")).To(BeNumerically("~", serverMillis()+30000, 2000))
		}
		Expect(e.Raw.PTTL(ctx, "class_100").Val()).To(BeNumerically("~", 30*time.Second, 2*time.Second))
		Expect(lock.HoldCount(owner)).To(Equal(1))
		Expect(lock.IsHeldByCurrent(owner)).To(BeTrue())
		Expect(lock.IsLocked(ctx)).To(BeTrue())
		Expect(lock.RemainTTL(ctx)).To(BeNumerically("~", 30*time.Second, 2*time.Second))

		Expect(lock.Lock(owner)).To(Succeed())
		Expect(fieldInt("class_100", jackField+":"+holder+":lock_count")).To(BeEquivalentTo(2))
		Expect(lock.HoldCount(owner)).To(Equal(2))
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(lock.HoldCount(owner)).To(Equal(1))
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(e.Raw.Exists(ctx, "class_100").Val()).To(BeZero(), "every field gone, so the hash")
		Expect(lock.IsLocked(ctx)).To(BeFalse())
		Expect(lock.RemainTTL(ctx)).To(BeZero())
		Expect(lock.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
	})

	It("takes all its values or none: a value another owner holds fails the attempt and writes nothing", func() {
		c := e.Client()
		jack := c.NewFasterMultiLock("class_101", "Jack_001")
		both := e.Client().NewFasterMultiLock("class_101", "Jack_001", "Mary_002")
		mary := e.Client().NewFasterMultiLock("class_101", "Mary_002")
		a, b := ctxowner.New(ctx), ctxowner.New(ctx)
		Expect(jack.LockLease(a, time.Minute)).To(Succeed())
		before := e.Raw.HGetAll(ctx, "class_101").Val()
		Expect(both.TryLock(b, 0, 0)).To(BeFalse())
		Expect(both.TryLock(b, 200*time.Millisecond, 0)).To(BeFalse())
		Expect(e.Raw.HGetAll(ctx, "class_101").Val()).To(Equal(before), "nothing written for Mary_002")
		Expect(mary.TryLock(b, 0, 0)).To(BeTrue(), "a value nobody holds, in the same group")
		Expect(both.IsLocked(ctx)).To(BeTrue())
		Expect(both.HoldCount(a)).To(BeZero(), "a holds one of the two values only")
		Expect(both.Unlock(a)).To(MatchError(rlock.ErrNotHeld))
		Expect(fieldInt("class_101", jackField+":"+c.ID()+":"+ctxowner.Of(a)+":lock_count")).To(BeEquivalentTo(1), "the refused Unlock changed nothing")
		Expect(jack.Unlock(a)).To(Succeed())
		Expect(mary.Unlock(b)).To(Succeed())
		Expect(both.TryLock(b, 0, 0)).To(BeTrue())
		Expect(both.Unlock(b)).To(Succeed())
	})

	It("keeps a counter exact across 2 Clients x 8 owners locking overlapping values of one group", func() {
		i := 0
		n := guardCounter(e, 15, func(c *rlock.Client) rlock.Locker {
			i++
			// Every lock holds "shared", so any two exclude each other.
			return c.NewFasterMultiLock("counter-group", "shared", "own-"+strconv.Itoa(i))
		})
		Expect(n).To(Equal(240))
		Expect(e.Raw.Exists(ctx, "counter-group").Val()).To(BeZero())
	})

	It("wakes a waiter of another Client with the unlock message every unlock publishes on redisson_lock__channel:{group}", func() {
		lock := e.Client().NewFasterMultiLock("class_102", "Jack_001", "Mary_002")
		msgs := listen(e, spectest.LockChannel("class_102"))
		holder := ctxowner.New(ctx)
		Expect(lock.Lock(holder)).To(Succeed())
		Expect(lock.Lock(holder)).To(Succeed())
		got := make(chan time.Time, 1)
		go func() {
			defer GinkgoRecover()
			Expect(e.Client().NewFasterMultiLock("class_102", "Mary_002").Lock(ctxowner.New(ctx))).To(Succeed())
			got <- time.Now()
		}()
		Eventually(func() int64 { return e.NumSub(spectest.LockChannel("class_102")) }).Should(BeEquivalentTo(2))
		Expect(lock.Unlock(holder)).To(Succeed())
		Consistently(got).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "one hold left")
		unlocked := time.Now()
		Expect(lock.Unlock(holder)).To(Succeed())
		var at time.Time
		Eventually(got).WithTimeout(5 * time.Second).Should(Receive(&at))
		Expect(at.Sub(unlocked)).To(BeNumerically("<", time.Second))
		Expect(received(msgs, 200*time.Millisecond)).To(Equal([]string{
			spectest.LockChannel("class_102") + "=0", spectest.LockChannel("class_102") + "=0"}), "a message for each unlock, as Redisson's")
	})

	It("renews every value's expire_time while held with the watchdog, and ends LostContext when forced out", Label("slow"), func() {
		c := e.Client(rlock.WithWatchdogTimeout(time.Second))
		lock := c.NewFasterMultiLock("class_103", "Jack_001", "Mary_002")
		holder := ctxowner.New(ctx)
		Expect(lock.Lock(holder)).To(Succeed())
		field := jackField + ":" + c.ID() + ":" + ctxowner.Of(holder) + ":expire_time"
		first := fieldInt("class_103", field)
		Eventually(func() int64 { return fieldInt("class_103", field) }).WithTimeout(3 * time.Second).Should(BeNumerically(">", first))
		time.Sleep(1500 * time.Millisecond) // past the first lease
		Expect(e.Client().NewFasterMultiLock("class_103", "Mary_002").TryLock(ctxowner.New(ctx), 0, 0)).To(BeFalse())
		lctx, stop := rlock.LostContext(holder, lock)
		defer stop()
		Expect(lock.ForceUnlock(ctx)).To(BeTrue())
		Eventually(lctx.Done()).WithTimeout(3 * time.Second).Should(BeClosed())
		Expect(context.Cause(lctx)).To(MatchError(rlock.ErrLockLost))
		Expect(lock.ForceUnlock(ctx)).To(BeFalse())
	})

	It("lets a fixed lease run out at each value's expire_time, and starts a value taken afresh at one hold", Label("slow"), func() {
		c := e.Client()
		// Another value of the group, held for a minute, keeps the hash
		// alive past a's hold: its fields stay behind when it expires.
		Expect(c.NewFasterMultiLock("class_104", "Other_003").LockLease(ctxowner.New(ctx), time.Minute)).To(Succeed())
		lock := c.NewFasterMultiLock("class_104", "Jack_001")
		a := ctxowner.New(ctx)
		Expect(lock.LockLease(a, 1500*time.Millisecond)).To(Succeed())
		other := e.Client().NewFasterMultiLock("class_104", "Jack_001", "Mary_002")
		b := ctxowner.New(ctx)
		Expect(other.TryLock(b, 6*time.Second, 0)).To(BeTrue(), "in once a's hold expired")
		Expect(lock.Unlock(a)).To(MatchError(rlock.ErrNotHeld))
		aField := jackField + ":" + c.ID() + ":" + ctxowner.Of(a)
		Expect(e.Raw.HExists(ctx, "class_104", aField+":lock_count").Val()).To(BeFalse(), "the expired holder's fields are gone")
		Expect(other.Unlock(b)).To(Succeed())
		Expect(lock.Lock(a)).To(Succeed())
		Expect(lock.HoldCount(a)).To(Equal(1))
		Expect(lock.Unlock(a)).To(Succeed())
		Expect(lock.IsLocked(ctx)).To(BeFalse(), "one Unlock frees a value taken once")
		Expect(e.Raw.HLen(ctx, "class_104").Val()).To(BeEquivalentTo(3), "only Other_003's fields are left")
	})

	It("keeps the holds of two value sets of one group and one owner apart", func() {
		c := e.Client()
		owner := ctxowner.New(ctx)
		jack := c.NewFasterMultiLock("class_105", "Jack_001")
		mary := c.NewFasterMultiLock("class_105", "Mary_002")
		Expect(jack.Lock(owner)).To(Succeed())
		Expect(mary.Lock(owner)).To(Succeed())
		Expect(jack.HoldCount(owner)).To(Equal(1))
		Expect(mary.HoldCount(owner)).To(Equal(1))
		Expect(jack.Unlock(owner)).To(Succeed())
		Expect(jack.IsLocked(ctx)).To(BeFalse())
		Expect(mary.IsHeldByCurrent(owner)).To(BeTrue())
		lctx, stop := rlock.LostContext(owner, mary)
		defer stop()
		Consistently(lctx.Done()).WithTimeout(200 * time.Millisecond).ShouldNot(BeClosed())
		Expect(mary.Unlock(owner)).To(Succeed())
		m, err := rlock.NewMultiLock(jack, mary)
		Expect(err).NotTo(HaveOccurred(), "two value sets of one group are two locks")
		Expect(m.Lock(owner)).To(Succeed())
		Expect(m.Unlock(owner)).To(Succeed())
	})

	It("refuses a lock without values or group, changing nothing", func() {
		c := e.Client()
		Expect(c.NewFasterMultiLock("class_106").Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		Expect(c.NewFasterMultiLock("", "Jack_001").Lock(ctx)).To(MatchError(rlock.ErrInvalidArgument))
		_, err := c.NewFasterMultiLock("class_106").IsLocked(ctx)
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		_, err = rlock.Inspect(ctx, c.NewFasterMultiLock("class_106", "Jack_001"))
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
		Expect(e.Raw.DBSize(ctx).Val()).To(BeZero())
	})
})

var _ = Describe("FasterMultiLock waiters for other values of one group", func() {
	It("wake one per value set on an unlock message, so the waiter whose values it freed goes in at once", func() {
		e := spectest.NewEnv()
		ctx := context.Background()
		holders := e.Client()
		jack, mary := holders.NewFasterMultiLock("class_200", "Jack_001"), holders.NewFasterMultiLock("class_200", "Mary_002")
		hj, hm := ctxowner.New(ctx), ctxowner.New(ctx)
		Expect(jack.Lock(hj)).To(Succeed())
		Expect(mary.Lock(hm)).To(Succeed())

		waiters := e.Client()
		// The waiter for Mary_002 blocks first (it is the longest blocked,
		// the one a wake-one message would wake), then the one for Jack_001.
		maryDone := make(chan error, 1)
		go func() { maryDone <- waiters.NewFasterMultiLock("class_200", "Mary_002").Lock(ctxowner.New(ctx)) }()
		Eventually(func() int64 { return e.NumSub(spectest.LockChannel("class_200")) }).Should(BeEquivalentTo(1))
		time.Sleep(200 * time.Millisecond)
		jackDone := make(chan time.Time, 1)
		go func() {
			defer GinkgoRecover()
			Expect(waiters.NewFasterMultiLock("class_200", "Jack_001").Lock(ctxowner.New(ctx))).To(Succeed())
			jackDone <- time.Now()
		}()
		time.Sleep(300 * time.Millisecond)
		unlocked := time.Now()
		Expect(jack.Unlock(hj)).To(Succeed())
		var at time.Time
		Eventually(jackDone).WithTimeout(5 * time.Second).Should(Receive(&at))
		Expect(at.Sub(unlocked)).To(BeNumerically("<", time.Second))
		Consistently(maryDone).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "Mary_002 is still held")
		Expect(mary.Unlock(hm)).To(Succeed())
		Eventually(maryDone).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
	})
})
