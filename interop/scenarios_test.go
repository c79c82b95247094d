package interop_test

// Scenarios shared by both suites: each runs with goredisson on one side and
// a Redisson client on the other, the real one (probe) or the emulator.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// world is one scenario's setting.
type world struct {
	e   *env
	j   redissonSide
	g   *rlock.Client
	ctx context.Context // ends when the spec does
	bg  sync.WaitGroup  // goredisson calls running in the background
}

// newWorld makes a spec's world with the Redisson side made by side.
func newWorld(side func(e *env) redissonSide) *world {
	GinkgoHelper()
	e := newEnv()
	w := &world{e: e, j: side(e), g: e.goClient()}
	ctx, cancel := context.WithCancel(context.Background())
	// At the end: cancel what still waits, then let it return before the
	// clients close.
	DeferCleanup(func() {
		done := make(chan struct{})
		go func() {
			w.bg.Wait()
			close(done)
		}()
		Eventually(done).WithTimeout(30*time.Second).Should(BeClosed(), "goredisson calls still running after their context ended")
	})
	DeferCleanup(cancel)
	w.ctx = ctx
	return w
}

// emulated is the emulator side of the unlabelled suite. Its watchdog is
// the probe's, so that both suites run the same scenarios alike.
func emulated(e *env) redissonSide {
	return e.newEmuSide(emuWatchdog(javaWatchdog * time.Millisecond))
}

// realRedisson is the real Redisson of the probe suite.
func realRedisson(*env) redissonSide { return javaSide() }

// owner returns a fresh goredisson owner and its hash field (plus suffix).
func (w *world) owner(suffix string) (context.Context, string) {
	ctx := ctxowner.New(w.ctx)
	return ctx, w.g.ID() + ":" + ctxowner.Of(ctx) + suffix
}

// hget reads one field of a lock hash ("" when absent).
func (w *world) hget(key, field string) string {
	GinkgoHelper()
	v, err := w.e.raw.HGet(context.Background(), key, field).Result()
	if err == redis.Nil {
		return ""
	}
	Expect(err).NotTo(HaveOccurred())
	return v
}

// pttl reads a key's PTTL in ms.
func (w *world) pttl(key string) int64 {
	GinkgoHelper()
	d, err := w.e.raw.Do(context.Background(), "pttl", key).Int64()
	Expect(err).NotTo(HaveOccurred())
	return d
}

// kind is one lock type, as both clients name it.
type kind struct {
	title  string                                          // Go type, for spec names
	cmd    string                                          // the probe's command prefix
	goLock func(c *rlock.Client, name string) rlock.Locker // goredisson's lock
	suffix string                                          // hash field suffix of a holder
}

func (k kind) fair() bool     { return k.cmd == "fair" }
func (k kind) spin() bool     { return k.cmd == "spin" }
func (k kind) rw() bool       { return k.cmd == "read" || k.cmd == "write" }
func (k kind) String() string { return k.title }

var (
	kLock   = kind{"Lock", "", func(c *rlock.Client, n string) rlock.Locker { return c.NewLock(n) }, ""}
	kFair   = kind{"FairLock", "fair", func(c *rlock.Client, n string) rlock.Locker { return c.NewFairLock(n) }, ""}
	kFenced = kind{"FencedLock", "fenced", func(c *rlock.Client, n string) rlock.Locker { return c.NewFencedLock(n) }, ""}
	kSpin   = kind{"SpinLock", "spin", func(c *rlock.Client, n string) rlock.Locker { return c.NewSpinLock(n) }, ""}
	kWrite  = kind{"ReadWriteLock (write)", "write", func(c *rlock.Client, n string) rlock.Locker {
		return c.NewReadWriteLock(n).WriteLock()
	}, ":write"}
	kRead = kind{"ReadWriteLock (read)", "read", func(c *rlock.Client, n string) rlock.Locker {
		return c.NewReadWriteLock(n).ReadLock()
	}, ""}
	// exclusive are the kinds where one holder excludes every other.
	exclusive = []kind{kLock, kFair, kFenced, kSpin, kWrite}
)

// channel is where a waiter of kind k with field waits for its message
// ("" for a spin lock: its waiters never subscribe).
func (k kind) channel(name, field string) string {
	switch {
	case k.spin():
		return ""
	case k.rw():
		return "redisson_rwlock:{" + name + "}"
	case k.fair():
		return "redisson_lock__channel:{" + name + "}:" + field
	}
	return "redisson_lock__channel:{" + name + "}"
}

// heldAnswer reports whether a probe answer to a lock command means held.
func heldAnswer(a string) bool { return a == "ok" || strings.HasPrefix(a, "token ") }

// acq is the outcome of a goredisson acquisition started in the background.
type acq struct {
	held bool
	err  error
	at   time.Time
}

// goAcquire runs a goredisson acquisition in the background.
func (w *world) goAcquire(f func() error) <-chan acq {
	out := make(chan acq, 1)
	w.goBg(func() {
		err := f()
		out <- acq{held: err == nil, err: err, at: time.Now()}
	})
	return out
}

// goBg runs f on a goroutine that the spec's cleanup waits for.
func (w *world) goBg(f func()) {
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		defer GinkgoRecover()
		f()
	}()
}

// received waits up to d for the background acquisition and expects it
// held.
func received(ch <-chan acq, d time.Duration, what string) acq {
	GinkgoHelper()
	var a acq
	Eventually(ch).WithTimeout(d).Should(Receive(&a), "%s did not get the lock within %v", what, d)
	Expect(a.err).NotTo(HaveOccurred(), what)
	Expect(a.held).To(BeTrue(), what)
	return a
}

// answerWithin waits up to d for a probe call's answer and returns it.
func answerWithin(c *pcall, d time.Duration, what string) string {
	GinkgoHelper()
	out, err := c.wait(d)
	Expect(err).NotTo(HaveOccurred(), "%s: no answer within %v", what, d)
	return out
}

// awaitGoWaiting returns once a goredisson waiter of kind k with field is
// waiting: queued and subscribed, or (spin) retrying.
func (w *world) awaitGoWaiting(k kind, name, field string) {
	GinkgoHelper()
	if k.fair() {
		w.awaitQueued(name, field)
	}
	if ch := k.channel(name, strings.TrimSuffix(field, ":write")); ch != "" {
		awaitSubscribed(ch)
	}
	time.Sleep(100 * time.Millisecond)
}

// awaitJavaWaiting returns once a Redisson waiter of kind k is waiting.
func (w *world) awaitJavaWaiting(k kind, name, field string) {
	GinkgoHelper()
	if k.fair() {
		w.awaitQueued(name, field)
	}
	if ch := k.channel(name, field); ch != "" {
		w.j.awaitBlocked(ch, 1)
		return
	}
	time.Sleep(300 * time.Millisecond)
}

// fairQueue reads a fair lock's queue and its waiters' timeouts.
func (w *world) fairQueue(name string) ([]string, map[string]int64) {
	GinkgoHelper()
	ctx := context.Background()
	q, err := w.e.raw.LRange(ctx, "redisson_lock_queue:{"+name+"}", 0, -1).Result()
	Expect(err).NotTo(HaveOccurred())
	zs, err := w.e.raw.ZRangeWithScores(ctx, "redisson_lock_timeout:{"+name+"}", 0, -1).Result()
	Expect(err).NotTo(HaveOccurred())
	scores := map[string]int64{}
	for _, z := range zs {
		scores[z.Member.(string)] = int64(z.Score)
	}
	return q, scores
}

// awaitQueued waits until field is in the fair lock's queue.
func (w *world) awaitQueued(name, field string) {
	GinkgoHelper()
	Eventually(func() []string {
		q, _ := w.fairQueue(name)
		return q
	}).WithTimeout(10*time.Second).WithPolling(5*time.Millisecond).Should(ContainElement(field), "waiter %s never queued", field)
}

// listen subscribes to channels on a connection of its own and returns the
// messages it receives, as "channel=payload".
func (w *world) listen(channels ...string) <-chan string {
	GinkgoHelper()
	sub := w.e.raw.Subscribe(context.Background(), channels...)
	if listenSharded {
		_ = sub.Close()
		sub = w.e.raw.SSubscribe(context.Background(), channels...)
	}
	for range channels {
		_, err := sub.Receive(context.Background())
		Expect(err).NotTo(HaveOccurred())
	}
	out := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range sub.Channel() {
			out <- m.Channel + "=" + m.Payload
		}
	}()
	DeferCleanup(func() {
		_ = sub.Close()
		<-done
	})
	return out
}

// messagesWithin collects what arrives on ch during d.
func messagesWithin(ch <-chan string, d time.Duration) []string {
	got := []string{}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case m := <-ch:
			got = append(got, m)
		case <-t.C:
			return got
		}
	}
}

// millis renders a duration in ms for a probe command.
func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// ----- scenarios -----

// holdCountsAcross: each client sees the other's holds and hold count in
// the shared hash, is excluded by them, and cannot unlock them.
func holdCountsAcross(w *world, k kind) {
	j, name := w.j, lockName("holds")
	gl := k.goLock(w.g, name)
	owner, goField := w.owner(k.suffix)
	tid := j.newTid()
	jField := j.field(tid) + k.suffix
	lockCmd := k.cmd + "lock " + name + " " + tid

	By("Redisson holds it twice")
	Expect(heldAnswer(do(j, lockCmd))).To(BeTrue())
	Expect(heldAnswer(do(j, lockCmd))).To(BeTrue())
	Expect(do(j, k.cmd+"holdcount "+name+" "+tid)).To(Equal("2"))
	Expect(w.hget(name, jField)).To(Equal("2"), "Redisson's hold count, read by goredisson's side from the hash")
	Expect(gl.IsLocked(owner)).To(BeTrue())
	Expect(gl.HoldCount(owner)).To(Equal(0))
	Expect(gl.TryLock(owner, 0, 0)).To(BeFalse())
	Expect(gl.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
	ok(j, k.cmd+"unlock "+name+" "+tid)
	Expect(w.hget(name, jField)).To(Equal("1"))
	Expect(gl.TryLock(owner, 0, 0)).To(BeFalse())
	ok(j, k.cmd+"unlock "+name+" "+tid)
	Expect(do(j, k.cmd+"islocked "+name)).To(Equal("false"))

	By("goredisson holds it three times")
	for range 3 {
		Expect(gl.TryLock(owner, 0, 0)).To(BeTrue())
	}
	Expect(gl.HoldCount(owner)).To(Equal(3))
	Expect(w.hget(name, goField)).To(Equal("3"), "goredisson's hold count in the hash")
	Expect(do(j, k.cmd+"islocked "+name)).To(Equal("true"))
	Expect(do(j, k.cmd+"holdcount "+name+" "+tid)).To(Equal("0"))
	Expect(do(j, k.cmd+"held "+name+" "+tid)).To(Equal("false"))
	Expect(do(j, k.cmd+"trylock "+name+" "+tid+" 0")).To(Equal("false"))
	Expect(do(j, k.cmd+"unlock "+name+" "+tid)).To(HavePrefix("err IllegalMonitorStateException"))
	Expect(w.hget(name, goField)).To(Equal("3"), "a Redisson unlock must not touch goredisson's holds")
	for range 3 {
		Expect(gl.Unlock(owner)).To(Succeed())
	}
	Expect(heldAnswer(do(j, k.cmd+"trylock "+name+" "+tid+" 0"))).To(BeTrue())
	ok(j, k.cmd+"unlock "+name+" "+tid)
}

// waiter is the kind that waits for a hold of kind k: a writer for a
// reader, else the same kind.
func (k kind) waiter() kind {
	if k.cmd == kRead.cmd {
		return kWrite
	}
	return k
}

// wakeAcross: the holder's unlock (or force unlock) wakes the other
// client's waiter within the wake-up bound.
func wakeAcross(w *world, h kind, javaHolds, force bool) {
	j, name, wk := w.j, lockName("wake"), h.waiter()
	hl, wl := h.goLock(w.g, name), wk.goLock(w.g, name)
	owner, goField := w.owner(wk.suffix)
	tid := j.newTid()
	how, whom := "unlock", "waiter"
	if force {
		how = "force unlock"
	}
	if wk.cmd != h.cmd {
		whom = "writer"
	}
	if javaHolds {
		Expect(heldAnswer(do(j, h.cmd+"lock "+name+" "+tid))).To(BeTrue())
		got := w.goAcquire(func() error { return wl.Lock(owner) })
		w.awaitGoWaiting(wk, name, goField)
		Expect(got).NotTo(Receive(), "goredisson got a lock Redisson holds")
		var c *pcall
		if force {
			c = j.send(h.cmd + "forceunlock " + name)
			Expect(answerWithin(c, 10*time.Second, "forceunlock")).To(Equal("true"))
		} else {
			c = j.send(h.cmd + "unlock " + name + " " + tid)
			Expect(answerWithin(c, 10*time.Second, "unlock")).To(Equal("ok"))
		}
		a := received(got, 5*time.Second, "the goredisson "+whom)
		expectWake(j.suite(), fmt.Sprintf("%s: Redisson %s wakes a goredisson %s", h.title, how, whom), a.at.Sub(c.sent))
		Expect(wl.Unlock(owner)).To(Succeed())
		return
	}
	Expect(hl.Lock(owner)).To(Succeed())
	c := j.send(wk.cmd + "lock " + name + " " + tid)
	w.awaitJavaWaiting(wk, name, j.field(tid)+wk.suffix)
	Expect(c.answered()).To(BeFalse(), "Redisson got a lock goredisson holds")
	t0 := time.Now()
	if force {
		Expect(hl.ForceUnlock(owner)).To(BeTrue())
	} else {
		Expect(hl.Unlock(owner)).To(Succeed())
	}
	Expect(heldAnswer(answerWithin(c, 5*time.Second, "the Redisson "+whom))).To(BeTrue())
	expectWake(j.suite(), fmt.Sprintf("%s: goredisson %s wakes a Redisson %s", h.title, how, whom), c.at().Sub(t0))
	ok(j, wk.cmd+"unlock "+name+" "+tid)
}

// leaseExpiryAcross: a fixed lease expires on its own; the other client's
// waiter gets the lock about when it does, and the former holder's late
// unlock is refused without touching the new hold.
func leaseExpiryAcross(w *world, h kind, javaHolds bool) {
	const fixed = 1000 * time.Millisecond
	j, name, wk := w.j, lockName("lease"), h.waiter()
	hl, wl := h.goLock(w.g, name), wk.goLock(w.g, name)
	owner, goField := w.owner(wk.suffix)
	tid := j.newTid()
	whom := "waiter"
	if wk.cmd != h.cmd {
		whom = "writer"
	}
	if javaHolds {
		c := j.send(h.cmd + "trylock " + name + " " + tid + " 0 " + millis(fixed))
		Expect(heldAnswer(answerWithin(c, 10*time.Second, "trylock"))).To(BeTrue())
		Expect(strconv.ParseInt(do(j, h.cmd+"remain "+name), 10, 64)).To(BeNumerically("~", fixed.Milliseconds(), 200))
		got := w.goAcquire(func() error { return wl.Lock(owner) })
		a := received(got, 5*time.Second, "the goredisson "+whom)
		took := a.at.Sub(c.at())
		Expect(took).To(BeNumerically(">", fixed-150*time.Millisecond), "before the lease ran out")
		recordWake(j.suite(), fmt.Sprintf("%s: Redisson's 1 s lease runs out, goredisson %s in after (ms past the lease)", h.title, whom), took-fixed)
		Expect(took).To(BeNumerically("<", fixed+wakeBound), "long after the lease ran out")
		Expect(do(j, h.cmd+"unlock "+name+" "+tid)).To(HavePrefix("err IllegalMonitorStateException"))
		Expect(w.hget(name, goField)).To(Equal("1"))
		Expect(wl.Unlock(owner)).To(Succeed())
		return
	}
	Expect(hl.TryLock(owner, 0, fixed)).To(BeTrue())
	t0 := time.Now()
	Expect(w.pttl(name)).To(BeNumerically("~", fixed.Milliseconds(), 200))
	c := j.send(wk.cmd + "lock " + name + " " + tid)
	Expect(heldAnswer(answerWithin(c, 5*time.Second, "the Redisson "+whom))).To(BeTrue())
	took := c.at().Sub(t0)
	Expect(took).To(BeNumerically(">", fixed-150*time.Millisecond), "before the lease ran out")
	recordWake(j.suite(), fmt.Sprintf("%s: goredisson's 1 s lease runs out, Redisson %s in after (ms past the lease)", h.title, whom), took-fixed)
	Expect(took).To(BeNumerically("<", fixed+wakeBound), "long after the lease ran out")
	Expect(hl.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
	Expect(w.hget(name, j.field(tid)+wk.suffix)).To(Equal("1"))
	ok(j, wk.cmd+"unlock "+name+" "+tid)
}

// watchdogAcross: a watchdog lease (3 s, renewed every second) outlives
// itself while held, and the other client stays excluded (for a reader: the
// other client's writer).
func watchdogAcross(w *world, k kind, javaHolds bool) {
	const held = 4500 * time.Millisecond
	j, name := w.j, lockName("watchdog")
	g := w.e.goClient(rlock.WithWatchdogTimeout(javaWatchdog * time.Millisecond))
	gl := k.goLock(g, name)
	owner := ctxowner.New(w.ctx)
	tid := j.newTid()
	excluded := k.waiter()
	gx := excluded.goLock(g, name)
	if javaHolds {
		Expect(heldAnswer(do(j, k.cmd+"lock "+name+" "+tid))).To(BeTrue())
	} else {
		Expect(gl.Lock(owner)).To(Succeed())
	}
	for end := time.Now().Add(held); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		Expect(w.pttl(name)).To(And(BeNumerically(">", 0), BeNumerically("<=", javaWatchdog)), "the lease must stay renewed and never exceed the watchdog timeout")
	}
	other := j.newTid()
	if javaHolds {
		Expect(gx.TryLock(owner, 0, 0)).To(BeFalse())
		ok(j, k.cmd+"unlock "+name+" "+tid)
		Expect(gx.TryLock(owner, 0, 0)).To(BeTrue())
		Expect(gx.Unlock(owner)).To(Succeed())
		return
	}
	Expect(do(j, excluded.cmd+"trylock "+name+" "+other+" 0")).To(Equal("false"))
	Expect(gl.Unlock(owner)).To(Succeed())
	Expect(heldAnswer(do(j, excluded.cmd+"trylock "+name+" "+other+" 0"))).To(BeTrue())
	ok(j, excluded.cmd+"unlock "+name+" "+other)
}

// keyspaceAlike: a keyspace watcher sees the same commands, in the same
// order and on the same keys, whichever client takes, re-enters, releases
// and force-unlocks a lock (fixed leases, so that no watchdog renews in
// between). Tools built on Redisson's keyspace events (rlockctl watch among
// them) tell a holder's release (hincrby, del) from a force unlock (del).
// Redisson's unlock latch keys (redisson_unlock_latch:{name}:<request id>)
// are left out: goredisson settles a lost reply instead of writing one (a
// documented difference).
func keyspaceAlike(w *world, k kind) {
	GinkgoHelper()
	rdb := w.e.rdb()
	was, err := rdb.ConfigGet(context.Background(), "notify-keyspace-events").Result()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		rdb.ConfigSet(context.Background(), "notify-keyspace-events", was["notify-keyspace-events"])
	})
	Expect(rdb.ConfigSet(context.Background(), "notify-keyspace-events", "KA").Err()).To(Succeed())

	// events runs steps on a fresh lock and returns what a watcher of
	// every key naming it saw, the name replaced by N.
	events := func(steps func(name string)) []string {
		GinkgoHelper()
		name := lockName("ks")
		sub := rdb.PSubscribe(context.Background(), "__keyspace@*__:*"+name+"*")
		defer sub.Close()
		_, err := sub.Receive(context.Background())
		Expect(err).NotTo(HaveOccurred())
		steps(name)
		end := name + ":end"
		Expect(rdb.Set(context.Background(), end, 1, time.Minute).Err()).To(Succeed())
		var got []string
		for {
			m, err := sub.ReceiveMessage(context.Background())
			Expect(err).NotTo(HaveOccurred())
			key := m.Channel[strings.Index(m.Channel, ":")+1:]
			if key == end {
				return got
			}
			if strings.HasPrefix(key, "redisson_unlock_latch:") {
				continue
			}
			key = strings.ReplaceAll(key, name, "N")
			// A reader's timeout key names its holder field.
			key = rwTimeoutField.ReplaceAllString(key, "{N}:F:rwlock_timeout")
			got = append(got, key+" "+m.Payload)
		}
	}
	lease := 30 * time.Second
	java := events(func(name string) {
		tid := w.j.newTid()
		lockCmd := k.cmd + "lock " + name + " " + tid + " " + millis(lease)
		Expect(heldAnswer(do(w.j, lockCmd))).To(BeTrue())
		Expect(heldAnswer(do(w.j, lockCmd))).To(BeTrue())
		ok(w.j, k.cmd+"unlock "+name+" "+tid)
		ok(w.j, k.cmd+"unlock "+name+" "+tid)
		Expect(heldAnswer(do(w.j, lockCmd))).To(BeTrue())
		Expect(do(w.j, k.cmd+"forceunlock "+name)).To(Equal("true"))
	})
	goSide := events(func(name string) {
		gl := k.goLock(w.g, name)
		owner, _ := w.owner("")
		Expect(gl.LockLease(owner, lease)).To(Succeed())
		Expect(gl.LockLease(owner, lease)).To(Succeed())
		Expect(gl.Unlock(owner)).To(Succeed())
		Expect(gl.Unlock(owner)).To(Succeed())
		Expect(gl.LockLease(owner, lease)).To(Succeed())
		Expect(gl.ForceUnlock(owner)).To(BeTrue())
	})
	GinkgoWriter.Printf("%s keyspace events: %v\n", k.title, java)
	Expect(goSide).To(Equal(java), "goredisson's keyspace events (actual) against Redisson's")
}

// rwTimeoutField finds the holder field in a reader's timeout key.
var rwTimeoutField = regexp.MustCompile(`\{N\}:.*:rwlock_timeout`)
