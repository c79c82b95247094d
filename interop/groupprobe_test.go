package interop_test

// Redisson's RedissonMultiLock, RedissonRedLock and RedissonNonReentrantLock
// are not in the lock probe. testdata/GroupProbe.java, this suite's own
// program, drives them (and a plain RLock) through Redisson's public API
// with the probe's line protocol; it is compiled and run next to the lock
// probe as SyncProbe is.
//
// goGroup answers the same command language with goredisson's MultiLock,
// RedLock and non-reentrant Lock, so that one scenario runs with either
// client on either side.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

var (
	// groupJava is Redisson's group and non-reentrant locks through
	// GroupProbe (nil when their specs do not run).
	groupJava *probe
	// groupSkip says why the GroupProbe specs are skipped.
	groupSkip string
)

// startGroupJava starts GroupProbe for the suite next to the lock probe, or
// says in one line why its specs are skipped.
func startGroupJava(script, addr string) {
	GinkgoHelper()
	groupJava, groupSkip = startTestdataJava(script, addr, "GroupProbe",
		"Redisson's MultiLock, RedLock, NonReentrantLock, NonReentrantFairLock and FasterMultiLock", warmUpGroup)
}

// warmUpGroup takes every lock kind of GroupProbe a few times, a wait woken
// by an unlock included, so that class loading and the JIT do not count in
// the first measured wake-ups.
func warmUpGroup(p *probe) {
	GinkgoHelper()
	for i := range 3 {
		a, b, c := fmt.Sprintf("warm-up:group:a:%d", i), fmt.Sprintf("warm-up:group:b:%d", i), fmt.Sprintf("warm-up:group:c:%d", i)
		names := a + "," + b + "," + c
		t1, t2 := p.newTid(), p.newTid()
		for _, kind := range []string{"multi", "red"} {
			p.ok(kind + " lock " + names + " " + t1)
			Expect(p.do(kind + " trylock " + names + " " + t2 + " 10 -1")).To(Equal("false"))
			w := p.send(kind + " trylock " + names + " " + t2 + " 10000 -1")
			p.ok(kind + " unlock " + names + " " + t1)
			Expect(w.wait(30 * time.Second)).To(Equal("ok"))
			p.ok(kind + " unlock " + names + " " + t2)
		}
		p.ok("nr lock " + a + " " + t1)
		Expect(p.do("nr trylock " + a + " " + t1 + " 0 -1")).To(HavePrefix("err "))
		w := p.send("nr lock " + a + " " + t2)
		p.ok("nr unlock " + a + " " + t1)
		Expect(w.wait(30 * time.Second)).To(Equal("ok"))
		p.ok("nr unlock " + a + " " + t2)
		Expect(p.do("plain trylock " + a + " " + t1 + " 10 1000")).To(Equal("ok"))
		p.ok("plain unlock " + a + " " + t1)
		for _, lock := range []string{"nrfair " + b, "faster " + c + ",Jack_001,Mary_002"} {
			p.ok(strings.Replace(lock, " ", " lock ", 1) + " " + t1)
			w := p.send(strings.Replace(lock, " ", " lock ", 1) + " " + t2)
			p.ok(strings.Replace(lock, " ", " unlock ", 1) + " " + t1)
			Expect(w.wait(30 * time.Second)).To(Equal("ok"))
			p.ok(strings.Replace(lock, " ", " unlock ", 1) + " " + t2)
		}
	}
}

// groupSide is one client of a group or non-reentrant lock scenario,
// taking GroupProbe's commands (see testdata/GroupProbe.java).
type groupSide interface {
	syncSide
	// field returns the lock hash field of a tid's holds.
	field(tid string) string
}

// javaGroup is Redisson, through GroupProbe.
type javaGroup struct{ javaSync }

// redissonGroup returns Redisson's side of a GroupProbe spec, or skips the
// spec when GroupProbe cannot run here.
func redissonGroup() groupSide {
	GinkgoHelper()
	if groupSkip != "" {
		Skip(groupSkip)
	}
	Expect(groupJava).NotTo(BeNil(), "GroupProbe did not start")
	return javaGroup{javaSync{p: groupJava}}
}

func (j javaGroup) field(tid string) string { return j.p.field(tid) }

// goGroup is goredisson, answering GroupProbe's commands; every command runs
// on its own goroutine, as the owner of its tid (one ctxowner per tid).
type goGroup struct {
	goSync
	mu     *sync.Mutex
	owners map[string]context.Context
}

// newGoGroup returns goredisson's side on the world's Client.
func newGoGroup(w *world) goGroup {
	return goGroup{goSync: newGoSync(w), mu: new(sync.Mutex), owners: map[string]context.Context{}}
}

// owner returns the owner context of a tid, made on first use; it ends
// with the spec.
func (s goGroup) owner(tid string) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, ok := s.owners[tid]
	if !ok {
		ctx = ctxowner.New(s.w.ctx)
		s.owners[tid] = ctx
	}
	return ctx
}

func (s goGroup) field(tid string) string { return s.g.ID() + ":" + ctxowner.Of(s.owner(tid)) }

func (s goGroup) send(cmd string) *pcall { return s.w.goCall(cmd, s.exec) }

// exec answers one command as GroupProbe would, with goredisson:
// "<kind> <verb> <names> <tid> [args]".
func (s goGroup) exec(_ context.Context, p []string) string {
	if len(p) < 4 {
		return "err usage: <kind> <verb> <names> <tid> ..."
	}
	l, err := s.lockOf(p[0], p[2])
	if err != nil {
		return errAnswer(err)
	}
	ctx := s.owner(p[3])
	switch p[1] {
	case "lock":
		return okAnswer(l.LockLease(ctx, ms(p, 4, -1)))
	case "trylock":
		ok, err := l.TryLock(ctx, ms(p, 4, 0), ms(p, 5, -1))
		if err == nil && ok {
			return "ok"
		}
		return boolAnswer(ok, err)
	case "unlock":
		return okAnswer(l.Unlock(ctx))
	case "held":
		return boolAnswer(l.IsHeldByCurrent(ctx))
	case "islocked":
		return boolAnswer(l.IsLocked(ctx))
	case "forceunlock":
		return boolAnswer(l.ForceUnlock(ctx))
	}
	return "err unknown command " + p[0] + " " + p[1]
}

// lockOf returns goredisson's lock for a GroupProbe <kind> and <names>.
func (s goGroup) lockOf(kind, names string) (rlock.Locker, error) {
	switch n := strings.Split(names, ","); kind {
	case "nrfair":
		return s.g.NewNonReentrantFairLock(names), nil
	case "faster":
		return s.g.NewFasterMultiLock(n[0], n[1:]...), nil
	}
	var locks []rlock.Locker
	for _, n := range strings.Split(names, ",") {
		locks = append(locks, s.g.NewLock(n))
	}
	switch kind {
	case "multi":
		return rlock.NewMultiLock(locks...)
	case "red":
		return rlock.NewRedLock(locks...)
	case "nr":
		return s.g.NewNonReentrantLock(names), nil
	case "plain":
		return s.g.NewLock(names), nil
	}
	return nil, fmt.Errorf("unknown lock kind %s", strconv.Quote(kind))
}

var (
	_ groupSide = javaGroup{}
	_ groupSide = goGroup{}
)
