package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/watchdog"
)

// Bounds of the model. None is tighter than the scheduling noise of a
// loaded 2-core machine, except eps, which compares numbers Redis itself
// returned (PTTL) with clocks read before and after the call.
const (
	// grace is how late a LostContext's end may reach the goroutine that
	// watches it (the library closes the context on a goroutine of its
	// own).
	grace = 300 * time.Millisecond
	// revokeSlack is how long past one renewal interval (watchdog hold) or
	// past its deadline (fixed hold) a revoked holder may take to signal.
	revokeSlack = time.Second
	// eps covers Redis's millisecond rounding of expiries.
	eps = 5 * time.Millisecond
	// edgeEps widens the window around a fixed hold's local deadline.
	edgeEps = 20 * time.Millisecond
	// callTimeout bounds every lock call (Lock is only made when it cannot
	// have to wait, so running out is a violation).
	callTimeout = 10 * time.Second
)

// ownerState is the model of one owner: what its Client counts (n, wd, its
// LostContext) and what Redis holds for it (red, and its key's lease).
type ownerState struct {
	name  string // c1o0
	c, o  int
	field string

	// The Client's side.
	n  int  // holds in the current holding period (0: none, or its loss was signalled)
	wd bool // the holding period is watchdog-managed
	lc lcInfo
	// revoked: the hold was deleted behind its holder's back (ForceUnlock,
	// FLUSHALL, restart) while its LostContext was live; it must end by
	// bound.
	revoked          bool
	revokedAt, bound time.Time

	// Redis's side.
	red     int       // the owner's count in Redis at the last observation
	keyWd   bool      // its field's key lease is watchdog-managed
	lo, hi  time.Time // fixed: the key expires within [lo, hi]
	dlLo    time.Time // fixed: the earliest the Client's local deadline can be
	wdFloor time.Time // watchdog-managed: the key lives at least until then
}

func (o *ownerState) live() bool { return o.lc.State == "live" }

// holding: the Client counts holds and has not signalled their loss.
func (o *ownerState) holding() bool { return o.n > 0 && o.live() }

// vanishable reports whether the owner's field may have left Redis by t
// without any call: its fixed lease may have run out, or its watchdog
// lease is no longer renewed (the loss was signalled).
func (o *ownerState) vanishable(t time.Time) bool {
	if o.keyWd {
		return !o.live() || o.n == 0
	}
	return !t.Before(o.lo.Add(-eps))
}

// Violation is a broken invariant.
type Violation struct {
	Kind string // see kindRank
	Msg  string
	Step int // index in the executed steps
}

// kindRank orders violation kinds: the first of a step is the one a
// sequence is shrunk for.
var kindRank = []string{"two-inside", "gone-unsignalled", "fresh-count", "result", "lock-timeout", "count", "lease", "revocation-unsignalled", "lostcontext", "agent"}

// obligation: the owner's LostContext must have ended by by.
type obligation struct {
	o    int
	by   time.Time
	kind string
	why  string
}

// observation is what Redis and the Clients showed after a step.
type observation struct {
	qs, qr  time.Time // the read was sent, answered
	counts  []int     // per owner
	holders []int     // owners with a field
	unknown []string  // fields of nobody known
	pttl    time.Duration
	lc      []lcInfo
}

// seqRun runs one sequence against the model.
type seqRun struct {
	cfg      *Config
	env      *env
	q        Sequence // the header; steps as executed
	lock     string
	clients  []client
	owners   []*ownerState
	byField  map[string]int
	wdT      time.Duration
	interval time.Duration
	stats    *Result

	stepNo     int
	trace      []string
	violations []Violation
	obls       []obligation
	// lastPTTL is the lock key's PTTL at the last observation (at
	// lastObs), for the generator.
	lastPTTL time.Duration
	lastObs  time.Time
}

// hasExtend reports whether this version of the library has Extend.
var hasExtend = func() bool {
	_, ok := any(&rlock.Lock{}).(extender)
	return ok
}()

func (r *seqRun) idx(c, o int) int { return c*ownersPerClient + o }

func (r *seqRun) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	r.trace = append(r.trace, line)
	if r.cfg.Verbose {
		fmt.Fprintln(r.cfg.Out, "   ", line)
	}
}

func (r *seqRun) fail(kind, format string, args ...any) {
	v := Violation{Kind: kind, Msg: fmt.Sprintf(format, args...), Step: r.stepNo}
	r.violations = append(r.violations, v)
	r.logf("VIOLATION (%s): %s", v.Kind, v.Msg)
}

func (r *seqRun) oblige(o int, by time.Time, kind, why string) {
	r.obls = append(r.obls, obligation{o: o, by: by, kind: kind, why: why})
}

// setup starts the sequence's Clients.
func (r *seqRun) setup() error {
	r.wdT = r.q.Watchdog
	r.interval = r.wdT / 3
	r.byField = map[string]int{}
	for c, proc := range r.q.Procs {
		cfg := execConfig{Redis: r.env.srv.Addr, Watchdog: r.wdT, Kind: r.q.Kind, Lock: r.lock, Owners: ownersPerClient, Verbose: r.cfg.Verbose}
		var cl client
		if proc {
			a, err := startAgent(cfg)
			if err != nil {
				return err
			}
			cl = a
		} else {
			e, err := newExecutor(cfg, r.cfg.Out)
			if err != nil {
				return err
			}
			cl = &inproc{e: e}
		}
		r.clients = append(r.clients, cl)
		for o := range ownersPerClient {
			st := &ownerState{name: fmt.Sprintf("c%do%d", c, o), c: c, o: o, lc: lcInfo{State: "none"},
				field: cl.id() + ":ctx:" + ownerID(o) + fieldSuffix(r.q.Kind)}
			r.byField[st.field] = len(r.owners)
			r.owners = append(r.owners, st)
		}
	}
	return nil
}

// teardown closes the Clients; an agent that did not end well is a
// violation.
func (r *seqRun) teardown() {
	for i, c := range r.clients {
		if err := c.close(); err != nil && len(r.violations) == 0 {
			r.fail("agent", "closing client c%d: %v", i, err)
		}
	}
	r.clients = nil
}

// eligible reports whether the model lets step s run now.
func (r *seqRun) eligible(s Step) bool {
	if s.C >= len(r.clients) {
		return false
	}
	switch {
	case s.Op == "pause":
		return r.clients[s.C].pid() != 0
	case s.Op == "extend":
		return hasExtend
	case !acquireOp(s.Op):
		return true
	}
	i := r.idx(s.C, s.O)
	me := r.owners[i]
	for j, p := range r.owners {
		// No other owner may take a lock whose revoked holder has not been
		// told yet: it cannot know, so the overlap would be no bug.
		if j != i && p.revoked && p.holding() {
			return false
		}
	}
	if s.Op == "trylock" || me.holding() {
		return true
	}
	// Lock and LockLease wait: only when nobody else can hold the lock.
	for j, p := range r.owners {
		if j != i && p.red > 0 {
			return false
		}
	}
	return true
}

// observe reads the lock hash and its PTTL in one transaction, then every
// owner's LostContext.
func (r *seqRun) observe() (observation, error) {
	var ob observation
	var all map[string]string
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ob.qs = time.Now()
		var hg *redis.MapStringStringCmd
		var pt *redis.DurationCmd
		_, err = r.env.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			hg = p.HGetAll(ctx, r.lock)
			pt = p.PTTL(ctx, r.lock)
			return nil
		})
		ob.qr = time.Now()
		cancel()
		if err == nil {
			all, ob.pttl = hg.Val(), pt.Val()
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return ob, fmt.Errorf("reading the lock: %w", err)
	}
	ob.counts = make([]int, len(r.owners))
	for f, v := range all {
		if f == "mode" && r.q.Kind == "WriteLock" {
			continue
		}
		i, ok := r.byField[f]
		if !ok {
			ob.unknown = append(ob.unknown, f+"="+v)
			continue
		}
		fmt.Sscan(v, &ob.counts[i])
		ob.holders = append(ob.holders, i)
	}
	slices.Sort(ob.holders)
	ob.lc, err = r.lcs()
	return ob, err
}

// lcs asks every Client for its owners' LostContexts.
func (r *seqRun) lcs() ([]lcInfo, error) {
	out := make([]lcInfo, 0, len(r.owners))
	for c, cl := range r.clients {
		rep, err := cl.call(req{Op: "lc"})
		if err != nil {
			return nil, fmt.Errorf("client c%d: %w", c, err)
		}
		if len(rep.LC) != ownersPerClient {
			return nil, fmt.Errorf("client c%d: %d LostContexts", c, len(rep.LC))
		}
		out = append(out, rep.LC...)
	}
	return out, nil
}

func at(ns int64) time.Time { return time.Unix(0, ns) }

// run executes one step: it returns false when the step was skipped (not
// eligible now, or unsupported).
func (r *seqRun) run(s Step) bool {
	if !r.eligible(s) {
		return false
	}
	pre := make([]ownerState, len(r.owners))
	for i, o := range r.owners {
		pre[i] = *o
	}
	r.obls = r.obls[:0]
	var rep reply
	var err error
	start := time.Now()
	acting := -1
	switch {
	case ownerOp(s.Op):
		acting = r.idx(s.C, s.O)
		rq := req{Op: s.Op, Owner: s.O, Lease: s.D, Timeout: callTimeout}
		if s.Op == "lock" {
			rq.Lease = 0
		}
		if s.Op == "unlock" {
			rq.Last = pre[acting].n == 1 && pre[acting].live()
		}
		rep, err = r.clients[s.C].call(rq)
	case s.Op == "force":
		rep, err = r.clients[s.C].call(req{Op: "force", Timeout: callTimeout})
	case s.Op == "flushall":
		err = r.env.rdb.FlushAll(context.Background()).Err()
	case s.Op == "restart":
		err = r.env.srv.Restart()
	case s.Op == "pause":
		pid := r.clients[s.C].pid()
		if err = syscall.Kill(pid, syscall.SIGSTOP); err == nil {
			time.Sleep(s.D)
			err = syscall.Kill(pid, syscall.SIGCONT)
		}
		if err == nil {
			// The step ends once the process runs again.
			_, err = r.clients[s.C].call(req{Op: "ping"})
		}
	case s.Op == "sleep":
		time.Sleep(s.D)
	}
	end := time.Now()
	if err != nil {
		r.fail("agent", "%s: %v", s, err)
		return true
	}
	if rep.Err == "unsupported" {
		return false
	}
	r.stats.Ops[s.Op]++
	r.stats.Steps++
	ob, err := r.observe()
	if err != nil {
		r.fail("agent", "after %s: %v", s, err)
		return true
	}
	r.logf("%3d %-22s %-40s redis %s", r.stepNo, s, r.describe(s, rep, start, end), r.describeRedis(ob))

	if acting >= 0 {
		r.judgeCallSettled(s, acting, pre, rep, &ob)
	} else {
		r.judgeOther(s, pre, rep, ob, start, end)
	}
	r.checkAll(s, acting, pre, rep, ob)
	r.resolve(ob)
	r.checkRevocations()
	r.sync(ob)
	r.checkInside()
	r.lastPTTL, r.lastObs = ob.pttl, ob.qr
	return true
}

func (r *seqRun) describe(s Step, rep reply, start, end time.Time) string {
	d := end.Sub(start).Round(time.Millisecond)
	switch {
	case rep.Err != "":
		return fmt.Sprintf("-> %s (%v) %s", rep.Err, d, shorten(rep.Msg))
	case s.Op == "trylock" || s.Op == "force":
		return fmt.Sprintf("-> %v (%v)", rep.OK, d)
	case s.Op == "holdcount":
		return fmt.Sprintf("-> %d (%v)", rep.N, d)
	}
	return fmt.Sprintf("-> ok (%v)", d)
}

func shorten(s string) string {
	if len(s) > 90 {
		return s[:90] + "..."
	}
	return s
}

func (r *seqRun) describeRedis(ob observation) string {
	var parts []string
	for _, i := range ob.holders {
		parts = append(parts, fmt.Sprintf("%s=%d", r.owners[i].name, ob.counts[i]))
	}
	parts = append(parts, ob.unknown...)
	if len(parts) == 0 {
		return "free"
	}
	var lcs []string
	for i, l := range ob.lc {
		if l.State != "none" {
			lcs = append(lcs, r.owners[i].name+":"+l.State)
		}
	}
	return fmt.Sprintf("%s pttl=%v lc[%s]", strings.Join(parts, ","), ob.pttl, strings.Join(lcs, " "))
}

// judgeCallSettled judges an owner's call; when the result is not one the
// model allows while the owner's LostContext still looks live, it waits up
// to the grace for a loss that raced the call to reach the watcher (two
// goroutine hops), and judges again with what it then sees.
func (r *seqRun) judgeCallSettled(s Step, i int, pre []ownerState, rep reply, ob *observation) {
	me := *r.owners[i]
	nv, no, nt := len(r.violations), len(r.obls), len(r.trace)
	r.judgeCall(s, i, pre, rep, ob)
	if len(r.violations) == nv || ob.lc[i].State != "live" || !pre[i].holding() {
		return
	}
	deadline := at(rep.End).Add(grace)
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		lcs, err := r.lcs()
		if err != nil {
			return
		}
		if lcs[i].State == "ended" {
			*r.owners[i] = me
			r.violations, r.obls, r.trace = r.violations[:nv], r.obls[:no], r.trace[:nt]
			ob.lc[i] = lcs[i]
			r.logf("    (the owner's LostContext ended %v after the call: judged as a loss that raced it)", at(lcs[i].At).Sub(at(rep.End)).Round(time.Millisecond))
			r.judgeCall(s, i, pre, rep, ob)
			return
		}
	}
}

// judgeCall checks the result of an owner's call against the model and
// moves the model on.
func (r *seqRun) judgeCall(s Step, i int, pre []ownerState, rep reply, ob *observation) {
	me, p := r.owners[i], pre[i]
	s0, e0 := at(rep.Start), at(rep.End)
	k := ob.counts[i]
	held := p.n > 0 && p.live()
	raced := held && ob.lc[i].State == "ended"
	edge := held && !p.wd && !e0.Before(p.dlLo.Add(-edgeEps))
	canHeld := held && p.red > 0
	canGone := held && (p.revoked || p.red == 0 || raced || edge)
	canFresh := !held || raced || edge
	if edge || raced && !p.revoked && p.red > 0 {
		r.stats.Uncertain++ // (a revoked hold's call ends its LostContext: no race)
	}
	lease := s.D
	if s.Op == "lock" {
		lease = 0
	}
	what := fmt.Sprintf("%s (holding %d, Redis %d%s)", s, p.n, p.red, map[bool]string{true: ", revoked", false: ""}[p.revoked])
	lostBy := e0.Add(grace)

	switch s.Op {
	case "trylock", "lock", "locklease":
		switch {
		case rep.Err == "" && rep.OK:
			switch {
			case k == 0:
				r.fail("result", "%s succeeded, but Redis has no hold of the owner", what)
			case canHeld && k == p.red+1:
				r.reentered(me, lease, s0, e0, k)
			case k == 1 && (canFresh || canGone):
				// A fresh hold in place of holds the Client counted: only
				// once their loss was signalled (the LostContext it
				// replaced had ended).
				prev := rep.Prev
				if held && prev == nil && ob.lc[i].State == "ended" {
					// The loss reached the watcher only after the call
					// (judgeCallSettled): watch the fresh hold now.
					l := ob.lc[i]
					prev = &l
					if _, err := r.clients[s.C].call(req{Op: "open", Owner: s.O}); err != nil {
						r.fail("agent", "%v", err)
					}
					ob.lc[i] = lcInfo{State: "live"}
				}
				switch {
				case !held:
				case prev == nil:
					r.fail("result", "%s took a fresh hold (count 1) in place of the owner's earlier holds while its LostContext was live: their loss went unsignalled", what)
				case at(prev.At).After(lostBy):
					r.fail("result", "%s took a fresh hold (count 1) in place of the owner's earlier holds; its LostContext ended only %v after the call", what, at(prev.At).Sub(e0).Round(time.Millisecond))
				}
				r.fresh(me, lease, s0, e0)
			case !held && p.red > 0 && k == p.red+1:
				r.fail("fresh-count", "%s: the owner's LostContext had ended (its loss was signalled), yet the new acquisition counts the lost holds: Redis counts %d, a fresh hold counts 1", what, k)
				r.fresh(me, lease, s0, e0)
				me.n = k
			default:
				r.fail("result", "%s succeeded with %d holds in Redis (re-entry would give %d, a fresh hold 1)", what, k, p.red+1)
			}
		case rep.Err == "" && !rep.OK: // TryLock: taken
			other := false
			for j, q := range pre {
				if j != i && q.red > 0 {
					other = true
				}
			}
			if !(canFresh && other) {
				r.fail("result", "%s returned false (lock taken), but no other owner held it in Redis and the owner's hold is not gone", what)
			}
		case rep.Err == "lost":
			if !canGone {
				r.fail("result", "%s returned ErrLockLost while the owner's hold was in Redis: %s", what, rep.Msg)
			}
			if held {
				r.oblige(i, lostBy, "result", what+" returned ErrLockLost, but the owner's LostContext did not end")
			}
			if k != 0 {
				r.fail("result", "%s returned ErrLockLost (nothing held) but Redis counts %d holds of the owner", what, k)
			}
		case rep.Err == "timeout" && s.Op != "trylock":
			r.fail("lock-timeout", "%s did not return within %v, although the lock was free or the owner's own", what, callTimeout)
		default:
			r.fail("result", "%s failed: %s", what, rep.Msg)
		}
	case "unlock":
		switch rep.Err {
		case "":
			switch {
			case p.red == 0:
				r.fail("result", "%s succeeded, but Redis had no hold of the owner", what)
			case k != p.red-1 && !(k == 0 && p.vanishable(ob.qr)):
				r.fail("count", "%s left %d holds of the owner in Redis, not %d", what, k, p.red-1)
			}
			if held {
				me.n = k
				if k == 0 {
					me.wd, me.revoked = false, false
				} else if me.wd {
					me.wdFloor = s0.Add(r.wdT) // a release keeps the watchdog lease
				}
			}
		case "notheld":
			if !(p.red == 0 || p.vanishable(e0) || raced) {
				r.fail("result", "%s returned ErrNotHeld while the owner held the lock in Redis", what)
			}
			if held {
				r.oblige(i, lostBy, "result", what+" returned ErrNotHeld, but the owner's LostContext did not end")
			}
		default:
			r.fail("result", "%s failed: %s", what, rep.Msg)
		}
	case "extend":
		switch rep.Err {
		case "":
			if !(held && !p.wd && (p.red > 0 || raced || edge)) {
				r.fail("result", "%s succeeded on a hold that is not a live fixed hold", what)
			} else {
				me.lo, me.hi = s0.Add(lease), e0.Add(lease)
				me.dlLo = s0.Add(lease - watchdog.Allowance(lease))
			}
		case "invalid":
			if !(held && p.wd) {
				r.fail("result", "%s returned ErrInvalidArgument for a hold that is not watchdog-managed: %s", what, rep.Msg)
			}
		case "notheld":
			if held && !(p.red == 0 || p.revoked || raced || edge) {
				r.fail("result", "%s returned ErrNotHeld while the owner held the lock in Redis", what)
			}
			if held {
				r.oblige(i, lostBy, "result", what+" returned ErrNotHeld, but the owner's LostContext did not end")
			}
		default:
			r.fail("result", "%s failed: %s", what, rep.Msg)
		}
	case "holdcount":
		if rep.Err != "" {
			r.fail("result", "%s failed: %s", what, rep.Msg)
			break
		}
		h := rep.N
		if !(h == p.red || (h == 0 && p.vanishable(e0))) {
			r.fail("result", "HoldCount returned %d, Redis counts %d holds of the owner", h, p.red)
		}
		if held && h < p.n {
			r.oblige(i, lostBy, "result", what+fmt.Sprintf(" returned %d, fewer than the Client counted, but the owner's LostContext did not end", h))
		}
	}
	// Another owner's acquisition: every other holder must have been told.
	if acquireOp(s.Op) && rep.Err == "" && rep.OK {
		for j, q := range r.owners {
			if j != i && q.holding() {
				r.oblige(j, lostBy, "two-inside", fmt.Sprintf("%s took the lock while %s's LostContext was live (%s counted %d holds)", s, q.name, q.name, q.n))
			}
		}
	}
}

// fresh records a new holding period of the owner.
func (r *seqRun) fresh(o *ownerState, lease time.Duration, s0, e0 time.Time) {
	o.n, o.revoked = 1, false
	o.wd = lease <= 0
	o.keyWd = o.wd
	if o.wd {
		o.wdFloor = s0.Add(r.wdT)
		return
	}
	o.lo, o.hi = s0.Add(lease), e0.Add(lease)
	o.dlLo = s0.Add(lease - watchdog.Allowance(lease))
}

// reentered records a re-entry: a watchdog-managed hold stays so, a fixed
// lease extends the key (the write side adds it to what is left).
func (r *seqRun) reentered(o *ownerState, lease time.Duration, s0, e0 time.Time, k int) {
	o.n = k
	switch {
	case o.wd || lease <= 0:
		o.wd, o.keyWd = true, true
		o.wdFloor = s0.Add(r.wdT)
	case r.q.Kind == "WriteLock":
		o.lo, o.hi = o.lo.Add(lease-time.Millisecond), o.hi.Add(lease)
		o.dlLo = o.dlLo.Add(lease - watchdog.Allowance(lease))
	default:
		o.lo = later(o.lo, s0.Add(lease))
		o.hi = later(o.hi, e0.Add(lease))
		o.dlLo = later(o.dlLo, s0.Add(lease-watchdog.Allowance(lease)))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// judgeOther checks the steps that are no owner's call.
func (r *seqRun) judgeOther(s Step, pre []ownerState, rep reply, ob observation, start, end time.Time) {
	switch s.Op {
	case "force", "flushall", "restart":
		if s.Op == "force" {
			if rep.Err != "" {
				r.fail("result", "%s failed: %s", s, rep.Msg)
			}
			any, all := false, true
			for _, q := range pre {
				if q.red > 0 {
					any = true
					if !q.vanishable(at(rep.End)) {
						all = false
					}
				}
			}
			if rep.OK && !any {
				r.fail("result", "ForceUnlock reported a lock, but Redis had none")
			}
			if !rep.OK && !all {
				r.fail("result", "ForceUnlock reported no lock while an owner held it in Redis")
			}
		}
		if len(ob.holders) > 0 {
			r.fail("result", "%s left holds in Redis", s)
		}
		for j, q := range r.owners {
			if pre[j].holding() && ob.lc[j].State == "live" {
				bound := end.Add(r.interval + revokeSlack)
				if !q.wd {
					bound = later(q.hi, end).Add(revokeSlack)
				}
				switch {
				case !q.revoked:
					q.revokedAt, q.bound = end, bound
				case s.Op == "restart":
					// Redis was down: no renewal could see an earlier
					// revocation until it was back.
					q.bound = later(q.bound, bound)
				case bound.Before(q.bound):
					q.bound = bound
				}
				q.revoked = true
				r.stats.Revoked++
			}
		}
	case "pause":
		// A paused process can tell nothing: its revoked holders' bounds
		// move by the pause.
		for _, q := range r.owners {
			if q.c == s.C && q.revoked {
				q.bound = q.bound.Add(s.D)
			}
		}
	}
}

// checkAll checks what every step must leave: one owner at most in Redis,
// counts that agree, fields that leave Redis only as the model allows,
// and a key lease that covers what the holds need.
func (r *seqRun) checkAll(s Step, acting int, pre []ownerState, rep reply, ob observation) {
	if len(ob.unknown) > 0 {
		r.fail("result", "the lock hash has fields of nobody in this sequence: %v", ob.unknown)
	}
	if len(ob.holders) > 1 {
		var hs []string
		for _, i := range ob.holders {
			hs = append(hs, r.owners[i].name)
		}
		r.fail("two-inside", "Redis has holds of %s at once", strings.Join(hs, " and "))
	}
	revocation := s.Op == "force" || s.Op == "flushall" || s.Op == "restart"
	for j, q := range r.owners {
		p := pre[j]
		oc := ob.counts[j]
		if j != acting && !revocation {
			switch {
			case oc > 0 && p.red == 0:
				r.fail("count", "a hold of %s appeared in Redis without an acquisition", q.name)
			case oc > 0 && oc != p.red:
				r.fail("count", "%s's count in Redis went from %d to %d without a call of its own", q.name, p.red, oc)
			case oc == 0 && p.red > 0 && !q.keyWd && r.cfg.LeaseCheck && ob.qr.Before(q.lo.Add(-eps)):
				r.fail("lease", "%s's hold left Redis %v before the lease its holds asked for ran out", q.name, q.lo.Sub(ob.qr).Round(time.Millisecond))
			}
		}
		// A hold the Client still counts must be in Redis while its
		// LostContext is live (unless revoked: then by the bound).
		if q.holding() && !q.revoked && oc == 0 {
			r.oblige(j, ob.qr.Add(grace), "gone-unsignalled", fmt.Sprintf("%s's hold is gone from Redis while its LostContext is live (%s counted %d holds, %s)", q.name, q.name, q.n, q.leaseText()))
		}
		if q.holding() && oc > 0 && oc != q.n {
			r.fail("count", "Redis counts %d holds of %s, its Client counted %d", oc, q.name, q.n)
		}
	}
	// Another owner in Redis: every other holder must have been told.
	if len(ob.holders) == 1 {
		h := ob.holders[0]
		for j, q := range r.owners {
			if j != h && q.holding() {
				r.oblige(j, ob.qs.Add(grace), "two-inside", fmt.Sprintf("%s holds the lock in Redis while %s's LostContext is live (%s counted %d holds)", r.owners[h].name, q.name, q.name, q.n))
			}
		}
		if r.cfg.LeaseCheck {
			r.checkLease(r.owners[h], ob)
		}
	}
}

func (o *ownerState) leaseText() string {
	if o.wd {
		return "watchdog-managed"
	}
	return fmt.Sprintf("fixed, key expiring in %v..%v", time.Until(o.lo).Round(time.Millisecond), time.Until(o.hi).Round(time.Millisecond))
}

// checkLease compares the key's expiry with what the holder's holds need:
// a fixed holding period's key expires within the window its calls set; a
// watchdog-managed one lives at least a watchdog lease past the last call
// that set it.
func (r *seqRun) checkLease(h *ownerState, ob observation) {
	if ob.pttl < 0 {
		r.fail("lease", "the lock key has no expiry (PTTL %v)", ob.pttl)
		return
	}
	elo, ehi := ob.qs.Add(ob.pttl), ob.qr.Add(ob.pttl+time.Millisecond)
	switch {
	case !h.keyWd:
		if ehi.Before(h.lo.Add(-eps)) {
			r.fail("lease", "the key of %s's fixed hold expires %v before the lease its holds asked for (pttl %v)", h.name, h.lo.Sub(ehi).Round(time.Millisecond), ob.pttl)
		}
		if elo.After(h.hi.Add(eps)) {
			r.fail("lease", "the key of %s's fixed hold outlives its lease by %v (pttl %v)", h.name, elo.Sub(h.hi).Round(time.Millisecond), ob.pttl)
		}
	case h.holding() && h.wd:
		if ehi.Before(h.wdFloor.Add(-eps)) {
			r.fail("lease", "the key of %s's watchdog-managed hold expires %v before a watchdog lease (%v) from the last call that set it (pttl %v)", h.name, h.wdFloor.Sub(ehi).Round(time.Millisecond), r.wdT, ob.pttl)
		}
	}
}

// resolve waits until every obligation's LostContext has ended, or its
// time is up, and fails those that ended late or not at all.
func (r *seqRun) resolve(ob observation) {
	for i, l := range ob.lc {
		r.owners[i].lc = l
	}
	if len(r.obls) == 0 {
		return
	}
	last := r.obls[0].by
	for _, o := range r.obls {
		last = later(last, o.by)
	}
	for {
		lcs, err := r.lcs()
		if err != nil {
			r.fail("agent", "%v", err)
			return
		}
		done := true
		for _, o := range r.obls {
			if lcs[o.o].State != "ended" {
				done = false
			}
		}
		if done || time.Now().After(last.Add(20*time.Millisecond)) {
			for i, l := range lcs {
				r.owners[i].lc = l
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	seen := map[int]bool{}
	for _, o := range r.obls {
		if seen[o.o] {
			continue
		}
		l := r.owners[o.o].lc
		switch {
		case l.State != "ended":
			seen[o.o] = true
			r.fail(o.kind, "%s; still live %v after the moment it should have ended by", o.why, time.Since(o.by.Add(-grace)).Round(time.Millisecond))
		case at(l.At).After(o.by):
			seen[o.o] = true
			r.fail(o.kind, "%s; it ended %v after the moment it should have ended by", o.why, at(l.At).Sub(o.by.Add(-grace)).Round(time.Millisecond))
		}
	}
}

// checkRevocations fails revoked holders that were not told within their
// bound.
func (r *seqRun) checkRevocations() {
	now := time.Now()
	for _, q := range r.owners {
		if !q.revoked || q.n == 0 {
			continue
		}
		if q.lc.State == "ended" {
			if at(q.lc.At).After(q.bound) {
				r.fail("revocation-unsignalled", "%s's hold was revoked %v before its LostContext ended, past its bound of %v", q.name, at(q.lc.At).Sub(q.revokedAt).Round(time.Millisecond), q.bound.Sub(q.revokedAt).Round(time.Millisecond))
			}
			continue
		}
		if now.After(q.bound) {
			r.fail("revocation-unsignalled", "%s's hold was revoked %v ago (%s), its LostContext is still live (bound %v)", q.name, now.Sub(q.revokedAt).Round(time.Millisecond), q.leaseText(), q.bound.Sub(q.revokedAt).Round(time.Millisecond))
			q.revoked = false // once
		}
	}
}

// sync moves the model to what was observed: Redis's counts, and the end
// of holding periods whose loss was signalled.
func (r *seqRun) sync(ob observation) {
	for i, q := range r.owners {
		q.red = ob.counts[i]
		switch q.lc.State {
		case "ended":
			if q.lc.Cause != "lost" && q.n > 0 {
				r.fail("lostcontext", "%s's LostContext ended with cause %q, not ErrLockLost", q.name, q.lc.Cause)
			}
			if q.n > 0 {
				r.stats.Losses++
			}
			q.n, q.wd, q.revoked = 0, false, false
		case "none":
			if q.n > 0 {
				r.fail("lostcontext", "%s counts %d holds but has no LostContext", q.name, q.n)
				q.n = 0
			}
		}
	}
}

// checkInside: at most one owner inside per the model (counting holds,
// LostContext live).
func (r *seqRun) checkInside() {
	var in []string
	for _, q := range r.owners {
		if q.holding() {
			in = append(in, q.name)
		}
	}
	if len(in) > 1 {
		r.fail("two-inside", "the model has %s inside at once (each counts holds, each LostContext live)", strings.Join(in, " and "))
	}
}

// finish waits for the bounds of revoked holders still untold.
func (r *seqRun) finish() {
	for {
		var last time.Time
		for _, q := range r.owners {
			if q.revoked && q.n > 0 && q.live() {
				last = later(last, q.bound)
			}
		}
		if last.IsZero() {
			return
		}
		time.Sleep(min(time.Until(last)+10*time.Millisecond, 200*time.Millisecond))
		lcs, err := r.lcs()
		if err != nil {
			r.fail("agent", "%v", err)
			return
		}
		for i, l := range lcs {
			r.owners[i].lc = l
		}
		r.checkRevocations()
		for _, q := range r.owners {
			if q.lc.State != "live" {
				q.revoked = false
			}
		}
	}
}
