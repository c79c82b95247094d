package interop_test

// Scenarios between Redisson's synchronizers (through SyncProbe) and
// goredisson's: each names its two clients by role, so that one function
// runs in both directions.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
)

// syncWorld is a synchronizer spec's setting: Redisson and goredisson.
type syncWorld struct {
	*world
	java, gor syncSide
	// tagged makes the scenario's names hash-tagged: "{<name>}:x".
	tagged bool
	seq    int
}

// name returns a synchronizer name unique to the spec and the call.
func (s *syncWorld) name(prefix string) string {
	s.seq++
	name := fmt.Sprintf("%s:%d", lockName(prefix), s.seq)
	if s.tagged {
		return "{" + name + "}:x"
	}
	return name
}

// expectWake records a measured wake-up of a synchronizer scenario and
// checks it against the bound.
func (s *syncWorld) expectWake(scenario string, d time.Duration) {
	GinkgoHelper()
	if s.tagged {
		scenario += " (hash-tagged name)"
	}
	expectWake("redisson", scenario, d)
}

// newSyncWorld makes a spec's world; it skips the spec when SyncProbe
// cannot run here.
func newSyncWorld() *syncWorld {
	GinkgoHelper()
	j := redissonSync()
	w := newWorld(func(*env) redissonSide { return nil })
	return &syncWorld{world: w, java: j, gor: newGoSync(w)}
}

// pair returns the two clients, Redisson first when javaFirst.
func (s *syncWorld) pair(javaFirst bool) (syncSide, syncSide) {
	if javaFirst {
		return s.java, s.gor
	}
	return s.gor, s.java
}

// both returns both clients.
func (s *syncWorld) both() []syncSide { return []syncSide{s.java, s.gor} }

// call runs a command on a client and returns its answer.
func call(s syncSide, cmd string) string {
	GinkgoHelper()
	out, err := s.send(cmd).wait(30 * time.Second)
	Expect(err).NotTo(HaveOccurred(), "%s: %s", s.title(), cmd)
	return out
}

// bothSee expects the same answer to cmd from both clients.
func (s *syncWorld) bothSee(cmd, want string) {
	GinkgoHelper()
	for _, c := range s.both() {
		Expect(call(c, cmd)).To(Equal(want), "%s: %s", c.title(), cmd)
	}
}

// Redisson's names: prefixName and suffixName put the name in braces unless
// it holds one; the latch's channel always does.
func semCh(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_sc:" + name
	}
	return "redisson_sc:{" + name + "}"
}

func permitsKey(name string) string {
	if strings.Contains(name, "{") {
		return name + ":timeout"
	}
	return "{" + name + "}:timeout"
}

func latchCh(name string) string { return "redisson_countdownlatch__channel__{" + name + "}" }

// awaitWaiting returns once at least subs connections are subscribed to ch
// and the waiters of s had time to fall asleep on it.
func awaitWaiting(s syncSide, ch string, subs int64) {
	GinkgoHelper()
	rdb := server.Client()
	defer rdb.Close()
	Eventually(func() int64 {
		return rdb.PubSubNumSub(context.Background(), ch).Val()[ch]
	}).WithTimeout(10*time.Second).WithPolling(5*time.Millisecond).Should(BeNumerically(">=", subs), "subscribers of %s", ch)
	time.Sleep(s.settle())
}

// verb names an operation as each client spells it.
func verb(s syncSide, java, gor string) string {
	if s.title() == "Redisson" {
		return java
	}
	return gor
}

// permitID returns the id of an answer "id <hex>", which must be the hex of
// 16 bytes on both clients.
func permitID(answer string) string {
	GinkgoHelper()
	id, found := strings.CutPrefix(answer, "id ")
	Expect(found).To(BeTrue(), "not a permit id: %q", answer)
	Expect(id).To(MatchRegexp(`^[0-9a-f]{32}$`))
	return id
}

// refused matches a client's answer to the release of an unknown, released
// or expired permit id: Redisson's IllegalArgumentException, goredisson's
// ErrNotHeld.
func refused(s syncSide, id string) types.GomegaMatcher {
	if s.title() == "Redisson" {
		return ContainSubstring("IllegalArgumentException: Permit with id " + id + " has already been released or doesn't exist")
	}
	return HavePrefix("err ErrNotHeld: ")
}

// permitExpiry reads when a permit expires from the sorted set both
// clients keep it in: {name}:timeout, member = the id's 16 bytes.
func (s *syncWorld) permitExpiry(name, id string) time.Time {
	GinkgoHelper()
	raw, err := hex.DecodeString(id)
	Expect(err).NotTo(HaveOccurred())
	score, err := s.e.raw.ZScore(context.Background(), permitsKey(name), string(raw)).Result()
	Expect(err).NotTo(HaveOccurred(), "permit %s is not in %s", id, permitsKey(name))
	return time.UnixMilli(int64(score))
}

// ----- Semaphore -----

// semaphoreBound: holders of Redisson (threads) and goredisson (goroutines
// on two Clients) share one semaphore's permits; there are never more
// holders, counted across both, than permits, and holders of both hold at
// once.
func semaphoreBound(s *syncWorld) {
	const permits, perClient, rounds = 3, 4, 4
	const hold = 50 * time.Millisecond
	name := s.name("sem-bound")
	Expect(call(s.java, fmt.Sprintf("sem.trysetpermits %s %d", name, permits))).To(Equal("true"))

	var mu sync.Mutex
	now := map[string]int{}
	most, mixed := 0, false
	enter := func(c string) {
		mu.Lock()
		defer mu.Unlock()
		now[c]++
		total := now["Redisson"] + now["goredisson"]
		most = max(most, total)
		mixed = mixed || now["Redisson"] > 0 && now["goredisson"] > 0
	}
	leave := func(c string) {
		mu.Lock()
		defer mu.Unlock()
		now[c]--
	}
	// A holder counts from its acquire's return to before its release is
	// sent: never longer than it holds the permit.
	loop := func(c syncSide, tid string) error {
		for range rounds {
			if a, err := c.send("sem.acquire " + name + " " + tid + " 1").wait(60 * time.Second); err != nil || a != "ok" {
				return fmt.Errorf("%s acquire: %q %v", c.title(), a, err)
			}
			enter(c.title())
			time.Sleep(hold)
			leave(c.title())
			if a, err := c.send("sem.release " + name + " 1").wait(30 * time.Second); err != nil || a != "ok" {
				return fmt.Errorf("%s release: %q %v", c.title(), a, err)
			}
		}
		return nil
	}
	done := make(chan error, 2*perClient)
	gor2 := s.goSyncOn(s.e.goClient())
	for _, c := range s.both() {
		for i := range perClient {
			holder := c
			if i%2 == 1 && c == s.gor {
				holder = gor2
			}
			tid := holder.newTid()
			s.goBg(func() { done <- loop(holder, tid) })
		}
	}
	for range 2 * perClient {
		var err error
		Eventually(done).WithTimeout(90 * time.Second).Should(Receive(&err))
		Expect(err).NotTo(HaveOccurred())
	}
	fmt.Fprintf(GinkgoWriter, "most holders at once: %d of %d permits\n", most, permits)
	Expect(most).To(BeNumerically("<=", permits), "more holders than permits")
	Expect(mixed).To(BeTrue(), "holders of both clients never held at once")
	s.bothSee("sem.available "+name, fmt.Sprint(permits))
}

// semaphoreWake: a client's release (or trySetPermits, or addPermits)
// wakes the other client's waiter for 2 permits within the bound.
func semaphoreWake(s *syncWorld, javaWaits bool, how string, try bool) {
	waiter, waker := s.pair(javaWaits)
	name := s.name("sem-wake")
	var wake, wakeVerb string
	switch how {
	case "release":
		Expect(call(waker, "sem.trysetpermits "+name+" 2")).To(Equal("true"))
		Expect(call(waker, "sem.acquire "+name+" "+waker.newTid()+" 2")).To(Equal("ok"))
		wake, wakeVerb = "sem.release "+name+" 2", verb(waker, "release(2)", "Release(2)")
	case "trysetpermits":
		wake, wakeVerb = "sem.trysetpermits "+name+" 2", verb(waker, "trySetPermits(2)", "TrySetPermits(2)")
	case "addpermits":
		Expect(call(waker, "sem.trysetpermits "+name+" 1")).To(Equal("true"))
		wake, wakeVerb = "sem.addpermits "+name+" 1", verb(waker, "addPermits(1) to 1", "AddPermits(1) to 1")
	}
	tid := waiter.newTid()
	wait, want, waitVerb := "sem.acquire "+name+" "+tid+" 2", "ok", verb(waiter, "acquire(2)", "Acquire(2)")
	if try {
		wait, want, waitVerb = "sem.tryacquire "+name+" "+tid+" 2 10000", "true", verb(waiter, "tryAcquire(2, 10 s)", "TryAcquire(2, 10 s)")
	}
	c := waiter.send(wait)
	awaitWaiting(waiter, semCh(name), 1)
	Expect(c.answered()).To(BeFalse(), "the %s waiter got permits that were not there", waiter.title())
	wc := waker.send(wake)
	Expect(answerWithin(wc, 10*time.Second, wake)).To(Or(Equal("ok"), Equal("true")))
	Expect(answerWithin(c, 5*time.Second, "the "+waiter.title()+" waiter")).To(Equal(want))
	s.expectWake(fmt.Sprintf("Semaphore: %s %s wakes a %s %s", waker.title(), wakeVerb, waiter.title(), waitVerb), c.at().Sub(wc.sent))
	s.bothSee("sem.available "+name, "0")
}

// semaphoreCounts: what one client sets, adds, takes, gives back or drains
// the other sees, and a second trySetPermits fails on both.
func semaphoreCounts(s *syncWorld, javaSets bool) {
	setter, other := s.pair(javaSets)
	name := s.name("sem-counts")
	n := " " + name + " "
	s.bothSee("sem.available "+name, "0")
	Expect(call(setter, "sem.trysetpermits"+n+"5")).To(Equal("true"))
	Expect(call(other, "sem.trysetpermits"+n+"3")).To(Equal("false"))
	Expect(call(setter, "sem.trysetpermits"+n+"3")).To(Equal("false"))
	s.bothSee("sem.available "+name, "5")
	Expect(call(other, "sem.addpermits"+n+"2")).To(Equal("ok"))
	s.bothSee("sem.available "+name, "7")
	Expect(call(setter, "sem.addpermits"+n+"-3")).To(Equal("ok"))
	s.bothSee("sem.available "+name, "4")
	Expect(call(other, "sem.tryacquire"+n+other.newTid()+" 3 0")).To(Equal("true"))
	s.bothSee("sem.available "+name, "1")
	Expect(call(setter, "sem.tryacquire"+n+setter.newTid()+" 2 0")).To(Equal("false"))
	Expect(call(setter, "sem.release"+n+"3")).To(Equal("ok"))
	s.bothSee("sem.available "+name, "4")
	Expect(call(other, "sem.drain "+name)).To(Equal("4"))
	s.bothSee("sem.available "+name, "0")
	Expect(call(setter, "sem.drain "+name)).To(Equal("0"))
	Expect(s.e.raw.Get(context.Background(), name).Val()).To(Equal("0"))
}

// ----- PermitExpirableSemaphore -----

// permitsAcross: a permit id one client acquired the other releases; a
// released or unknown id is refused by both.
func permitsAcross(s *syncWorld, javaAcquires bool) {
	acq, rel := s.pair(javaAcquires)
	name := s.name("psem-ids")
	Expect(call(acq, "psem.trysetpermits "+name+" 2")).To(Equal("true"))
	Expect(call(rel, "psem.trysetpermits "+name+" 5")).To(Equal("false"))
	id := permitID(call(acq, "psem.acquire "+name+" "+acq.newTid()+" -1"))
	Expect(s.permitExpiry(name, id).UnixMilli()).To(Equal(int64(922337203685477)), "a permit without lease never expires")
	s.bothSee("psem.available "+name, "1")
	Expect(call(rel, "psem.release "+name+" "+id)).To(Equal("ok"))
	s.bothSee("psem.available "+name, "2")
	for _, c := range []syncSide{acq, rel} {
		Expect(call(c, "psem.release "+name+" "+id)).To(refused(c, id), "%s releases a released id", c.title())
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	unknown := hex.EncodeToString(raw)
	for _, c := range []syncSide{acq, rel} {
		Expect(call(c, "psem.release "+name+" "+unknown)).To(refused(c, unknown), "%s releases an unknown id", c.title())
	}
	s.bothSee("psem.available "+name, "2")
}

// permitLeaseExpiry: a permit's lease runs out and frees it for the other
// client's waiter, about when it does; the holder's late release is
// refused.
func permitLeaseExpiry(s *syncWorld, javaHolds bool) {
	holder, waiter := s.pair(javaHolds)
	name := s.name("psem-lease")
	Expect(call(waiter, "psem.trysetpermits "+name+" 1")).To(Equal("true"))
	id := permitID(call(holder, "psem.acquire "+name+" "+holder.newTid()+" 1000"))
	expiry := s.permitExpiry(name, id)
	Expect(time.Until(expiry)).To(BeNumerically("~", time.Second, 200*time.Millisecond))
	c := waiter.send("psem.acquire " + name + " " + waiter.newTid() + " -1")
	wid := permitID(answerWithin(c, 5*time.Second, "the "+waiter.title()+" waiter"))
	late := c.at().Sub(expiry)
	Expect(late).To(BeNumerically(">", -20*time.Millisecond), "the waiter got a permit before the lease ran out")
	s.expectWake(fmt.Sprintf("PermitExpirableSemaphore: %s's 1 s lease runs out, %s waiter in after (ms past the lease)",
		holder.title(), waiter.title()), late)
	Expect(call(holder, "psem.release "+name+" "+id)).To(refused(holder, id))
	s.bothSee("psem.available "+name, "0")
	Expect(call(holder, "psem.release "+name+" "+wid)).To(Equal("ok"), "the holder releases the waiter's permit")
	s.bothSee("psem.available "+name, "1")
}

// permitExpiredRelease: the release of a permit whose lease ran out (and
// that no operation put back yet) is refused by either client, and puts the
// permit back.
func permitExpiredRelease(s *syncWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	name := s.name("psem-expired")
	Expect(call(other, "psem.trysetpermits "+name+" 1")).To(Equal("true"))
	for _, releaser := range []syncSide{other, holder} {
		id := permitID(call(holder, "psem.acquire "+name+" "+holder.newTid()+" 1000"))
		time.Sleep(time.Until(s.permitExpiry(name, id)) + 100*time.Millisecond)
		Expect(call(releaser, "psem.release "+name+" "+id)).To(refused(releaser, id), "%s releases an expired id", releaser.title())
		Expect(s.e.raw.Get(context.Background(), name).Val()).To(Equal("1"), "the refused release put the permit back")
		for _, c := range s.both() {
			Expect(call(c, "psem.release "+name+" "+id)).To(refused(c, id), "%s releases the expired id again", c.title())
		}
		s.bothSee("psem.available "+name, "1")
	}
}

// permitWake: a client's release wakes the other client's waiter within
// the bound.
func permitWake(s *syncWorld, javaWaits, try bool) {
	waiter, holder := s.pair(javaWaits)
	name := s.name("psem-wake")
	Expect(call(holder, "psem.trysetpermits "+name+" 1")).To(Equal("true"))
	id := permitID(call(holder, "psem.acquire "+name+" "+holder.newTid()+" -1"))
	tid := waiter.newTid()
	wait, waitVerb := "psem.acquire "+name+" "+tid+" -1", verb(waiter, "acquire(-1)", "Acquire(0)")
	if try {
		wait, waitVerb = "psem.tryacquire "+name+" "+tid+" 10000 -1", verb(waiter, "tryAcquire(10 s, -1)", "TryAcquire(10 s, 0)")
	}
	c := waiter.send(wait)
	awaitWaiting(waiter, semCh(name), 1)
	Expect(c.answered()).To(BeFalse(), "the %s waiter got a permit that was not there", waiter.title())
	rc := holder.send("psem.release " + name + " " + id)
	Expect(answerWithin(rc, 10*time.Second, "release")).To(Equal("ok"))
	wid := permitID(answerWithin(c, 5*time.Second, "the "+waiter.title()+" waiter"))
	s.expectWake(fmt.Sprintf("PermitExpirableSemaphore: %s %s wakes a %s %s", holder.title(),
		verb(holder, "release(id)", "Release(id)"), waiter.title(), waitVerb), c.at().Sub(rc.sent))
	s.bothSee("psem.available "+name, "0")
	Expect(call(waiter, "psem.release "+name+" "+wid)).To(Equal("ok"))
	s.bothSee("psem.available "+name, "1")
}

// ----- CountDownLatch -----

// latchWake: one client's last countDown wakes every waiter of both
// clients (await, and await with a timeout) within the bound; a count set
// by the other client is the one counted down.
func latchWake(s *syncWorld, javaCounts bool) {
	counter, setter := s.pair(javaCounts)
	name := s.name("latch-wake")
	Expect(call(setter, "latch.trysetcount "+name+" 2")).To(Equal("true"))
	Expect(call(counter, "latch.trysetcount "+name+" 5")).To(Equal("false"))
	s.bothSee("latch.count "+name, "2")
	type waiting struct {
		c          *pcall
		want, what string
	}
	var waiters []waiting
	for _, c := range s.both() {
		waiters = append(waiters,
			waiting{c.send("latch.await " + name + " " + c.newTid()), "ok", c.title() + " " + verb(c, "await()", "Await")},
			waiting{c.send("latch.await " + name + " " + c.newTid() + " 10000"), "true", c.title() + " " + verb(c, "await(10 s)", "Await (ctx 10 s)")})
	}
	awaitWaiting(s.java, latchCh(name), 2)
	Expect(call(counter, "latch.countdown "+name)).To(Equal("ok"))
	Consistently(func() bool {
		for _, w := range waiters {
			if w.c.answered() {
				return true
			}
		}
		return false
	}).WithTimeout(300*time.Millisecond).Should(BeFalse(), "a waiter went on before the count reached zero")
	s.bothSee("latch.count "+name, "1")
	lc := counter.send("latch.countdown " + name)
	Expect(answerWithin(lc, 10*time.Second, "countdown")).To(Equal("ok"))
	for _, w := range waiters {
		Expect(answerWithin(w.c, 5*time.Second, w.what)).To(Equal(w.want), w.what)
		s.expectWake(fmt.Sprintf("CountDownLatch: %s last %s wakes a %s", counter.title(),
			verb(counter, "countDown()", "CountDown"), w.what), w.c.at().Sub(lc.sent))
	}
	s.bothSee("latch.count "+name, "0")
	Expect(s.e.raw.Exists(context.Background(), name).Val()).To(BeZero(), "an open latch has no key")
}

// latchCounts: a count one client sets the other sees and counts down; at
// zero the latch is open for both (await returns at once), and either can
// set a new count.
func latchCounts(s *syncWorld, javaSets bool) {
	setter, other := s.pair(javaSets)
	name := s.name("latch-counts")
	s.bothSee("latch.count "+name, "0")
	Expect(call(setter, "latch.trysetcount "+name+" 3")).To(Equal("true"))
	Expect(call(other, "latch.trysetcount "+name+" 1")).To(Equal("false"))
	s.bothSee("latch.count "+name, "3")
	for i, c := range []syncSide{other, setter, other} {
		Expect(call(c, "latch.countdown "+name)).To(Equal("ok"))
		s.bothSee("latch.count "+name, fmt.Sprint(2-i))
	}
	Expect(call(setter, "latch.countdown "+name)).To(Equal("ok"), "a count-down of an open latch")
	s.bothSee("latch.count "+name, "0")
	for _, c := range s.both() {
		Expect(call(c, "latch.await "+name+" "+c.newTid())).To(Equal("ok"))
		Expect(call(c, "latch.await "+name+" "+c.newTid()+" 1")).To(Equal("true"))
	}
	Expect(call(other, "latch.trysetcount "+name+" 1")).To(Equal("true"))
	Expect(call(setter, "latch.trysetcount "+name+" 4")).To(Equal("false"))
	s.bothSee("latch.count "+name, "1")
	for _, c := range s.both() {
		Expect(call(c, "latch.await "+name+" "+c.newTid()+" 200")).To(Equal("false"), "%s awaits a closed latch", c.title())
	}
}

// ----- messages -----

// syncMsgCase is a sequence of SyncProbe commands (N: the name, T: a
// thread, $id: the last permit id acquired, $ids: the last ids acquired
// together; a leading ! expects an error)
// and the messages it must publish, as "channel=payload" with {n} for
// "{<name>}".
type syncMsgCase struct {
	what  string
	steps []string
	want  []string
}

// labels labels a case slow when it sleeps a second or more.
func (mc syncMsgCase) labels() Labels {
	for _, step := range mc.steps {
		if ms, ok := strings.CutPrefix(step, "sleep "); ok {
			if n, err := strconv.Atoi(ms); err == nil && n >= 1000 {
				return Label("slow")
			}
		}
	}
	return nil
}

// syncPublishes runs the case on one client and compares the messages.
func syncPublishes(w *world, c syncSide, mc syncMsgCase) {
	name := lockName("sync-msgs")
	msgs := w.listen(semCh(name), latchCh(name))
	tid, id, ids := c.newTid(), "", ""
	for _, step := range mc.steps {
		fails := strings.HasPrefix(step, "!")
		cmd := strings.NewReplacer("N", name, "T", tid, "$ids", ids, "$id", id).Replace(strings.TrimPrefix(step, "!"))
		out := call(c, cmd)
		if fails {
			Expect(out).To(HavePrefix("err "), cmd)
			continue
		}
		Expect(out).NotTo(HavePrefix("err "), cmd)
		if p, ok := strings.CutPrefix(out, "id "); ok {
			id = p
		}
		if p, ok := strings.CutPrefix(out, "ids "); ok {
			ids = p
		}
	}
	want := []string{}
	for _, m := range mc.want {
		want = append(want, strings.ReplaceAll(m, "{n}", "{"+name+"}"))
	}
	Expect(messagesWithin(msgs, 300*time.Millisecond)).To(Equal(want))
}

// syncMsgCases are Redisson's synchronizer messages, operation by
// operation.
var syncMsgCases = []syncMsgCase{
	{"Semaphore: trySetPermits, release and addPermits publish the permits now available on redisson_sc; acquire, drain and a refused trySetPermits publish nothing",
		[]string{"sem.trysetpermits N 3", "sem.trysetpermits N 4", "sem.tryacquire N T 2 0", "sem.release N 2",
			"sem.addpermits N 2", "sem.drain N", "sem.addpermits N -1", "sem.release N 1"},
		[]string{"redisson_sc:{n}=3", "redisson_sc:{n}=3", "redisson_sc:{n}=5", "redisson_sc:{n}=-1", "redisson_sc:{n}=0"}},
	{"PermitExpirableSemaphore: trySetPermits and a release publish the permits now available; acquire and a refused release publish nothing",
		[]string{"psem.trysetpermits N 2", "psem.acquire N T -1", "psem.release N $id", "!psem.release N $id"},
		[]string{"redisson_sc:{n}=2", "redisson_sc:{n}=2"}},
	{"PermitExpirableSemaphore: the first operation after a lease ran out puts the permit back and publishes the permits now available",
		[]string{"psem.trysetpermits N 1", "psem.acquire N T 1000", "sleep 1200", "psem.available N", "psem.available N"},
		[]string{"redisson_sc:{n}=1", "redisson_sc:{n}=1"}},
	{"CountDownLatch: trySetCount publishes 1 and the count-down to zero 0 on redisson_countdownlatch__channel__; other count-downs and a refused trySetCount publish nothing",
		[]string{"latch.trysetcount N 2", "latch.trysetcount N 3", "latch.countdown N", "latch.countdown N", "latch.countdown N", "latch.trysetcount N 1"},
		[]string{"redisson_countdownlatch__channel__{n}=1", "redisson_countdownlatch__channel__{n}=0", "redisson_countdownlatch__channel__{n}=1"}},
	{"Semaphore: trySetPermits with a time to live publishes the permits, releaseIfExists the permits then available; a releaseIfExists without a semaphore, a delete and expiry changes publish nothing",
		[]string{"sem.releaseifexists N 1", "sem.trysetpermitsttl N 2 60000", "sem.trysetpermitsttl N 3 60000", "sem.releaseifexists N 2",
			"sem.expire N 30000", "sem.clearexpire N", "sem.delete N", "sem.releaseifexists N 1"},
		[]string{"redisson_sc:{n}=2", "redisson_sc:{n}=4"}},
	{"PermitExpirableSemaphore: setPermits publishes the new total (nothing when it is already), addPermits the count added (nothing for a removal), a release of several ids the count released; updateLeaseTime, reads and a refused release of several publish nothing",
		[]string{"psem.setpermits N 3", "psem.setpermits N 3", "psem.acquiren N T 2 -1", "psem.setpermits N 4", "psem.addpermits N 2",
			"psem.addpermits N -1", "psem.permits N", "psem.acquired N", "psem.tryreleasen N $ids", "!psem.releasen N $ids",
			"psem.acquire N T -1", "psem.updatelease N $id 60000", "psem.leasetime N $id", "psem.tryrelease N $id"},
		[]string{"redisson_sc:{n}=3", "redisson_sc:{n}=4", "redisson_sc:{n}=2", "redisson_sc:{n}=2", "redisson_sc:{n}=5"}},
	{"CountDownLatch: delete publishes 1, as trySetCount does; a delete of no latch publishes nothing",
		[]string{"latch.trysetcount N 2", "latch.delete N", "latch.delete N"},
		[]string{"redisson_countdownlatch__channel__{n}=1", "redisson_countdownlatch__channel__{n}=1"}},
}
