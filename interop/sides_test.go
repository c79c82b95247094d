package interop_test

// The Java side of a scenario: the real Redisson (through the probe) or the
// emulator, both driven with the probe's command language, so that one
// scenario runs against either.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// redissonSide is a Redisson client taking the probe's commands:
//
//	[fair|read|write|fenced|spin]lock <name> <tid> [leaseMs]        -> ok | token N
//	[...]trylock <name> <tid> <waitMs> [leaseMs]                  -> ok | false | token N
//	[...]unlock <name> <tid>                                      -> ok | err ...
//	[...]forceunlock <name>                                       -> true | false
//	[...]holdcount <name> <tid> | [...]held <name> <tid>          -> N | true/false
//	[...]islocked <name> | [...]remain <name>                     -> true/false | ms
//	jtid <tid> | fencedtoken <name>
type redissonSide interface {
	// suite names the side in recorded results: "redisson" or "emulator".
	suite() string
	// send starts a command; its answer comes with the call's wait.
	send(cmd string) *pcall
	// newTid returns a thread name unused so far.
	newTid() string
	// field returns the hash field of a thread.
	field(tid string) string
	// awaitBlocked returns once n threads wait on channel (or, for the real
	// client, once it subscribed and its threads had time to block).
	awaitBlocked(channel string, n int)
}

// do sends cmd and expects an answer within 30 s.
func do(j redissonSide, cmd string) string {
	GinkgoHelper()
	out, err := j.send(cmd).wait(30 * time.Second)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// ok sends cmd and expects "ok".
func ok(j redissonSide, cmd string) {
	GinkgoHelper()
	Expect(do(j, cmd)).To(Equal("ok"), cmd)
}

// probeSide is the real Redisson.
type probeSide struct {
	p *probe
}

// javaSide returns the real Redisson for a probe spec.
func javaSide() *probeSide {
	GinkgoHelper()
	Expect(java).NotTo(BeNil(), "the probe did not start")
	return &probeSide{p: java}
}

func (s *probeSide) suite() string           { return "redisson" }
func (s *probeSide) send(cmd string) *pcall  { return s.p.send(cmd) }
func (s *probeSide) newTid() string          { return s.p.newTid() }
func (s *probeSide) field(tid string) string { return s.p.field(tid) }
func (s *probeSide) awaitBlocked(ch string, _ int) {
	GinkgoHelper()
	awaitSubscribed(ch)
	// A Redisson thread blocks on its semaphore right after the attempt
	// that follows its subscription; the JVM needs a moment for that.
	time.Sleep(500 * time.Millisecond)
}

// awaitSubscribed waits until some connection is subscribed to ch.
func awaitSubscribed(ch string) {
	GinkgoHelper()
	rdb := server.Client()
	defer rdb.Close()
	Eventually(func() int64 {
		return rdb.PubSubNumSub(context.Background(), ch).Val()[ch]
	}).WithTimeout(10*time.Second).WithPolling(5*time.Millisecond).Should(BeNumerically(">=", 1), "nobody subscribed to %s", ch)
}

// emuSide is the emulator speaking the probe's commands. As the probe
// does, it makes a new lock object for every command.
type emuSide struct {
	r   *redissonEmu
	ctx context.Context

	mu   sync.Mutex
	tids map[string]int64
	n    int
}

// newEmuSide returns an emulated Redisson for a spec; its calls end when
// the spec does.
func (e *env) newEmuSide(opts ...emuOption) *emuSide {
	ctx, cancel := context.WithCancel(context.Background())
	s := &emuSide{r: e.emu(opts...), ctx: ctx, tids: map[string]int64{}}
	DeferCleanup(cancel)
	return s
}

func (s *emuSide) suite() string { return "emulator" }

func (s *emuSide) newTid() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return "e" + strconv.Itoa(s.n)
}

// tid maps a thread name to the emulated thread id.
func (s *emuSide) tid(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.tids[name]
	if !ok {
		id = s.r.thread()
		s.tids[name] = id
	}
	return id
}

func (s *emuSide) field(tid string) string { return s.r.field(s.tid(tid)) }

func (s *emuSide) awaitBlocked(ch string, n int) {
	GinkgoHelper()
	Eventually(func() int { return s.r.pubsub.blocked(ch) }).WithTimeout(10*time.Second).
		WithPolling(2*time.Millisecond).Should(BeNumerically(">=", n), "threads blocked on %s", ch)
}

// send runs the command on its own goroutine.
func (s *emuSide) send(cmd string) *pcall {
	c := &pcall{cmd: cmd, sent: time.Now(), ch: make(chan answer, 1)}
	go func() {
		text := "err no answer"
		defer func() {
			if r := recover(); r != nil {
				text = fmt.Sprintf("err panic: %v", r)
			}
			c.ch <- answer{text: text, at: time.Now()}
		}()
		text = s.exec(strings.Fields(cmd))
	}()
	return c
}

var emuKinds = []struct {
	prefix string
	kind   lockKind
}{{"fenced", kindFenced}, {"fair", kindFair}, {"read", kindRead}, {"write", kindWrite}, {"spin", kindSpin}, {"", kindLock}}

// exec answers one command as the probe would.
func (s *emuSide) exec(p []string) string {
	ctx := s.ctx
	switch p[0] {
	case "id":
		return s.r.id
	case "jtid":
		return strconv.FormatInt(s.tid(p[1]), 10)
	case "fencedtoken":
		n, err := s.r.rdb.Get(ctx, prefixName("redisson_lock_token", p[1])).Int64()
		if err != nil {
			return "err " + err.Error()
		}
		return fmt.Sprintf("token %d", n)
	}
	for _, k := range emuKinds {
		verb, found := strings.CutPrefix(p[0], k.prefix)
		if !found {
			continue
		}
		if out, ok := s.verb(ctx, k.kind, verb, p); ok {
			return out
		}
	}
	return "err unknown command " + p[0]
}

func ms(p []string, i int, def int64) time.Duration {
	if len(p) <= i {
		return time.Duration(def) * time.Millisecond
	}
	n, _ := strconv.ParseInt(p[i], 10, 64)
	return time.Duration(n) * time.Millisecond
}

// verb runs one lock verb; ok is false when verb is not one.
func (s *emuSide) verb(ctx context.Context, kind lockKind, verb string, p []string) (string, bool) {
	l := s.r.newLock(kind, p[1])
	answer := func(err error) string {
		if err == nil {
			return "ok"
		}
		return "err " + err.Error()
	}
	switch verb {
	case "lock":
		tid := s.tid(p[2])
		if kind == kindFenced {
			// lockAndGetToken(leaseTime, unit) ignores its lease in this
			// Redisson version: it calls lockAndGetTokenAsync(), a
			// watchdog lease.
			t, _, err := l.TryLockToken(ctx, tid, -1, -1)
			if err != nil {
				return answer(err), true
			}
			return fmt.Sprintf("token %d", t), true
		}
		return answer(l.Lock(ctx, tid, ms(p, 3, -1))), true
	case "trylock":
		tid := s.tid(p[2])
		if kind == kindFenced {
			t, held, err := l.TryLockToken(ctx, tid, ms(p, 3, 0), ms(p, 4, -1))
			switch {
			case err != nil:
				return answer(err), true
			case !held:
				return "false", true
			}
			return fmt.Sprintf("token %d", t), true
		}
		held, err := l.TryLock(ctx, tid, ms(p, 3, 0), ms(p, 4, -1))
		if err != nil {
			return answer(err), true
		}
		if !held {
			return "false", true
		}
		return "ok", true
	case "unlock":
		return answer(l.Unlock(ctx, s.tid(p[2]))), true
	case "forceunlock":
		ok, err := l.ForceUnlock(ctx)
		if err != nil {
			return answer(err), true
		}
		return strconv.FormatBool(ok), true
	case "holdcount":
		n, err := l.HoldCount(ctx, s.tid(p[2]))
		if err != nil {
			return answer(err), true
		}
		return strconv.Itoa(n), true
	case "held":
		n, err := l.HoldCount(ctx, s.tid(p[2]))
		if err != nil {
			return answer(err), true
		}
		return strconv.FormatBool(n > 0), true
	case "islocked":
		ok, err := l.IsLocked(ctx)
		if err != nil {
			return answer(err), true
		}
		return strconv.FormatBool(ok), true
	case "remain":
		n, err := l.RemainTTL(ctx)
		if err != nil {
			return answer(err), true
		}
		return strconv.FormatInt(n, 10), true
	}
	return "", false
}
