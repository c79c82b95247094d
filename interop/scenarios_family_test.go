package interop_test

// Scenarios of the fair lock's shared queue, the read-write lock's
// messages and leases, and the fenced lock's tokens.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/rlock"
)

// fairWait is Redisson's default fairLockWaitTimeout, the threadWaitTime
// of a waiting call with no wait of its own (lock()) on both sides.
const fairWait = int64(5 * 60 * 1000)

// event is one waiter getting the lock.
type event struct {
	label string
	err   error
	held  bool
	at    time.Time
}

// fairWaiter is one waiter of a mixed fair queue.
type fairWaiter struct {
	label   string
	field   string
	start   func(events chan<- event) // starts waiting; reports to events
	release func()
}

// goFairWaiter is a goredisson waiter: Lock (wait == 0) or TryLock(wait).
func (w *world) goFairWaiter(label, name string, wait, lease time.Duration) *fairWaiter {
	fl := w.g.NewFairLock(name)
	owner, field := w.owner("")
	return &fairWaiter{label: label, field: field,
		start: func(events chan<- event) {
			w.goBg(func() {
				var held bool
				var err error
				if wait == 0 {
					err = fl.LockLease(owner, lease)
					held = err == nil
				} else {
					held, err = fl.TryLock(owner, wait, lease)
				}
				events <- event{label: label, err: err, held: held, at: time.Now()}
			})
		},
		release: func() { Expect(fl.Unlock(owner)).To(Succeed()) },
	}
}

// javaFairWaiter is a Redisson waiter: lock() (wait == 0) or tryLock(wait, lease).
func (w *world) javaFairWaiter(label, name string, wait, lease time.Duration) *fairWaiter {
	tid := w.j.newTid()
	cmd := "fairlock " + name + " " + tid
	if wait > 0 {
		cmd = "fairtrylock " + name + " " + tid + " " + millis(wait)
	}
	if lease > 0 {
		cmd += " " + millis(lease)
	}
	return &fairWaiter{label: label, field: w.j.field(tid),
		start: func(events chan<- event) {
			c := w.j.send(cmd)
			w.goBg(func() {
				select {
				case a := <-c.ch:
					events <- event{label: label, held: heldAnswer(a.text), at: a.at,
						err: errIf(strings.HasPrefix(a.text, "err"), a.text)}
				case <-w.ctx.Done():
				}
			})
		},
		release: func() { ok(w.j, "fairunlock "+name+" "+tid) },
	}
}

func errIf(cond bool, text string) error {
	if cond {
		return fmt.Errorf("%s", text)
	}
	return nil
}

// enqueue starts the waiters one by one, each only once the one before it
// is queued, and checks the queue ends with them in arrival order.
func (w *world) enqueue(name string, events chan<- event, waiters ...*fairWaiter) {
	GinkgoHelper()
	var fields []string
	for _, fw := range waiters {
		fw.start(events)
		w.awaitQueued(name, fw.field)
		fields = append(fields, fw.field)
	}
	q, _ := w.fairQueue(name)
	Expect(len(q)).To(BeNumerically(">=", len(fields)))
	Expect(q[len(q)-len(fields):]).To(Equal(fields), "queue order is arrival order")
}

// serveInOrder releases the holder and expects the waiters to get the lock
// in order, each within the wake-up bound of the release before it.
func (w *world) serveInOrder(events <-chan event, holder string, release func(), waiters ...*fairWaiter) {
	GinkgoHelper()
	prev := holder
	t0 := time.Now()
	release()
	for _, fw := range waiters {
		var ev event
		Eventually(events).WithTimeout(5*time.Second).Should(Receive(&ev), "nobody got the lock after %s released it (next in line: %s)", prev, fw.label)
		Expect(ev.err).NotTo(HaveOccurred())
		Expect(ev.label).To(Equal(fw.label), "after %s the lock must go to %s, next in arrival order", prev, fw.label)
		expectWake(w.j.suite(), fmt.Sprintf("FairLock mixed queue: %s releases, %s (next in line) gets it", kindOf(prev), kindOf(fw.label)), ev.at.Sub(t0))
		prev = fw.label
		t0 = time.Now()
		fw.release()
	}
	Consistently(events).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
}

// kindOf turns a waiter label ("go1", "java2") into its client's name.
func kindOf(label string) string {
	if strings.HasPrefix(label, "go") {
		return "goredisson"
	}
	return "Redisson"
}

// fairFIFO: arrival go1, java2, go3, java4 is served in that order, with
// a Redisson or a goredisson holder.
func fairFIFO(w *world, javaHolds bool) {
	name := lockName("fifo")
	events := make(chan event, 8)
	var holder string
	var release func()
	if javaHolds {
		tid := w.j.newTid()
		ok(w.j, "fairlock "+name+" "+tid)
		holder, release = "java0", func() { ok(w.j, "fairunlock "+name+" "+tid) }
	} else {
		fl := w.g.NewFairLock(name)
		owner, _ := w.owner("")
		Expect(fl.Lock(owner)).To(Succeed())
		holder, release = "go0", func() { Expect(fl.Unlock(owner)).To(Succeed()) }
	}
	waiters := []*fairWaiter{
		w.goFairWaiter("go1", name, 0, 0),
		w.javaFairWaiter("java2", name, 0, 0),
		w.goFairWaiter("go3", name, 0, 0),
		w.javaFairWaiter("java4", name, 0, 0),
	}
	w.enqueue(name, events, waiters...)
	w.serveInOrder(events, holder, release, waiters...)
	q, scores := w.fairQueue(name)
	Expect(q).To(BeEmpty())
	Expect(scores).To(BeEmpty())
}

// fairChain: each new waiter's timeout is the last waiter's plus
// threadWaitTime, whoever queued; every acquisition from the queue pulls
// the remaining timeouts in by the acquirer's threadWaitTime.
func fairChain(w *world) {
	name := lockName("chain")
	events := make(chan event, 8)
	htid := w.j.newTid()
	Expect(do(w.j, "fairtrylock "+name+" "+htid+" 0 20000")).To(Equal("ok"))
	waiters := []*fairWaiter{
		w.goFairWaiter("go1", name, 0, 0),
		w.javaFairWaiter("java2", name, 0, 0),
		w.goFairWaiter("go3", name, 0, 0),
		w.javaFairWaiter("java4", name, 0, 0),
	}
	var before []int64
	for i, fw := range waiters {
		now := time.Now().UnixMilli()
		pttl := w.pttl(name)
		w.enqueue(name, events, fw)
		_, s := w.fairQueue(name)
		score := s[fw.field]
		if i == 0 {
			Expect(score).To(BeNumerically("~", now+pttl+fairWait, 500),
				"the first waiter's timeout: now + the lock's PTTL + threadWaitTime (5 min)")
		} else {
			Expect(score).To(Equal(before[i-1]+fairWait),
				"%s's timeout must chain on %s's: its score + threadWaitTime (5 min)", fw.label, waiters[i-1].label)
		}
		before = append(before, score)
	}
	// Every acquisition from the queue pulls the remaining ones in by one
	// threadWaitTime, whichever client acquires.
	releaseHolder := func() { ok(w.j, "fairunlock "+name+" "+htid) }
	prev := "java0"
	for i, fw := range waiters {
		t0 := time.Now()
		releaseHolder()
		var ev event
		Eventually(events).WithTimeout(5*time.Second).Should(Receive(&ev), "nobody got the lock after %s", prev)
		Expect(ev.label).To(Equal(fw.label))
		recordWake(w.j.suite(), fmt.Sprintf("FairLock chained queue: %s releases, %s gets it", kindOf(prev), kindOf(fw.label)), ev.at.Sub(t0))
		_, s := w.fairQueue(name)
		for k := i + 1; k < len(waiters); k++ {
			Expect(s[waiters[k].field]).To(Equal(before[k]-int64(i+1)*fairWait),
				"after %s acquired from the queue, %s's timeout must have moved in by threadWaitTime %d time(s)", fw.label, waiters[k].label, i+1)
		}
		prev, releaseHolder = fw.label, fw.release
	}
	releaseHolder()
}

// fairGiveUp: a waiter whose tryLock wait runs out leaves the queue and
// moves the timeouts of those behind it (not those ahead) in by its own
// threadWaitTime, its wait.
func fairGiveUp(w *world, goGivesUp bool) {
	const wait = 2 * time.Second
	name := lockName("giveup")
	events := make(chan event, 8)
	htid := w.j.newTid()
	Expect(do(w.j, "fairtrylock "+name+" "+htid+" 0 20000")).To(Equal("ok"))
	var waiters []*fairWaiter
	if goGivesUp {
		waiters = []*fairWaiter{
			w.javaFairWaiter("java1", name, 0, 0),
			w.goFairWaiter("go2", name, wait, 0),
			w.javaFairWaiter("java3", name, 0, 0),
		}
	} else {
		waiters = []*fairWaiter{
			w.goFairWaiter("go1", name, 0, 0),
			w.javaFairWaiter("java2", name, wait, 0),
			w.goFairWaiter("go3", name, 0, 0),
		}
	}
	w.enqueue(name, events, waiters...)
	q, s := w.fairQueue(name)
	first, leaver, last := s[q[0]], s[q[1]], s[q[2]]
	Expect(leaver).To(Equal(first+wait.Milliseconds()), "a tryLock waiter's threadWaitTime is its wait: score = the one ahead + wait")
	Expect(last).To(Equal(leaver+fairWait), "score = the one ahead + threadWaitTime (5 min)")

	var ev event
	Eventually(events).WithTimeout(wait+3*time.Second).Should(Receive(&ev), "the waiter with a %v wait never gave up", wait)
	Expect(ev.label).To(Equal(waiters[1].label))
	Expect(ev.err).NotTo(HaveOccurred())
	Expect(ev.held).To(BeFalse())
	q, s = w.fairQueue(name)
	Expect(q).To(Equal([]string{waiters[0].field, waiters[2].field}), "the waiter that gave up left the queue")
	Expect(s[waiters[0].field]).To(Equal(first), "the waiter ahead keeps its timeout")
	Expect(s[waiters[2].field]).To(Equal(last-wait.Milliseconds()), "the waiter behind moves in by the leaver's threadWaitTime")

	w.serveInOrder(events, "java0", func() { ok(w.j, "fairunlock "+name+" "+htid) }, waiters[0], waiters[2])
}

// fairTryLockLeavesNothing (Redisson's testTryLockNonDelayed): a short
// tryLock on a fair lock the other client holds fails and leaves no
// waiter behind.
func fairTryLockLeavesNothing(w *world, javaHolds bool) {
	name := lockName("nondelayed")
	fl := w.g.NewFairLock(name)
	owner, _ := w.owner("")
	tid := w.j.newTid()
	if javaHolds {
		Expect(do(w.j, "fairtrylock "+name+" "+tid+" 0")).To(Equal("ok"))
		Expect(fl.TryLock(owner, 200*time.Millisecond, 0)).To(BeFalse())
	} else {
		Expect(fl.TryLock(owner, 0, 0)).To(BeTrue())
		Expect(do(w.j, "fairtrylock "+name+" "+tid+" 200")).To(Equal("false"))
	}
	Eventually(func() int {
		q, s := w.fairQueue(name)
		return len(q) + len(s)
	}).WithTimeout(2 * time.Second).Should(BeZero())
	if javaHolds {
		ok(w.j, "fairunlock "+name+" "+tid)
		Expect(fl.TryLock(owner, 0, 0)).To(BeTrue())
		Expect(fl.Unlock(owner)).To(Succeed())
	} else {
		Expect(fl.Unlock(owner)).To(Succeed())
		Expect(do(w.j, "fairtrylock "+name+" "+tid+" 0")).To(Equal("ok"))
		ok(w.j, "fairunlock "+name+" "+tid)
	}
}

// fairLeaseChain (Redisson's testLeaseTimeout): alternating waiters, each
// tryLock(10 s wait, 1 s lease), none unlocking: the leases run out one
// after another and the waiters get the lock in arrival order.
func fairLeaseChain(w *world) {
	const fixed = time.Second
	name := lockName("leasechain")
	events := make(chan event, 8)
	var waiters []*fairWaiter
	for i := range 6 {
		if i%2 == 0 {
			waiters = append(waiters, w.goFairWaiter(fmt.Sprintf("go%d", i), name, 10*time.Second, fixed))
		} else {
			waiters = append(waiters, w.javaFairWaiter(fmt.Sprintf("java%d", i), name, 10*time.Second, fixed))
		}
	}
	waiters[0].start(events)
	var ev event
	Eventually(events).WithTimeout(5 * time.Second).Should(Receive(&ev))
	Expect(ev.held).To(BeTrue())
	last, prev := ev.at, waiters[0].label
	w.enqueue(name, events, waiters[1:]...)
	for _, fw := range waiters[1:] {
		Eventually(events).WithTimeout(fixed+3*time.Second).Should(Receive(&ev), "%s never got the lock", fw.label)
		Expect(ev.err).NotTo(HaveOccurred())
		Expect(ev.label).To(Equal(fw.label), "lease expiries must hand the lock on in arrival order")
		Expect(ev.held).To(BeTrue())
		recordWake(w.j.suite(), fmt.Sprintf("FairLock lease chain: %s's 1 s lease runs out, %s (next in line) in after (ms past the lease)", kindOf(prev), kindOf(fw.label)), ev.at.Sub(last)-fixed)
		Expect(ev.at.Sub(last)).To(BeNumerically("<", fixed+wakeBound), "%s got the lock late", fw.label)
		last, prev = ev.at, fw.label
	}
}

// ----- read-write lock -----

// readersAtOnce: a write unlock (or write force unlock) wakes every reader
// of the other client that waits for it, at once.
func readersAtOnce(w *world, javaWriter, force bool) {
	const readers = 3
	j, name := w.j, lockName("readers")
	rw := w.g.NewReadWriteLock(name)
	ch := "redisson_rwlock:{" + name + "}"
	how := "unlock"
	if force {
		how = "force unlock"
	}
	if javaWriter {
		wt := j.newTid()
		ok(j, "writelock "+name+" "+wt)
		var got []<-chan acq
		var owners []context.Context
		for range readers {
			owner, _ := w.owner("")
			owners = append(owners, owner)
			got = append(got, w.goAcquire(func() error { return rw.ReadLock().Lock(owner) }))
		}
		awaitSubscribed(ch)
		time.Sleep(300 * time.Millisecond)
		var c *pcall
		if force {
			c = j.send("writeforceunlock " + name)
		} else {
			c = j.send("writeunlock " + name + " " + wt)
		}
		var in []acq
		Eventually(func() int {
			for _, r := range got {
				select {
				case a := <-r:
					in = append(in, a)
				default:
				}
			}
			return len(in)
		}).WithTimeout(5*time.Second).WithPolling(5*time.Millisecond).Should(Equal(readers),
			"goredisson readers in within 5 s of the write %s", how)
		for _, a := range in {
			Expect(a.err).NotTo(HaveOccurred())
			expectWake(j.suite(), fmt.Sprintf("ReadWriteLock: Redisson write %s wakes %d goredisson readers at once (each)", how, readers), a.at.Sub(c.sent))
		}
		for _, owner := range owners {
			Expect(rw.ReadLock().Unlock(owner)).To(Succeed())
		}
		return
	}
	owner, _ := w.owner("")
	Expect(rw.WriteLock().Lock(owner)).To(Succeed())
	var calls []*pcall
	var tids []string
	for range readers {
		tid := j.newTid()
		tids = append(tids, tid)
		calls = append(calls, j.send("readlock "+name+" "+tid))
	}
	j.awaitBlocked(ch, readers)
	t0 := time.Now()
	if force {
		Expect(rw.WriteLock().ForceUnlock(owner)).To(BeTrue())
	} else {
		Expect(rw.WriteLock().Unlock(owner)).To(Succeed())
	}
	in := func() (n int) {
		for _, c := range calls {
			if c.answered() {
				n++
			}
		}
		return n
	}
	Eventually(in).WithTimeout(5*time.Second).WithPolling(5*time.Millisecond).Should(Equal(readers),
		"Redisson readers in within 5 s of the write %s", how)
	for i, c := range calls {
		Expect(c.got.text).To(Equal("ok"))
		expectWake(j.suite(), fmt.Sprintf("ReadWriteLock: goredisson write %s wakes %d Redisson readers at once (each)", how, readers), c.at().Sub(t0))
		ok(j, "readunlock "+name+" "+tids[i])
	}
}

// mixedReaders (Redisson's testWriteRead): readers of both clients wait on
// one writer; its unlock lets all of them in at once.
func mixedReaders(w *world, javaWriter bool) {
	j, name := w.j, lockName("mixed")
	rw := w.g.NewReadWriteLock(name)
	ch := "redisson_rwlock:{" + name + "}"
	wt := j.newTid()
	wOwner, _ := w.owner("")
	if javaWriter {
		ok(j, "writelock "+name+" "+wt)
	} else {
		Expect(rw.WriteLock().Lock(wOwner)).To(Succeed())
	}
	var goGot []<-chan acq
	var goOwners []context.Context
	var calls []*pcall
	var tids []string
	for range 2 {
		owner, _ := w.owner("")
		goOwners = append(goOwners, owner)
		goGot = append(goGot, w.goAcquire(func() error { return rw.ReadLock().Lock(owner) }))
		tid := j.newTid()
		tids = append(tids, tid)
		calls = append(calls, j.send("readlock "+name+" "+tid))
	}
	j.awaitBlocked(ch, 2)
	time.Sleep(200 * time.Millisecond) // the goredisson readers, too
	t0 := time.Now()
	if javaWriter {
		c := j.send("writeunlock " + name + " " + wt)
		t0 = c.sent
	} else {
		Expect(rw.WriteLock().Unlock(wOwner)).To(Succeed())
	}
	writer := map[bool]string{true: "Redisson", false: "goredisson"}[javaWriter]
	deadline := t0.Add(5 * time.Second)
	for i := range 2 {
		a := received(goGot[i], time.Until(deadline), "goredisson reader")
		expectWake(j.suite(), fmt.Sprintf("ReadWriteLock: %s write unlock wakes mixed readers: a goredisson reader", writer), a.at.Sub(t0))
		Expect(answerWithin(calls[i], time.Until(deadline), "Redisson reader")).To(Equal("ok"))
		expectWake(j.suite(), fmt.Sprintf("ReadWriteLock: %s write unlock wakes mixed readers: a Redisson reader", writer), calls[i].at().Sub(t0))
	}
	for i := range 2 {
		Expect(rw.ReadLock().Unlock(goOwners[i])).To(Succeed())
		ok(j, "readunlock "+name+" "+tids[i])
	}
}

// rwHolder is one client holding both sides of a read-write lock, driven
// through one interface so that a scenario runs with either as holder.
type rwHolder struct {
	client                  string
	writeLock, readLock     func()
	writeUnlock, readUnlock func()
	readIsLocked            func() bool
	writeIsLocked           func() bool
	readTry, writeTry       func() bool // one attempt each, by another owner of the same client
	readRelease             func()      // releases readTry's hold
	writeRelease            func()      // releases writeTry's hold
}

func (w *world) goRW(name string) *rwHolder {
	rw := w.g.NewReadWriteLock(name)
	owner, _ := w.owner("")
	other, _ := w.owner("")
	must := func(err error) { ExpectWithOffset(2, err).NotTo(HaveOccurred()) }
	try := func(l rlock.Locker) bool {
		ok, err := l.TryLock(other, 0, 0)
		ExpectWithOffset(2, err).NotTo(HaveOccurred())
		return ok
	}
	is := func(l rlock.Locker) bool {
		ok, err := l.IsLocked(owner)
		ExpectWithOffset(2, err).NotTo(HaveOccurred())
		return ok
	}
	return &rwHolder{client: "goredisson",
		writeLock: func() { must(rw.WriteLock().Lock(owner)) }, readLock: func() { must(rw.ReadLock().Lock(owner)) },
		writeUnlock: func() { must(rw.WriteLock().Unlock(owner)) }, readUnlock: func() { must(rw.ReadLock().Unlock(owner)) },
		readIsLocked: func() bool { return is(rw.ReadLock()) }, writeIsLocked: func() bool { return is(rw.WriteLock()) },
		readTry: func() bool { return try(rw.ReadLock()) }, writeTry: func() bool { return try(rw.WriteLock()) },
		readRelease: func() { must(rw.ReadLock().Unlock(other)) }, writeRelease: func() { must(rw.WriteLock().Unlock(other)) },
	}
}

func (w *world) javaRW(name string) *rwHolder {
	j := w.j
	tid, other := j.newTid(), j.newTid()
	is := func(cmd string) bool {
		a := do(j, cmd+" "+name)
		ExpectWithOffset(2, a).To(Or(Equal("true"), Equal("false")))
		return a == "true"
	}
	try := func(cmd string) bool {
		a := do(j, cmd+" "+name+" "+other+" 0")
		ExpectWithOffset(2, a).To(Or(Equal("ok"), Equal("false")))
		return a == "ok"
	}
	return &rwHolder{client: "Redisson",
		writeLock: func() { ok(j, "writelock "+name+" "+tid) }, readLock: func() { ok(j, "readlock "+name+" "+tid) },
		writeUnlock: func() { ok(j, "writeunlock "+name+" "+tid) }, readUnlock: func() { ok(j, "readunlock "+name+" "+tid) },
		readIsLocked: func() bool { return is("readislocked") }, writeIsLocked: func() bool { return is("writeislocked") },
		readTry: func() bool { return try("readtrylock") }, writeTry: func() bool { return try("writetrylock") },
		readRelease: func() { ok(j, "readunlock "+name+" "+other) }, writeRelease: func() { ok(j, "writeunlock "+name+" "+other) },
	}
}

// downgrade (Redisson's testWriteReadReentrancy and testReadLockIsLocked):
// the writer also takes the read lock; the read side reports locked on
// both clients; its write unlock turns the lock to read mode without a
// message; the last read unlock publishes "0", a write unlock "1".
func downgrade(w *world, javaHolds bool) {
	name := lockName("downgrade")
	holder, other := w.goRW(name), w.javaRW(name)
	if javaHolds {
		holder, other = other, holder
	}
	msgs := w.listen("redisson_rwlock:{"+name+"}", "redisson_lock__channel:{"+name+"}")
	holder.writeLock()
	Expect(holder.readIsLocked()).To(BeFalse(), "%s: the read side of a write-only hold", holder.client)
	Expect(other.readIsLocked()).To(BeFalse(), "%s: the read side of a write-only hold", other.client)
	holder.readLock()
	Expect(other.readIsLocked()).To(BeTrue(), "%s: the read side while the writer also holds a read lock", other.client)
	Expect(holder.readIsLocked()).To(BeTrue(), "%s: the read side while the writer also holds a read lock", holder.client)
	Expect(other.writeIsLocked()).To(BeTrue())
	Expect(other.readTry()).To(BeFalse(), "a reader of %s got in beside %s's writer", other.client, holder.client)

	holder.writeUnlock()
	Expect(w.hget(name, "mode")).To(Equal("read"), "after the write unlock, the writer's read hold keeps the lock in read mode")
	Expect(messagesWithin(msgs, 300*time.Millisecond)).To(BeEmpty(), "a write unlock that leaves read holds publishes nothing")
	Expect(other.writeTry()).To(BeFalse())
	Expect(other.readTry()).To(BeTrue(), "read mode lets the other client's reader in")
	holder.readUnlock()
	Expect(messagesWithin(msgs, 300*time.Millisecond)).To(BeEmpty(), "a read unlock that leaves readers publishes nothing")
	other.readRelease()
	Expect(messagesWithin(msgs, 300*time.Millisecond)).To(Equal([]string{"redisson_rwlock:{" + name + "}=0"}), "the last read unlock publishes 0")
	Expect(other.writeTry()).To(BeTrue())
	other.writeRelease()
	Expect(messagesWithin(msgs, 300*time.Millisecond)).To(Equal([]string{"redisson_rwlock:{" + name + "}=1"}), "the last write unlock publishes 1")
}

// writeReentryLease: a writer's re-entry extends the lock to its
// remaining PTTL plus the new lease (Redisson's RedissonWriteLock).
func writeReentryLease(w *world, java bool) {
	name := lockName("reentry")
	if java {
		tid := w.j.newTid()
		ok(w.j, "writetrylock "+name+" "+tid+" 0 10000")
		ok(w.j, "writetrylock "+name+" "+tid+" 0 1000")
	} else {
		owner, _ := w.owner("")
		wl := w.g.NewReadWriteLock(name).WriteLock()
		Expect(wl.TryLock(owner, 0, 10*time.Second)).To(BeTrue())
		Expect(wl.TryLock(owner, 0, time.Second)).To(BeTrue())
	}
	Expect(w.pttl(name)).To(BeNumerically("~", 11000, 500), "re-entry with a 1 s lease on a 10 s write hold: PTTL = remaining + 1 s")
}

// zombieReader (Redisson's testMultiInstanceReadLockZombieCleanup): a
// reader whose lease ran out without an unlock leaves its field behind; the
// other client's last read unlock sees its timeout keys gone, deletes the
// lock and lets a writer in.
func zombieReader(w *world, javaZombie bool) {
	name := lockName("zombie")
	rw := w.g.NewReadWriteLock(name)
	owner, _ := w.owner("")
	tid := w.j.newTid()
	if javaZombie {
		ok(w.j, "readtrylock "+name+" "+tid+" 0 1000")
		Expect(rw.ReadLock().Lock(owner)).To(Succeed())
	} else {
		Expect(rw.ReadLock().TryLock(owner, 0, time.Second)).To(BeTrue())
		ok(w.j, "readlock "+name+" "+tid)
	}
	time.Sleep(1500 * time.Millisecond)
	n, err := w.e.raw.HLen(context.Background(), name).Result()
	Expect(err).NotTo(HaveOccurred())
	Expect(n).To(BeEquivalentTo(3), "mode, the live reader and the zombie's field")
	writer, _ := w.owner("")
	if javaZombie {
		Expect(rw.ReadLock().Unlock(owner)).To(Succeed())
		Expect(rw.WriteLock().TryLock(writer, 0, 0)).To(BeTrue(), "the zombie reader still blocks writers")
		Expect(rw.WriteLock().Unlock(writer)).To(Succeed())
		return
	}
	ok(w.j, "readunlock "+name+" "+tid)
	wt := w.j.newTid()
	Expect(do(w.j, "writetrylock "+name+" "+wt+" 0")).To(Equal("ok"), "the zombie reader still blocks writers")
	ok(w.j, "writeunlock "+name+" "+wt)
}

// ----- fenced lock -----

// tokensAcross (Redisson's testTokenIncrease): every acquisition, re-entries
// included, by either client, takes a larger token.
func tokensAcross(w *world) {
	j, name := w.j, lockName("tokens")
	fl := w.g.NewFencedLock(name)
	owner, _ := w.owner("")
	tid := j.newTid()
	var tokens []int64
	add := func(t int64) { tokens = append(tokens, t) }
	javaToken := func(a string) int64 {
		GinkgoHelper()
		s, found := strings.CutPrefix(a, "token ")
		Expect(found).To(BeTrue(), a)
		n, err := strconv.ParseInt(s, 10, 64)
		Expect(err).NotTo(HaveOccurred())
		return n
	}
	t, err := fl.LockToken(owner)
	Expect(err).NotTo(HaveOccurred())
	add(t)
	t, held, err := fl.TryLockToken(owner, 0, 0)
	Expect(err).NotTo(HaveOccurred())
	Expect(held).To(BeTrue())
	add(t)
	Expect(fl.Unlock(owner)).To(Succeed())
	Expect(fl.Unlock(owner)).To(Succeed())
	add(javaToken(do(j, "fencedlock "+name+" "+tid)))
	add(javaToken(do(j, "fencedtrylock "+name+" "+tid+" 0")))
	ok(j, "fencedunlock "+name+" "+tid)
	// goredisson waits for Redisson's hold, then Redisson for goredisson's.
	got := make(chan int64, 1)
	w.goBg(func() {
		t, held, err := fl.TryLockToken(owner, 10*time.Second, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(held).To(BeTrue())
		got <- t
	})
	awaitSubscribed("redisson_lock__channel:{" + name + "}")
	c := j.send("fencedunlock " + name + " " + tid)
	Eventually(got).WithTimeout(5 * time.Second).Should(Receive(&t))
	Expect(answerWithin(c, time.Second, "unlock")).To(Equal("ok"))
	add(t)
	c = j.send("fencedtrylock " + name + " " + tid + " 10000")
	w.awaitJavaWaiting(kFenced, name, j.field(tid))
	Expect(fl.Unlock(owner)).To(Succeed())
	add(javaToken(answerWithin(c, 5*time.Second, "the Redisson waiter")))
	ok(j, "fencedunlock "+name+" "+tid)

	for i := 1; i < len(tokens); i++ {
		Expect(tokens[i]).To(BeNumerically(">", tokens[i-1]), "tokens %v must strictly increase", tokens)
	}
	last := tokens[len(tokens)-1]
	Expect(fl.Token(owner)).To(Equal(last))
	Expect(javaToken(do(j, "fencedtoken "+name))).To(Equal(last))
}

// ----- messages -----

// msgCase is a sequence of steps "<probe kind prefix>:<op>:<owner>" (ops:
// lock, unlock, force; owners: a, b) and the messages it must publish on
// the lock's channels, as "channel=payload" with {n} for "{<name>}".
type msgCase struct {
	steps []string
	want  []string
}

// publishes runs the case on one client and compares the messages.
func publishes(w *world, c msgCase, java bool) {
	name := lockName("msgs")
	msgs := w.listen("redisson_lock__channel:{"+name+"}", "redisson_rwlock:{"+name+"}")
	if java {
		javaSteps(w, name, c.steps)
	} else {
		goSteps(w, name, c.steps)
	}
	want := []string{}
	for _, m := range c.want {
		want = append(want, strings.ReplaceAll(m, "{n}", "{"+name+"}"))
	}
	Expect(messagesWithin(msgs, 300*time.Millisecond)).To(Equal(want))
}

// goSteps runs the steps on goredisson, one context owner per step owner.
func goSteps(w *world, name string, steps []string) {
	GinkgoHelper()
	owners := map[string]context.Context{}
	for _, s := range steps {
		p := strings.Split(s, ":")
		if owners[p[2]] == nil {
			owners[p[2]], _ = w.owner("")
		}
		owner, l := owners[p[2]], kindByCmd(p[0]).goLock(w.g, name)
		switch p[1] {
		case "lock":
			Expect(l.Lock(owner)).To(Succeed(), s)
		case "unlock":
			Expect(l.Unlock(owner)).To(Succeed(), s)
		case "force":
			Expect(l.ForceUnlock(owner)).To(BeTrue(), s)
		}
	}
}

// javaSteps runs the steps on Redisson, one thread per step owner.
func javaSteps(w *world, name string, steps []string) {
	GinkgoHelper()
	tids := map[string]string{}
	for _, s := range steps {
		p := strings.Split(s, ":")
		if tids[p[2]] == "" {
			tids[p[2]] = w.j.newTid()
		}
		switch p[1] {
		case "lock":
			Expect(heldAnswer(do(w.j, p[0]+"lock "+name+" "+tids[p[2]]))).To(BeTrue(), s)
		case "unlock":
			ok(w.j, p[0]+"unlock "+name+" "+tids[p[2]])
		case "force":
			Expect(do(w.j, p[0]+"forceunlock "+name)).To(Equal("true"), s)
		}
	}
}

func kindByCmd(cmd string) kind {
	for _, k := range []kind{kLock, kFair, kFenced, kSpin, kWrite, kRead} {
		if k.cmd == cmd {
			return k
		}
	}
	panic("unknown kind " + cmd)
}

// msgCases are Redisson's messages, operation by operation.
var msgCases = []struct {
	what string
	msgCase
}{
	{"RLock: only the last unlock publishes 0 on redisson_lock__channel",
		msgCase{[]string{":lock:a", ":lock:a", ":unlock:a", ":unlock:a"}, []string{"redisson_lock__channel:{n}=0"}}},
	{"RLock: a force unlock publishes 0",
		msgCase{[]string{":lock:a", ":force:a"}, []string{"redisson_lock__channel:{n}=0"}}},
	{"FencedLock: only the last unlock publishes 0 on redisson_lock__channel",
		msgCase{[]string{"fenced:lock:a", "fenced:lock:a", "fenced:unlock:a", "fenced:unlock:a"}, []string{"redisson_lock__channel:{n}=0"}}},
	{"SpinLock: neither an unlock nor a force unlock publishes anything",
		msgCase{[]string{"spin:lock:a", "spin:unlock:a", "spin:lock:a", "spin:force:a"}, []string{}}},
	{"FairLock: an unlock with nobody queued publishes nothing",
		msgCase{[]string{"fair:lock:a", "fair:unlock:a"}, []string{}}},
	{"ReadWriteLock: only the last read unlock publishes 0 on redisson_rwlock",
		msgCase{[]string{"read:lock:a", "read:lock:b", "read:lock:a", "read:unlock:a", "read:unlock:b", "read:unlock:a"},
			[]string{"redisson_rwlock:{n}=0"}}},
	{"ReadWriteLock: only the last write unlock publishes 1",
		msgCase{[]string{"write:lock:a", "write:lock:a", "write:unlock:a", "write:unlock:a"}, []string{"redisson_rwlock:{n}=1"}}},
	{"ReadWriteLock: a write unlock that leaves the writer's read hold publishes nothing, the read unlock then 0",
		msgCase{[]string{"write:lock:a", "read:lock:a", "write:unlock:a", "read:unlock:a"}, []string{"redisson_rwlock:{n}=0"}}},
	{"ReadWriteLock: a read force unlock publishes 0",
		msgCase{[]string{"read:lock:a", "read:force:a"}, []string{"redisson_rwlock:{n}=0"}}},
	{"ReadWriteLock: a write force unlock publishes 1",
		msgCase{[]string{"write:lock:a", "write:force:a"}, []string{"redisson_rwlock:{n}=1"}}},
}

// readHoldsAcross: readers of both clients share the lock, each sees the
// other's read hold count in the hash, neither can release the other's
// hold, and both keep the other client's writer out.
func readHoldsAcross(w *world) {
	j, name := w.j, lockName("readholds")
	rw := w.g.NewReadWriteLock(name)
	owner, goField := w.owner("")
	writer, _ := w.owner("")
	tid, wt := j.newTid(), j.newTid()
	jField := j.field(tid)

	ok(j, "readlock "+name+" "+tid)
	ok(j, "readlock "+name+" "+tid)
	Expect(rw.ReadLock().TryLock(owner, 0, 0)).To(BeTrue(), "readers of both clients share the lock")
	Expect(w.hget(name, "mode")).To(Equal("read"))
	Expect(w.hget(name, jField)).To(Equal("2"), "Redisson's read hold count, read by goredisson's side from the hash")
	Expect(w.hget(name, goField)).To(Equal("1"))
	Expect(do(j, "readholdcount "+name+" "+tid)).To(Equal("2"))
	Expect(rw.ReadLock().HoldCount(owner)).To(Equal(1))
	Expect(rw.ReadLock().IsLocked(owner)).To(BeTrue())
	Expect(do(j, "readislocked "+name)).To(Equal("true"))
	Expect(rw.WriteLock().IsLocked(owner)).To(BeFalse())
	Expect(do(j, "writeislocked "+name)).To(Equal("false"))

	Expect(rw.WriteLock().TryLock(writer, 0, 0)).To(BeFalse(), "a goredisson writer got in beside readers")
	Expect(do(j, "writetrylock "+name+" "+wt+" 0")).To(Equal("false"), "a Redisson writer got in beside readers")
	Expect(do(j, "readunlock "+name+" "+wt)).To(HavePrefix("err IllegalMonitorStateException"))
	Expect(rw.ReadLock().Unlock(writer)).To(MatchError(rlock.ErrNotHeld))

	ok(j, "readunlock "+name+" "+tid)
	ok(j, "readunlock "+name+" "+tid)
	Expect(w.hget(name, jField)).To(BeEmpty())
	Expect(do(j, "writetrylock "+name+" "+wt+" 0")).To(Equal("false"), "goredisson's reader still holds it")
	Expect(rw.ReadLock().Unlock(owner)).To(Succeed())
	Expect(do(j, "writetrylock "+name+" "+wt+" 0")).To(Equal("ok"))
	Expect(rw.ReadLock().TryLock(owner, 0, 0)).To(BeFalse(), "a goredisson reader got in beside a Redisson writer")
	ok(j, "writeunlock "+name+" "+wt)
}

// rwForceUnlockModes (Redisson's testForceUnlock): each side's force
// unlock deletes the lock only when it is held in that side's mode.
func rwForceUnlockModes(w *world, javaHolds bool) {
	j, name := w.j, lockName("forcemodes")
	rw := w.g.NewReadWriteLock(name)
	owner, _ := w.owner("")
	tid := j.newTid()
	for _, held := range []string{"read", "write"} {
		wrong, right := "write", "read"
		if held == "write" {
			wrong, right = "read", "write"
		}
		side := map[string]rlock.Locker{"read": rw.ReadLock(), "write": rw.WriteLock()}
		if javaHolds {
			ok(j, held+"lock "+name+" "+tid)
			Expect(side[wrong].ForceUnlock(owner)).To(BeFalse(), "goredisson's %s force unlock of a %s lock", wrong, held)
			Expect(side[held].IsLocked(owner)).To(BeTrue())
			Expect(side[right].ForceUnlock(owner)).To(BeTrue())
			Expect(do(j, held+"islocked "+name)).To(Equal("false"))
			continue
		}
		Expect(side[held].Lock(owner)).To(Succeed())
		Expect(do(j, wrong+"forceunlock "+name)).To(Equal("false"), "Redisson's %s force unlock of a %s lock", wrong, held)
		Expect(do(j, held+"islocked "+name)).To(Equal("true"))
		Expect(do(j, right+"forceunlock "+name)).To(Equal("true"))
		Expect(side[held].IsLocked(owner)).To(BeFalse())
	}
}

// readSideLocked (Redisson's testReadLockIsLocked, testWR): the read side
// is locked while the writer also holds a read lock, on both clients; the
// write side is locked while a writer holds it, read holds or not.
func readSideLocked(w *world, javaHolds bool) {
	name := lockName("readside")
	holder, other := w.goRW(name), w.javaRW(name)
	if javaHolds {
		holder, other = other, holder
	}
	views := []*rwHolder{other, holder}
	holder.writeLock()
	for _, v := range views {
		Expect(v.readIsLocked()).To(BeFalse(), "%s: the read side of a write-only hold", v.client)
		Expect(v.writeIsLocked()).To(BeTrue(), "%s: the write side of a write hold", v.client)
	}
	holder.readLock()
	for _, v := range views {
		Expect(v.readIsLocked()).To(BeTrue(), "%s: the read side while the writer also holds a read lock", v.client)
		Expect(v.writeIsLocked()).To(BeTrue(), "%s: the write side while the writer also reads", v.client)
	}
	holder.readUnlock()
	for _, v := range views {
		Expect(v.readIsLocked()).To(BeFalse(), "%s: the read side after the writer's read unlock", v.client)
	}
	holder.writeUnlock()
	for _, v := range views {
		Expect(v.writeIsLocked()).To(BeFalse(), "%s: the write side after the write unlock", v.client)
	}
}
