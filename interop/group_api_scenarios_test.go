package interop_test

// Scenarios for the lock types Redisson added since 3.38 (goredisson's
// API revision 3): NonReentrantFairLock and the faster multilock
// (getMultiLock(group, values)), with Redisson on either side.

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Redisson's value fields (StringCodec: the value's UTF-8 bytes) of the
// values the faster multilock scenarios lock, as Redisson's own
// Hash.hash128toBase64 names them.
var fasterFields = map[string]string{
	"Jack_001": "7pNoDdizVy2xY792MaFv+w",
	"Mary_002": "kIX2DFOX4IWct7G7K6tV9A",
}

// expectFasterHolds expects the group hash to show field hf holding each
// of the values count times, with a deadline in the future.
func (s *groupWorld) expectFasterHolds(group, hf string, count string, values ...string) {
	GinkgoHelper()
	all := s.e.raw.HGetAll(context.Background(), group).Val()
	now := time.Now().UnixMilli()
	for _, v := range values {
		f := fasterFields[v]
		Expect(all).To(HaveKeyWithValue(f, hf), "HGETALL %s: the field of %s names its holder", group, v)
		Expect(all).To(HaveKeyWithValue(f+":"+hf+":lock_count", count), "HGETALL %s: %s's count", group, v)
		Expect(all).To(HaveKey(f+":"+hf+":expire_time"), "HGETALL %s", group)
		deadline, err := strconv.ParseInt(all[f+":"+hf+":expire_time"], 10, 64)
		Expect(err).NotTo(HaveOccurred())
		Expect(deadline).To(BeNumerically(">", now), "%s's deadline", v)
	}
}

// ----- NonReentrantFairLock -----

// nonReentrantFair: a non-reentrant fair lock held by one client is one
// field holding once; its holder's re-entry is refused on each client and
// changes nothing; waiters of both clients queue in Redisson's fair queue
// in arrival order and go in, in that order, each at the unlock before it.
func nonReentrantFair(s *groupWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	keys, name := s.names("nrfair", 1)
	ht := holder.newTid()
	Expect(call(holder, "nrfair lock "+name+" "+ht)).To(Equal("ok"))
	hf := holder.field(ht)
	s.expectHolds(hf, keys...)
	for _, cmd := range []string{"nrfair trylock " + name + " " + ht + " 0 -1", "nrfair trylock " + name + " " + ht + " 300 -1"} {
		Expect(call(holder, cmd)).To(reentryRefused(holder), "%s: %s", holder.title(), cmd)
	}
	s.expectHolds(hf, keys...)
	Expect(call(other, "nrfair trylock "+name+" "+other.newTid()+" 0 -1")).To(Equal("false"))
	s.expectHolds(hf, keys...)

	// The other client's waiter queues first, then one of the holder's.
	// (A tid's field is read before it blocks: the probe answers jtid on
	// the tid's own thread.)
	w1, w2 := other.newTid(), holder.newTid()
	f1, f2 := other.field(w1), holder.field(w2)
	c1 := other.send("nrfair lock " + name + " " + w1)
	s.awaitQueued(name, f1)
	c2 := holder.send("nrfair lock " + name + " " + w2)
	s.awaitQueued(name, f2)
	q, _ := s.fairQueue(name)
	Expect(q).To(Equal([]string{f1, f2}), "one queue, in arrival order")
	time.Sleep(other.settle())

	handOver(holder, other, c1, verb(other, "lock()", "Lock"), "nrfair unlock "+name+" "+ht, "NonReentrantFairLock", " (head of the queue)")
	s.expectHolds(f1, keys...)
	notYet(c2, holder.title()+"'s second waiter")
	Expect(call(other, "nrfair trylock "+name+" "+w1+" 0 -1")).To(reentryRefused(other))
	handOver(other, holder, c2, verb(holder, "lock()", "Lock"), "nrfair unlock "+name+" "+w1, "NonReentrantFairLock", " (next in the queue)")
	s.expectHolds(f2, keys...)
	Expect(call(holder, "nrfair unlock "+name+" "+w2)).To(Equal("ok"))
	s.expectFree(keys...)
	q, _ = s.fairQueue(name)
	Expect(q).To(BeEmpty())
}

// ----- faster multilock -----

// fasterExcludes: a faster multilock over {Jack_001, Mary_002} held by one
// client is Redisson's group hash, with the fields both compute for the
// values; the other client cannot take either value (nothing written), can
// take another value of the group, sees the lock held, and its waiter for
// Jack_001 is woken by the holder's unlock within the bound.
func fasterExcludes(s *groupWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	keys, _ := s.names("faster", 1)
	group := keys[0]
	both := group + ",Jack_001,Mary_002"
	ht := holder.newTid()
	Expect(call(holder, "faster lock "+both+" "+ht)).To(Equal("ok"))
	hf := holder.field(ht)
	s.expectFasterHolds(group, hf, "1", "Jack_001", "Mary_002")
	Expect(s.e.raw.HLen(context.Background(), group).Val()).To(BeEquivalentTo(6))
	Expect(call(holder, "faster lock "+both+" "+ht)).To(Equal("ok"), "re-entry")
	s.expectFasterHolds(group, hf, "2", "Jack_001", "Mary_002")

	before := s.e.raw.HGetAll(context.Background(), group).Val()
	ot := other.newTid()
	for _, wait := range []string{"0", "300"} {
		Expect(call(other, "faster trylock "+group+",Mary_002,Other_003 "+ot+" "+wait+" -1")).To(Equal("false"), "%s: wait %s ms", other.title(), wait)
	}
	Expect(s.e.raw.HGetAll(context.Background(), group).Val()).To(Equal(before), "a failed attempt writes nothing")
	Expect(call(other, "faster islocked "+group+",Mary_002 "+ot)).To(Equal("true"))
	Expect(call(other, "faster held "+both+" "+ot)).To(Equal("false"))
	Expect(call(holder, "faster held "+both+" "+ht)).To(Equal("true"))
	Expect(call(other, "faster trylock "+group+",Other_003 "+ot+" 0 -1")).To(Equal("ok"), "another value of the group")
	Expect(call(other, "faster unlock "+group+",Other_003 "+ot)).To(Equal("ok"))

	Expect(call(holder, "faster unlock "+both+" "+ht)).To(Equal("ok"))
	s.expectFasterHolds(group, hf, "1", "Jack_001", "Mary_002")
	wt := other.newTid()
	c := other.send("faster lock " + group + ",Jack_001 " + wt)
	awaitWaiting(other, lockCh(group), 1)
	handOver(holder, other, c, verb(other, "lock()", "Lock"), "faster unlock "+both+" "+ht, "FasterMultiLock", " of {Jack_001, Mary_002}")
	s.expectFasterHolds(group, other.field(wt), "1", "Jack_001")
	Expect(call(holder, "faster islocked "+group+",Mary_002 "+ht)).To(Equal("false"))
	Expect(call(other, "faster unlock "+group+",Jack_001 "+wt)).To(Equal("ok"))
	s.expectFree(group)
}

// fasterForce: a value one client holds the other force-unlocks; both see
// it free, and the holder's unlock is refused.
func fasterForce(s *groupWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	keys, _ := s.names("faster-force", 1)
	group := keys[0]
	ht := holder.newTid()
	Expect(call(holder, "faster lock "+group+",Jack_001 "+ht)).To(Equal("ok"))
	ot := other.newTid()
	Expect(call(other, "faster forceunlock "+group+",Jack_001 "+ot)).To(Equal("true"))
	for _, c := range []groupSide{holder, other} {
		Expect(call(c, "faster islocked "+group+",Jack_001 "+ot)).To(Equal("false"), c.title())
	}
	Expect(call(holder, "faster unlock "+group+",Jack_001 "+ht)).To(HavePrefix("err "), "%s unlocks a value it no longer holds", holder.title())
	Expect(call(other, "faster trylock "+group+",Jack_001 "+ot+" 0 -1")).To(Equal("ok"))
	Expect(call(other, "faster unlock "+group+",Jack_001 "+ot)).To(Equal("ok"))
	s.expectFree(group)
}
