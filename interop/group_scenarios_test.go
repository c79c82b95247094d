package interop_test

// Scenarios between Redisson's MultiLock, RedLock and NonReentrantLock
// (through GroupProbe) and goredisson's: each names its two clients by role,
// so that one function runs in both directions.

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
)

// groupWorld is a GroupProbe spec's setting: Redisson and goredisson.
type groupWorld struct {
	*world
	java, gor groupSide
}

// newGroupWorld makes a spec's world; it skips the spec when GroupProbe
// cannot run here.
func newGroupWorld() *groupWorld {
	GinkgoHelper()
	j := redissonGroup()
	w := newWorld(func(*env) redissonSide { return nil })
	return &groupWorld{world: w, java: j, gor: newGoGroup(w)}
}

// pair returns the two clients, Redisson first when javaFirst.
func (s *groupWorld) pair(javaFirst bool) (groupSide, groupSide) {
	if javaFirst {
		return s.java, s.gor
	}
	return s.gor, s.java
}

// names returns n lock names unique to the spec, and the GroupProbe
// argument naming them all in that order ("a,b,...").
func (s *groupWorld) names(prefix string, n int) ([]string, string) {
	var out []string
	for i := range n {
		out = append(out, lockName(fmt.Sprintf("%s-%c", prefix, 'a'+i)))
	}
	return out, strings.Join(out, ",")
}

// expectHolds expects every key to be a lock hash with exactly one field,
// the given holder's, holding once: the layout both clients share.
func (s *groupWorld) expectHolds(field string, keys ...string) {
	GinkgoHelper()
	for _, k := range keys {
		Expect(s.e.raw.HGetAll(context.Background(), k).Val()).To(Equal(map[string]string{field: "1"}), "HGETALL %s", k)
	}
}

// expectFree expects none of the keys to exist.
func (s *groupWorld) expectFree(keys ...string) {
	GinkgoHelper()
	for _, k := range keys {
		Expect(s.e.raw.Exists(context.Background(), k).Val()).To(BeZero(), "%s still exists: %v", k, s.e.raw.HGetAll(context.Background(), k).Val())
	}
}

// lockCh is the channel a Redisson RLock's waiters, and goredisson Lock's,
// wait on.
func lockCh(name string) string { return kLock.channel(name, "") }

// notYet expects a waiting call to stay unanswered for a while.
func notYet(c *pcall, who string) {
	GinkgoHelper()
	Consistently(c.answered).WithTimeout(300*time.Millisecond).WithPolling(10*time.Millisecond).
		Should(BeFalse(), "%s went on while the other client held the lock", who)
}

// shortTriesFail expects each of other's tryLock commands (cmd <tid>
// <wait> -1, waiting 0 and then 300 ms) to fail, and the holder's hold
// (field hf) on every key to stay as it was.
func (s *groupWorld) shortTriesFail(other groupSide, hf string, keys []string, cmds ...string) {
	GinkgoHelper()
	ot := other.newTid()
	for _, cmd := range cmds {
		for _, wait := range []string{"0", "300"} {
			Expect(call(other, cmd+" "+ot+" "+wait+" -1")).To(Equal("false"), "%s: %s (wait %s ms)", other.title(), cmd, wait)
		}
	}
	s.expectHolds(hf, keys...)
}

// handOver expects other's waiting call c (a kind acquisition, waiterVerb
// in the wake-up's label) to stay unanswered while holder holds, then
// unlocks with holder's unlockCmd and expects c to go on within the wake
// bound, recording the wake-up ("<kind>: <holder> unlock<of> wakes a ...").
func handOver(holder, other groupSide, c *pcall, waiterVerb, unlockCmd, kind, of string) {
	GinkgoHelper()
	notYet(c, other.title()+"'s "+kind)
	u := holder.send(unlockCmd)
	Expect(answerWithin(u, 10*time.Second, "unlock")).To(Equal("ok"))
	Expect(answerWithin(c, 5*time.Second, "the "+other.title()+" "+kind+" waiter")).To(Equal("ok"))
	expectWake("redisson", fmt.Sprintf("%s: %s %s%s wakes a %s %s", kind, holder.title(),
		verb(holder, "unlock()", "Unlock"), of, other.title(), waiterVerb), c.at().Sub(u.sent))
}

// reentryRefused matches a client's answer to its holder taking a
// non-reentrant lock again: Redisson's IllegalMonitorStateException,
// goredisson's ErrReentry.
func reentryRefused(s groupSide) types.GomegaMatcher {
	if s.title() == "Redisson" {
		return And(HavePrefix("err IllegalMonitorStateException: "), ContainSubstring("is non-reentrant"))
	}
	return HavePrefix("err ErrReentry: ")
}

// ----- MultiLock -----

// multiExcludes: a MultiLock over {a,b} held by one client excludes the
// other client's MultiLock over {a,b} and its plain lock on b, whose failed
// attempts leave nothing behind; the other's MultiLock waiter, waiting on a,
// holds both within the bound of the unlock (so by its message: the
// holder's leases are the 30 s watchdog's).
func multiExcludes(s *groupWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	keys, names := s.names("multi", 2)
	a, b := keys[0], keys[1]
	ht := holder.newTid()
	Expect(call(holder, "multi lock "+names+" "+ht)).To(Equal("ok"))
	hf := holder.field(ht)
	s.expectHolds(hf, a, b)

	s.shortTriesFail(other, hf, []string{a, b}, "multi trylock "+names, "plain trylock "+b)

	wt := other.newTid()
	c := other.send("multi lock " + names + " " + wt)
	awaitWaiting(other, lockCh(a), 1)
	handOver(holder, other, c, verb(other, "lock()", "Lock"), "multi unlock "+names+" "+ht, "MultiLock", " of {a,b}")
	s.expectHolds(other.field(wt), a, b)
	Expect(call(other, "multi held "+names+" "+wt)).To(Equal("true"))
	Expect(call(other, "multi unlock "+names+" "+wt)).To(Equal("ok"))
	s.expectFree(a, b)
}

// multiGivesBack: with b held by a plain lock of one client, the other's
// MultiLock over {a,b} fails, at once or after a wait, and gives a back.
func multiGivesBack(s *groupWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	keys, names := s.names("multi-back", 2)
	a, b := keys[0], keys[1]
	ht := holder.newTid()
	Expect(call(holder, "plain lock "+b+" "+ht)).To(Equal("ok"))
	ot := other.newTid()
	for _, wait := range []string{"0", "300"} {
		Expect(call(other, "multi trylock "+names+" "+ot+" "+wait+" -1")).To(Equal("false"), "%s: wait %s ms", other.title(), wait)
		s.expectFree(a)
		s.expectHolds(holder.field(ht), b)
	}
	Expect(call(holder, "plain unlock "+b+" "+ht)).To(Equal("ok"))
	Expect(call(other, "multi trylock "+names+" "+ot+" 0 -1")).To(Equal("ok"))
	s.expectHolds(other.field(ot), a, b)
	Expect(call(other, "multi unlock "+names+" "+ot)).To(Equal("ok"))
	s.expectFree(a, b)
}

// ----- RedLock -----

// redExcludes: a RedLock over three names held by one client makes the
// other's short tryLock fail, leaving nothing behind; the other's tryLock
// waiting 10 s gets it once the holder unlocks.
func redExcludes(s *groupWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	keys, names := s.names("red", 3)
	ht := holder.newTid()
	Expect(call(holder, "red lock "+names+" "+ht)).To(Equal("ok"))
	hf := holder.field(ht)
	s.expectHolds(hf, keys...)

	s.shortTriesFail(other, hf, keys, "red trylock "+names)

	wt := other.newTid()
	c := other.send("red trylock " + names + " " + wt + " 10000 -1")
	handOver(holder, other, c, verb(other, "tryLock(10 s)", "TryLock(10 s)"), "red unlock "+names+" "+ht, "RedLock", " of 3 names")
	s.expectHolds(other.field(wt), keys...)
	Expect(call(other, "red unlock "+names+" "+wt)).To(Equal("ok"))
	s.expectFree(keys...)
}

// redQuorum: with one of the three names held by a plain lock of one
// client, the other's RedLock is granted by the other two (and its unlock
// leaves the plain lock alone); with two held, it fails and gives back the
// one it got.
func redQuorum(s *groupWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	keys, names := s.names("red-quorum", 3)
	x, y, z := keys[0], keys[1], keys[2]
	ht := holder.newTid()
	Expect(call(holder, "plain lock "+y+" "+ht)).To(Equal("ok"))
	hf := holder.field(ht)

	ot := other.newTid()
	Expect(call(other, "red trylock "+names+" "+ot+" 0 -1")).To(Equal("ok"), "a majority is free")
	s.expectHolds(other.field(ot), x, z)
	s.expectHolds(hf, y)
	Expect(call(other, "red unlock "+names+" "+ot)).To(Equal("ok"))
	s.expectFree(x, z)
	s.expectHolds(hf, y)

	Expect(call(holder, "plain lock "+z+" "+ht)).To(Equal("ok"))
	for _, wait := range []string{"0", "300"} {
		Expect(call(other, "red trylock "+names+" "+ot+" "+wait+" -1")).To(Equal("false"), "%s: wait %s ms", other.title(), wait)
		s.expectFree(x)
		s.expectHolds(hf, y, z)
	}
}

// ----- NonReentrantLock -----

// nonReentrant: a non-reentrant lock held by one client is one hash field
// holding once; its holder's re-entry (tryLock and lock) is refused and
// changes nothing; the other client cannot take it, and its waiter gets it
// within the bound of the unlock, as one field again, and is refused
// re-entry in turn.
func nonReentrant(s *groupWorld, javaHolds bool) {
	holder, other := s.pair(javaHolds)
	keys, name := s.names("nr", 1)
	ht := holder.newTid()
	Expect(call(holder, "nr lock "+name+" "+ht)).To(Equal("ok"))
	hf := holder.field(ht)
	s.expectHolds(hf, keys...)
	for _, cmd := range []string{"nr trylock " + name + " " + ht + " 0 -1", "nr lock " + name + " " + ht} {
		Expect(call(holder, cmd)).To(reentryRefused(holder), "%s: %s", holder.title(), cmd)
	}
	s.expectHolds(hf, keys...)

	s.shortTriesFail(other, hf, keys, "nr trylock "+name)

	wt := other.newTid()
	c := other.send("nr lock " + name + " " + wt)
	awaitWaiting(other, lockCh(name), 1)
	handOver(holder, other, c, verb(other, "lock()", "Lock"), "nr unlock "+name+" "+ht, "NonReentrantLock", "")
	wf := other.field(wt)
	s.expectHolds(wf, keys...)
	Expect(call(other, "nr trylock "+name+" "+wt+" 0 -1")).To(reentryRefused(other))
	Expect(call(holder, "nr unlock "+name+" "+ht)).To(HavePrefix("err "), "%s unlocks a lock it no longer holds", holder.title())
	s.expectHolds(wf, keys...)
	Expect(call(other, "nr unlock "+name+" "+wt)).To(Equal("ok"))
	s.expectFree(keys...)
}
