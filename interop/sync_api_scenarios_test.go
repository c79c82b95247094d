package interop_test

// Scenarios for the rest of Redisson's synchronizer API (revision 3 of
// goredisson's API): each runs with Redisson on either side.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// permitIDs returns the ids of an answer "ids <hex>,<hex>,...".
func permitIDs(answer string, n int) []string {
	GinkgoHelper()
	list, found := strings.CutPrefix(answer, "ids ")
	Expect(found).To(BeTrue(), "not permit ids: %q", answer)
	ids := strings.Split(list, ",")
	Expect(ids).To(HaveLen(n))
	for _, id := range ids {
		Expect(id).To(MatchRegexp(`^[0-9a-f]{32}$`))
	}
	return ids
}

// bothSeeMs expects both clients to answer cmd with a number of ms within
// [lo, hi].
func (s *syncWorld) bothSeeMs(cmd string, lo, hi int64) {
	GinkgoHelper()
	for _, c := range s.both() {
		out := call(c, cmd)
		n, err := strconv.ParseInt(out, 10, 64)
		Expect(err).NotTo(HaveOccurred(), "%s: %s: %q", c.title(), cmd, out)
		Expect(n).To(And(BeNumerically(">=", lo), BeNumerically("<=", hi)), "%s: %s", c.title(), cmd)
	}
}

// ----- Semaphore -----

// semaphoreTTLAndIfExists: permits one client sets with a time to live
// live in one key both see, with its TTL; releaseIfExists adds to it from
// either side and does nothing once it is deleted; the key's TTL can be set
// and cleared from either side; a negative count drains the same on both.
func semaphoreTTLAndIfExists(s *syncWorld, javaSets bool) {
	setter, other := s.pair(javaSets)
	name := s.name("sem-ttl")
	n := " " + name + " "
	Expect(call(other, "sem.releaseifexists"+n+"1")).To(Equal("false"), "no semaphore yet")
	s.bothSee("sem.exists "+name, "false")
	Expect(call(setter, "sem.trysetpermitsttl"+n+"3 60000")).To(Equal("true"))
	Expect(call(other, "sem.trysetpermitsttl"+n+"5 60000")).To(Equal("false"))
	Expect(call(other, "sem.trysetpermits"+n+"5")).To(Equal("false"))
	s.bothSee("sem.available "+name, "3")
	s.bothSeeMs("sem.remain "+name, 55000, 60000)
	Expect(call(other, "sem.releaseifexists"+n+"2")).To(Equal("true"))
	s.bothSee("sem.available "+name, "5")
	s.bothSeeMs("sem.remain "+name, 55000, 60000)
	Expect(call(other, "sem.clearexpire "+name)).To(Equal("true"))
	s.bothSee("sem.remain "+name, "-1")
	Expect(call(setter, "sem.expire"+n+"30000")).To(Equal("true"))
	s.bothSeeMs("sem.remain "+name, 25000, 30000)
	Expect(call(setter, "sem.delete "+name)).To(Equal("true"))
	s.bothSee("sem.exists "+name, "false")
	for _, c := range s.both() {
		Expect(call(c, "sem.releaseifexists"+n+"1")).To(Equal("false"), "%s releases into a deleted semaphore", c.title())
		Expect(call(c, "sem.delete "+name)).To(Equal("false"))
	}
	s.bothSee("sem.available "+name, "0")

	Expect(call(setter, "sem.trysetpermits"+n+"1")).To(Equal("true"))
	Expect(call(setter, "sem.addpermits"+n+"-3")).To(Equal("ok"))
	s.bothSee("sem.available "+name, "-2")
	Expect(call(other, "sem.drain "+name)).To(Equal("-2"), "a negative count drains as it is")
	s.bothSee("sem.available "+name, "0")
}

// ----- PermitExpirableSemaphore -----

// permitsMany: n permits one client takes at once the other sees and
// releases, all or none, by their ids; both count available, acquired and
// all permits alike, and refuse a release of ids of which one is gone.
func permitsMany(s *syncWorld, javaAcquires bool) {
	acq, rel := s.pair(javaAcquires)
	name := s.name("psem-many")
	n := " " + name + " "
	Expect(call(acq, "psem.trysetpermits"+n+"5")).To(Equal("true"))
	ids := permitIDs(call(acq, "psem.acquiren"+n+acq.newTid()+" 3 -1"), 3)
	expiry := s.permitExpiry(name, ids[0])
	for _, id := range ids {
		Expect(s.permitExpiry(name, id)).To(Equal(expiry), "one score for the permits of one acquire")
	}
	s.bothSee("psem.available "+name, "2")
	s.bothSee("psem.acquired "+name, "3")
	s.bothSee("psem.permits "+name, "5")
	Expect(call(acq, "psem.tryacquiren"+n+acq.newTid()+" 3 0 -1")).To(Equal("false"))
	Expect(call(rel, "psem.releasen"+n+ids[0]+","+ids[1])).To(Equal("ok"))
	s.bothSee("psem.available "+name, "4")
	for _, c := range s.both() {
		Expect(call(c, "psem.tryreleasen"+n+ids[1]+","+ids[2])).To(Equal("0"), "%s: one of the ids is released already", c.title())
		Expect(call(c, "psem.releasen"+n+ids[2]+","+ids[0])).To(HavePrefix("err "), "%s: ReleaseN with a released id", c.title())
	}
	s.bothSee("psem.available "+name, "4")
	Expect(call(rel, "psem.tryrelease"+n+ids[2])).To(Equal("true"))
	Expect(call(acq, "psem.tryrelease"+n+ids[2])).To(Equal("false"))
	s.bothSee("psem.available "+name, "5")
	s.bothSee("psem.acquired "+name, "0")
	more := permitIDs(call(rel, "psem.tryacquiren"+n+rel.newTid()+" 2 0 -1"), 2)
	Expect(call(acq, "psem.tryreleasen"+n+strings.Join(more, ","))).To(Equal("2"))
	s.bothSee("psem.available "+name, "5")
}

// permitsManyWake: a client's waiter for 2 permits sleeps through the other
// client's release of one and is woken by its release of two more, in one
// call, within the bound.
func permitsManyWake(s *syncWorld, javaWaits bool) {
	waiter, holder := s.pair(javaWaits)
	name := s.name("psem-many-wake")
	n := " " + name + " "
	Expect(call(holder, "psem.trysetpermits"+n+"3")).To(Equal("true"))
	ids := permitIDs(call(holder, "psem.acquiren"+n+holder.newTid()+" 3 -1"), 3)
	c := waiter.send("psem.acquiren" + n + waiter.newTid() + " 2 -1")
	awaitWaiting(waiter, semCh(name), 1)
	Expect(call(holder, "psem.tryreleasen"+n+ids[0])).To(Equal("1"))
	notYet(c, "the "+waiter.title()+" waiter for 2 permits")
	rc := holder.send("psem.releasen" + n + ids[1] + "," + ids[2])
	Expect(answerWithin(rc, 10*time.Second, "releasen")).To(Equal("ok"))
	got := permitIDs(answerWithin(c, 5*time.Second, "the "+waiter.title()+" waiter"), 2)
	s.expectWake(fmt.Sprintf("PermitExpirableSemaphore: %s %s of 2 wakes a %s %s", holder.title(),
		verb(holder, "release(List)", "ReleaseN"), waiter.title(), verb(waiter, "acquire(2)", "AcquireN(2)")), c.at().Sub(rc.sent))
	s.bothSee("psem.available "+name, "1")
	Expect(call(waiter, "psem.releasen"+n+strings.Join(got, ","))).To(Equal("ok"))
}

// permitsUpdateLease: a lease one client gave its permit the other extends,
// so that the permit outlives its first lease; both read the same remaining
// lease, then none (-1) once made permanent; an id released is refused an
// update by both.
func permitsUpdateLease(s *syncWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	name := s.name("psem-update")
	n := " " + name + " "
	Expect(call(holder, "psem.trysetpermits"+n+"1")).To(Equal("true"))
	id := permitID(call(holder, "psem.acquire"+n+holder.newTid()+" 1000"))
	Expect(call(other, "psem.updatelease"+n+id+" 10000")).To(Equal("true"))
	s.bothSeeMs("psem.leasetime"+n+id, 9000, 10000)
	Expect(time.Until(s.permitExpiry(name, id))).To(BeNumerically("~", 10*time.Second, time.Second))
	Expect(call(other, "psem.tryacquire"+n+other.newTid()+" 1500 -1")).To(Equal("false"), "the permit outlived its first lease")
	Expect(call(holder, "psem.updatelease"+n+id+" -1")).To(Equal("true"))
	s.bothSee("psem.leasetime"+n+id, "-1")
	Expect(s.permitExpiry(name, id).UnixMilli()).To(Equal(int64(922337203685477)))
	Expect(call(other, "psem.release"+n+id)).To(Equal("ok"))
	for _, c := range s.both() {
		Expect(call(c, "psem.updatelease"+n+id+" 1000")).To(Equal("false"), "%s updates a released id", c.title())
		Expect(call(c, "psem.tryrelease"+n+id)).To(Equal("false"))
		Expect(call(c, "psem.leasetime"+n+id)).To(HavePrefix("err "), "%s reads the lease of a released id", c.title())
	}
}

// permitsSetAdd: the total one client sets the other sees, with the
// permits it took counted in; lowering it below those taken leaves fewer
// than zero available on both; additions and removals, from either side,
// are seen by both; the semaphore's keys expire and go together.
func permitsSetAdd(s *syncWorld, javaSets bool) {
	setter, other := s.pair(javaSets)
	name := s.name("psem-set")
	n := " " + name + " "
	Expect(call(setter, "psem.setpermits"+n+"4")).To(Equal("ok"))
	s.bothSee("psem.permits "+name, "4")
	s.bothSee("psem.available "+name, "4")
	permitIDs(call(other, "psem.acquiren"+n+other.newTid()+" 3 -1"), 3)
	Expect(call(setter, "psem.setpermits"+n+"2")).To(Equal("ok"))
	s.bothSee("psem.permits "+name, "2")
	s.bothSee("psem.available "+name, "-1")
	s.bothSee("psem.acquired "+name, "3")
	Expect(call(other, "psem.addpermits"+n+"5")).To(Equal("ok"))
	s.bothSee("psem.available "+name, "4")
	Expect(call(setter, "psem.addpermits"+n+"-1")).To(Equal("ok"))
	s.bothSee("psem.available "+name, "3")
	s.bothSee("psem.permits "+name, "6")
	Expect(call(other, "psem.expire"+n+"60000")).To(Equal("true"))
	for _, k := range []string{name, permitsKey(name)} {
		Expect(s.e.raw.PTTL(context.Background(), k).Val()).To(BeNumerically(">", 55*time.Second), k)
	}
	s.bothSee("psem.exists "+name, "true")
	Expect(call(setter, "psem.delete "+name)).To(Equal("true"))
	s.bothSee("psem.exists "+name, "false")
	Expect(s.e.raw.Exists(context.Background(), name, permitsKey(name)).Val()).To(BeZero())
}

// ----- CountDownLatch -----

// latchDelete: a latch one client deletes is open for both (count 0, no
// key) and takes a new count from either; the deletion wakes goredisson's
// waiter within the bound, whichever client deleted.
func latchDelete(s *syncWorld, javaDeletes bool) {
	deleter, setter := s.pair(javaDeletes)
	name := s.name("latch-delete")
	Expect(call(setter, "latch.trysetcount "+name+" 2")).To(Equal("true"))
	s.bothSee("latch.exists "+name, "true")
	gw := s.gor.send("latch.await " + name + " " + s.gor.newTid())
	awaitWaiting(s.gor, latchCh(name), 1)
	notYet(gw, "goredisson's awaiter")
	dc := deleter.send("latch.delete " + name)
	Expect(answerWithin(dc, 10*time.Second, "delete")).To(Equal("true"))
	Expect(answerWithin(gw, 5*time.Second, "goredisson's awaiter")).To(Equal("ok"))
	s.expectWake(fmt.Sprintf("CountDownLatch: %s %s wakes a goredisson Await", deleter.title(), verb(deleter, "delete()", "Delete")), gw.at().Sub(dc.sent))
	s.bothSee("latch.exists "+name, "false")
	s.bothSee("latch.count "+name, "0")
	for _, c := range s.both() {
		Expect(call(c, "latch.delete "+name)).To(Equal("false"))
	}
	Expect(call(deleter, "latch.trysetcount "+name+" 1")).To(Equal("true"))
	Expect(call(setter, "latch.trysetcount "+name+" 3")).To(Equal("false"))
	s.bothSee("latch.count "+name, "1")
}
