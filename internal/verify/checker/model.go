package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/rlock"
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

	wdT time.Duration // its Client's watchdog timeout
	// lost: the owner's last call was an acquisition whose reply was lost
	// (a lost step) and that was reported failed; dead: its Client's
	// process is stopped and the model knows its hold is over (pause.go).
	lost lostState
	dead deadState

	// Redis's side.
	red     int       // the owner's count in Redis at the last observation
	keyWd   bool      // its field's key lease is watchdog-managed
	lo, hi  time.Time // fixed: the key expires within [lo, hi]
	dlLo    time.Time // fixed: the earliest the Client's local deadline can be
	wdFloor time.Time // watchdog-managed: the key lives at least until then
}

func (o *ownerState) live() bool { return o.lc.State == "live" }

// holding: the Client counts holds and has not signalled their loss (nor
// is its process stopped past what the model knows is their end).
func (o *ownerState) holding() bool { return o.n > 0 && o.live() && o.dead.after.IsZero() }

// vanishable reports whether the owner's field may have left Redis by t
// without any call: its fixed lease may have run out, or its watchdog
// lease is no longer renewed (the loss was signalled).
func (o *ownerState) vanishable(t time.Time) bool {
	if o.lost.pending() {
		return true // a lost call's hold: its settle may delete it any time
	}
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
	journal
	env     *env
	q       Sequence // the header; steps as executed
	lock    string
	clients []client
	owners  []*ownerState
	byField map[string]int
	stats   *Result
	// stopped: when each Client's process was stopped (zero: it runs);
	// lastStop: when the last one continued had been.
	stopped  []time.Time
	lastStop time.Time
	// inconclusive says why the sequence ended without a verdict (a call
	// cut by the Clients' short ReadTimeout outside a stall: load).
	inconclusive string

	obls []obligation
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

// journal is a sequence's trace and violations, shared by the lock and
// election runners.
type journal struct {
	cfg        *Config
	stepNo     int
	trace      []string
	violations []Violation
}

func (j *journal) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	j.trace = append(j.trace, line)
	if j.cfg.Verbose {
		fmt.Fprintln(j.cfg.Out, "   ", line)
	}
}

// skipped notes a replayed step the model does not let run now.
func (j *journal) skipped(s Step, stats *Result) {
	stats.Skipped++
	j.logf("    %-22s skipped (the model does not let it run now)", s)
}

func (j *journal) fail(kind, format string, args ...any) {
	v := Violation{Kind: kind, Msg: fmt.Sprintf(format, args...), Step: j.stepNo}
	j.violations = append(j.violations, v)
	j.logf("VIOLATION (%s): %s", v.Kind, v.Msg)
}

func (r *seqRun) oblige(o int, by time.Time, kind, why string) {
	r.obls = append(r.obls, obligation{o: o, by: by, kind: kind, why: why})
}

// setup starts the sequence's Clients.
func (r *seqRun) setup() error {
	r.byField = map[string]int{}
	if r.q.Kind == keptKind {
		if err := r.setPermits(); err != nil {
			return err
		}
	}
	for c, proc := range r.q.Procs {
		cfg := execConfig{Redis: r.env.srv.Addr, Watchdog: r.q.wd(c), Kind: r.q.Kind, Lock: r.lock, Owners: ownersPerClient,
			Verbose: r.cfg.Verbose, ReadTimeout: r.q.ReadTimeout, Fence: r.cfg.Fence}
		cl, err := startClient(cfg, proc, r.cfg.Out)
		if err != nil {
			return err
		}
		r.clients = append(r.clients, cl)
		r.stopped = append(r.stopped, time.Time{})
		for o := range ownersPerClient {
			st := &ownerState{name: fmt.Sprintf("c%do%d", c, o), c: c, o: o, lc: lcInfo{State: "none"}, wdT: r.q.wd(c),
				field: cl.id() + ":ctx:" + ownerID(o) + fieldSuffix(r.q.Kind)}
			if r.q.Kind != keptKind {
				r.byField[st.field] = len(r.owners)
			}
			r.owners = append(r.owners, st)
		}
	}
	return nil
}

// startClient starts a Client: in a process of its own (an agent), or in
// this one.
func startClient(cfg execConfig, proc bool, out io.Writer) (client, error) {
	if proc {
		return startAgent(cfg)
	}
	e, err := newExecutor(cfg, out)
	if err != nil {
		return nil, err
	}
	return &inproc{e: e}, nil
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
	switch {
	case s.C >= len(r.clients) || !r.familyAllows(s):
		return false
	case s.Op == "cont":
		return !r.stopped[s.C].IsZero()
	case (ownerOp(s.Op) || clientOp(s.Op)) && !r.stopped[s.C].IsZero():
		return false // a stopped process takes no calls
	case s.Op == "pause" || s.Op == "stop":
		return r.clients[s.C].pid() != 0 && r.nStopped() == 0
	case s.Op == "extend":
		return hasExtend
	case s.Op == "stall":
		return r.canStall()
	case s.Op == "lost":
		return r.canStall() && r.lostEligible(s)
	case !acquireOp(s.Op):
		return true
	}
	return r.acquireEligible(s)
}

// familyAllows reports whether a step is one of the family's: kept permits
// have no fixed leases, re-entries, extensions or hold counts, and no
// force unlock.
func (r *seqRun) familyAllows(s Step) bool {
	if r.q.Kind != keptKind {
		return !slices.Contains(electionOps, s.Op)
	}
	switch s.Op {
	case "locklease", "extend", "holdcount", "isheld", "force":
		return false
	case "trylock", "lost":
		return s.D <= 0
	}
	return !slices.Contains(electionOps, s.Op)
}

// acquireEligible: an acquisition may run unless a revoked holder has not
// been told yet; Lock waits, so only when nobody else can hold the lock.
func (r *seqRun) acquireEligible(s Step) bool {
	i := r.idx(s.C, s.O)
	me := r.owners[i]
	for j, p := range r.owners {
		// No other owner may take a lock whose revoked holder has not been
		// told yet: it cannot know, so the overlap would be no bug.
		if j != i && p.revoked && (p.holding() || !p.dead.after.IsZero()) {
			return false
		}
	}
	if r.q.Kind == keptKind && (me.holding() || me.red > 0) {
		return false // one permit per owner at a time
	}
	if s.Op == "trylock" || me.holding() {
		return true
	}
	for j, p := range r.owners {
		if j != i && (p.red > 0 || !p.lost.at.IsZero()) {
			return false
		}
	}
	return true
}

// observe reads the lock hash and its PTTL in one transaction, then every
// owner's LostContext.
func (r *seqRun) observe() (observation, error) {
	if r.q.Kind == keptKind {
		return r.observeKept()
	}
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

// lcs asks every Client for its owners' LostContexts (a stopped one's are
// as last seen).
func (r *seqRun) lcs() ([]lcInfo, error) {
	out := make([]lcInfo, 0, len(r.owners))
	for c, cl := range r.clients {
		if !r.stopped[c].IsZero() {
			for o := range ownersPerClient {
				out = append(out, r.owners[r.idx(c, o)].lc)
			}
			continue
		}
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
	start := time.Now()
	rep, acting, err := r.exec(s, pre)
	end := time.Now()
	if err != nil {
		r.fail("agent", "%s: %v", s, err)
		return true
	}
	if rep.Err == "unsupported" {
		return false
	}
	if r.cutByReadTimeout(s, rep) {
		return true
	}
	r.stats.Ops[s.Op]++
	r.stats.Steps++
	if acting >= 0 {
		r.notePermit(acting, rep)
	}
	ob, err := r.observe()
	if err != nil {
		r.fail("agent", "after %s: %v", s, err)
		return true
	}
	r.logf("%3d %-22s %-40s redis %s", r.stepNo, s, r.describe(s, rep, start, end), r.describeRedis(ob))

	switch {
	case acting >= 0 && !r.judgeLostStep(s, acting, pre, rep):
		r.judgeCallSettled(s, acting, pre, rep, &ob)
	case acting < 0:
		r.judgeOther(s, pre, rep, ob, start, end)
	}
	r.checkAll(s, acting, pre, ob)
	r.resolve(ob)
	r.checkRevocations()
	r.sync(ob)
	r.checkLostSettled(ob)
	r.checkInside()
	r.lastPTTL, r.lastObs = ob.pttl, ob.qr
	return true
}

// exec runs step s: an owner's call (acting is the owner), or a step of a
// Client, Redis or the clock.
func (r *seqRun) exec(s Step, pre []ownerState) (rep reply, acting int, err error) {
	acting = -1
	switch {
	case ownerOp(s.Op):
		acting = r.idx(s.C, s.O)
		rep, err = r.ownerCall(s, pre[acting])
	case s.Op == "force":
		rep, err = r.clients[s.C].call(req{Op: "force", Timeout: callTimeout})
	case s.Op == "flushall":
		err = r.env.rdb.FlushAll(context.Background()).Err()
		err = errors.Join(err, r.setPermits())
	case s.Op == "restart":
		err = r.env.srv.Restart()
		err = errors.Join(err, r.setPermits())
	case s.Op == "pause":
		rep, err = r.pauseStep(s)
	case s.Op == "stop":
		err = r.stop(s.C)
	case s.Op == "cont":
		rep, err = r.cont(s.C)
	case s.Op == "stall":
		err = r.stall(s.D, nil)
	case s.Op == "sleep":
		time.Sleep(s.D)
	}
	return rep, acting, err
}

// ownerCall makes an owner's call (a lost step's TryLock while Redis
// stalls).
func (r *seqRun) ownerCall(s Step, p ownerState) (rep reply, err error) {
	rq := req{Op: s.Op, Owner: s.O, Lease: s.D, Timeout: callTimeout}
	switch s.Op {
	case "lock":
		rq.Lease = 0
	case "unlock":
		rq.Last = p.n == 1 && p.live()
	case "lost":
		rq.Op = "trylock"
		if w, err := r.clients[s.C].call(req{Op: "warm"}); err != nil || w.Err != "" {
			return w, errors.Join(err, fmt.Errorf("warming the Client: %s", w.Msg))
		}
		serr := r.stall(lostStall, func() { rep, err = r.clients[s.C].call(rq) })
		return rep, errors.Join(err, serr)
	}
	return r.clients[s.C].call(rq)
}

func (r *seqRun) describe(s Step, rep reply, start, end time.Time) string {
	d := end.Sub(start).Round(time.Millisecond)
	switch {
	case rep.Err != "":
		return fmt.Sprintf("-> %s (%v) %s", rep.Err, d, shorten(rep.Msg))
	case s.Op == "trylock" || s.Op == "force" || s.Op == "isheld":
		return fmt.Sprintf("-> %v (%v)", rep.OK, d)
	case s.Op == "cont":
		return fmt.Sprintf("-> looks %s (%v)", r.describeLooks(rep.Looks), d)
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
	var lcs []string
	for i, l := range ob.lc {
		if l.State != "none" {
			lcs = append(lcs, r.owners[i].name+":"+l.State)
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("free lc[%s]", strings.Join(lcs, " "))
	}
	return fmt.Sprintf("%s pttl=%v lc[%s]", strings.Join(parts, ","), ob.pttl, strings.Join(lcs, " "))
}
