package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/redistest"
)

// Config sets up a checker run.
type Config struct {
	// Duration: generate sequences until it has passed (the sequence
	// running then stops early). With Sequences > 0, run that many
	// instead.
	Duration  time.Duration
	Sequences int
	// Seed is the seed of the first sequence; sequence i has Seed+i.
	Seed int64
	// Replay runs this one sequence (Sequence.String's form) instead.
	Replay string
	// Ops the generator may use.
	Ops opSet
	// LeaseCheck compares the lock key's expiry with what the holds need
	// after every step (off: only the brief's invariants).
	LeaseCheck bool
	// ShrinkRuns bounds the replays spent shortening one failing sequence
	// (0: no shrinking), ShrinkTime the time.
	ShrinkRuns int
	ShrinkTime time.Duration
	// StopAfter ends the run once this many sequences failed (0: never).
	StopAfter int
	Verbose   bool
	Out       io.Writer
}

// Result is what a run saw.
type Result struct {
	Sequences int
	Steps     int
	Skipped   int // replayed steps the model did not let run
	Ops       map[string]int
	// Uncertain counts calls judged across a deadline or a loss that raced
	// the call, where the model accepts more than one outcome.
	Uncertain int
	Revoked   int // holds revoked behind their holder's back
	Losses    int // holding periods whose loss was signalled
	Failures  []Failure
	Elapsed   time.Duration
}

// Failure is a sequence that broke an invariant.
type Failure struct {
	Seed        int64 // 0: a replay
	Sequence    int   // its number in the run
	Violation   Violation
	Full        string // the sequence as run, up to the failing step
	Shortest    string // the shortest that still failed the same way
	ShortSteps  int
	Replays     int           // spent shrinking
	Reproduced  int           // of the 3 replays of the shortest made after shrinking, those that failed the same way
	After       time.Duration // since the run started
	StepsBefore int           // steps run in the whole run until then
}

// env is the run's redis-server.
type env struct {
	srv *redistest.Server
	rdb *redis.Client
	tag int64 // makes lock names unique to the run
	n   int   // sequences started (lock names)
}

// Run runs the checker and writes progress, failures and a summary to
// cfg.Out.
func Run(cfg Config) (*Result, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Ops == nil {
		cfg.Ops, _ = parseOps("all")
	}
	if cfg.Replay == "" && cfg.Duration <= 0 && cfg.Sequences <= 0 {
		return nil, errors.New("checker: a duration, a number of sequences or a sequence to replay")
	}
	srv, err := redistest.Start()
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	e := &env{srv: srv, rdb: redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: 5}), tag: time.Now().UnixNano() % 1e9}
	defer e.rdb.Close()
	res := &Result{Ops: map[string]int{}}
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()

	if cfg.Replay != "" {
		q, err := ParseSequence(cfg.Replay)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(cfg.Out, "checker: replaying %d steps: %s\n", len(q.Steps), q)
		sr, err := runSequence(&cfg, e, res, q, nil, time.Time{})
		if err != nil {
			return res, err
		}
		res.Sequences++
		printTrace(cfg.Out, sr)
		if v := sr.first(); v != nil {
			f := Failure{Sequence: 1, Violation: *v, Full: sr.executed().String(), After: time.Since(start), StepsBefore: res.Steps}
			f.Shortest, f.ShortSteps, f.Replays, f.Reproduced = shrink(&cfg, e, sr.executed(), *v)
			res.Failures = append(res.Failures, f)
			report(cfg.Out, f)
		}
		summary(cfg.Out, &cfg, res, time.Since(start))
		return res, nil
	}

	deadline := time.Time{}
	if cfg.Sequences <= 0 {
		deadline = start.Add(cfg.Duration)
	}
	fmt.Fprintf(cfg.Out, "checker: %s, first seed %d, ops %s, lease check %v, redis %s\n", plan(cfg), cfg.Seed, cfg.Ops, cfg.LeaseCheck, srv.Addr)
	for i := 0; ; i++ {
		if cfg.Sequences > 0 && i >= cfg.Sequences || cfg.Sequences <= 0 && time.Now().After(deadline) {
			break
		}
		seed := cfg.Seed + int64(i)
		g := newGenerator(seed, cfg.Ops)
		q := g.header()
		sr, err := runSequence(&cfg, e, res, q, g, deadline)
		if err != nil {
			return res, fmt.Errorf("sequence %d (seed %d): %w", i+1, seed, err)
		}
		res.Sequences++
		v := sr.first()
		status := "ok"
		if v != nil {
			status = "VIOLATION " + v.Kind
		}
		fmt.Fprintf(cfg.Out, "  seq %3d seed %d %-10s %-5s %d clients (%s) wd %v: %2d steps, %v: %s\n", i+1, seed, q.Kind, "", len(q.Procs),
			procText(q.Procs), q.Watchdog, len(sr.q.Steps), sr.took.Round(100*time.Millisecond), status)
		if v == nil {
			continue
		}
		printTrace(cfg.Out, sr)
		f := Failure{Seed: seed, Sequence: i + 1, Violation: *v, Full: sr.executed().String(), After: time.Since(start), StepsBefore: res.Steps}
		f.Shortest, f.ShortSteps, f.Replays, f.Reproduced = shrink(&cfg, e, sr.executed(), *v)
		res.Failures = append(res.Failures, f)
		report(cfg.Out, f)
		if cfg.StopAfter > 0 && len(res.Failures) >= cfg.StopAfter {
			break
		}
	}
	summary(cfg.Out, &cfg, res, time.Since(start))
	return res, nil
}

func plan(cfg Config) string {
	if cfg.Sequences > 0 {
		return fmt.Sprintf("%d sequences", cfg.Sequences)
	}
	return fmt.Sprintf("sequences for %v", cfg.Duration)
}

func procText(procs []bool) string {
	var s []string
	for _, p := range procs {
		if p {
			s = append(s, "process")
		} else {
			s = append(s, "in-process")
		}
	}
	return strings.Join(s, ", ")
}

// seqResult is one sequence's run.
type seqResult struct {
	q          Sequence // steps as executed
	trace      []string
	violations []Violation
	took       time.Duration
}

func (s *seqResult) first() *Violation {
	if len(s.violations) == 0 {
		return nil
	}
	best := s.violations[0]
	for _, v := range s.violations[1:] {
		if v.Step == best.Step && slices.Index(kindRank, v.Kind) < slices.Index(kindRank, best.Kind) {
			best = v
		}
	}
	return &best
}

// executed is the sequence as run, up to and including the failing step.
func (s *seqResult) executed() Sequence {
	q := s.q
	if v := s.first(); v != nil && v.Step < len(q.Steps) {
		q.Steps = q.Steps[:v.Step+1]
	}
	return q
}

// runSequence runs one sequence: generated step by step by g (steps stop
// once deadline, if set, has passed), or q's steps when g is nil. It stops
// at the first step that broke an invariant.
func runSequence(cfg *Config, e *env, res *Result, q Sequence, g *generator, deadline time.Time) (*seqResult, error) {
	start := time.Now()
	if err := e.rdb.FlushAll(context.Background()).Err(); err != nil {
		return nil, err
	}
	e.n++
	r := &seqRun{cfg: cfg, env: e, q: Sequence{Kind: q.Kind, Watchdog: q.Watchdog, Procs: q.Procs},
		lock: fmt.Sprintf("checker:%d:%d", e.tag, e.n), stats: res}
	if err := r.setup(); err != nil {
		r.teardown()
		return nil, err
	}
	if cfg.Verbose {
		fmt.Fprintf(cfg.Out, "  sequence: %s\n", q)
	}
	n := len(q.Steps)
	if g != nil {
		n = g.steps
	}
	for i := 0; i < n; i++ {
		if g != nil && !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		var s Step
		if g != nil {
			s = g.next(r)
		} else {
			s = q.Steps[i]
		}
		r.stepNo = len(r.q.Steps)
		if !r.run(s) {
			res.Skipped++
			r.logf("    %-22s skipped (the model does not let it run now)", s)
			continue
		}
		r.q.Steps = append(r.q.Steps, s)
		if len(r.violations) > 0 {
			break
		}
	}
	if len(r.violations) == 0 {
		r.stepNo = len(r.q.Steps) - 1
		r.finish()
	}
	r.teardown()
	return &seqResult{q: r.q, trace: r.trace, violations: r.violations, took: time.Since(start)}, nil
}

func printTrace(out io.Writer, sr *seqResult) {
	if len(sr.violations) == 0 {
		return
	}
	fmt.Fprintln(out, "    trace:")
	for _, l := range sr.trace {
		fmt.Fprintln(out, "     ", l)
	}
}

// shrink replays q with steps left out, keeping each shorter sequence that
// still fails with the same kind of violation, within cfg's budget. It
// returns the shortest failing sequence, its length, the replays spent, and
// how many of 3 more replays of it failed the same way (timing decides
// some failures).
func shrink(cfg *Config, e *env, q Sequence, v Violation) (string, int, int, int) {
	if cfg.ShrinkRuns <= 0 {
		return q.String(), len(q.Steps), 0, 0
	}
	fmt.Fprintf(cfg.Out, "  shrinking %d steps (violation %s), at most %d replays / %v...\n", len(q.Steps), v.Kind, cfg.ShrinkRuns, cfg.ShrinkTime)
	start := time.Now()
	replays := 0
	var lastTrace *seqResult
	fails := func(c Sequence) (Sequence, bool) {
		replays++
		quiet := *cfg
		quiet.Verbose = false
		scratch := &Result{Ops: map[string]int{}}
		sr, err := runSequence(&quiet, e, scratch, c, nil, time.Time{})
		if err != nil {
			return c, false
		}
		got := sr.first()
		ok := got != nil && got.Kind == v.Kind
		if ok {
			lastTrace = sr
		}
		fmt.Fprintf(cfg.Out, "    replay %2d: %2d steps: %s\n", replays, len(c.Steps), map[bool]string{true: "fails the same way", false: "passes (or fails otherwise)"}[ok])
		return sr.executed(), ok
	}
	budget := func() bool { return replays < cfg.ShrinkRuns && time.Since(start) < cfg.ShrinkTime }
	cur := q
	// ddmin: leave out chunks of the steps, from halves down to single
	// steps.
	chunks := 2
	for len(cur.Steps) > 1 && budget() {
		size := (len(cur.Steps) + chunks - 1) / chunks
		reduced := false
		for startAt := 0; startAt < len(cur.Steps) && budget(); startAt += size {
			c := cur
			c.Steps = append(slices.Clone(cur.Steps[:startAt]), cur.Steps[min(startAt+size, len(cur.Steps)):]...)
			if len(c.Steps) == 0 {
				continue
			}
			if ran, ok := fails(c); ok {
				cur = ran
				reduced = true
				break
			}
		}
		switch {
		case reduced:
			chunks = max(chunks-1, 2)
		case size == 1:
			chunks = len(cur.Steps) + 1 // done
		default:
			chunks = min(chunks*2, len(cur.Steps))
		}
		if chunks > len(cur.Steps) {
			break
		}
	}
	shrunk := replays
	if lastTrace != nil {
		fmt.Fprintln(cfg.Out, "  the shortest failing replay:")
		printTrace(cfg.Out, lastTrace)
	}
	again := 0
	for range 3 {
		if _, ok := fails(cur); ok {
			again++
		}
	}
	fmt.Fprintf(cfg.Out, "  the shortest sequence failed the same way in %d of 3 more replays\n", again)
	return cur.String(), len(cur.Steps), shrunk, again
}

func report(out io.Writer, f Failure) {
	fmt.Fprintf(out, "VIOLATION (%s) in sequence %d", f.Violation.Kind, f.Sequence)
	if f.Seed != 0 {
		fmt.Fprintf(out, " (seed %d)", f.Seed)
	}
	fmt.Fprintf(out, ", step %d, %v into the run, %d steps run in all:\n  %s\n", f.Violation.Step, f.After.Round(time.Second), f.StepsBefore, f.Violation.Msg)
	fmt.Fprintf(out, "  sequence as run (%d steps): %s\n", len(strings.Split(f.Full, ";"))-1, f.Full)
	fmt.Fprintf(out, "  shortest failing (%d steps, %d replays spent shrinking; it failed again in %d of 3 replays):\n    go test ./internal/checker -run TestChecker -v -checker.replay '%s'\n", f.ShortSteps, f.Replays, f.Reproduced, f.Shortest)
	if f.Seed != 0 {
		fmt.Fprintf(out, "  rerun the sequence from its seed: go test ./internal/checker -run TestChecker -v -checker.seed %d\n", f.Seed)
	}
}

func summary(out io.Writer, cfg *Config, res *Result, took time.Duration) {
	var ops []string
	for _, o := range opNames {
		if n := res.Ops[o]; n > 0 {
			ops = append(ops, fmt.Sprintf("%s %d", o, n))
		}
	}
	fmt.Fprintf(out, "checker done: %d sequences, %d steps (%d replayed steps skipped) in %v; ops: %s; holds revoked %d, losses signalled %d, calls judged across a deadline or a racing loss %d; violations %d\n",
		res.Sequences, res.Steps, res.Skipped, took.Round(time.Second), strings.Join(ops, ", "), res.Revoked, res.Losses, res.Uncertain, len(res.Failures))
	for _, f := range res.Failures {
		fmt.Fprintf(out, "  %s (seed %d, after %v / %d steps): %s\n    shortest (%d steps, failed again in %d of 3 replays): %s\n", f.Violation.Kind, f.Seed, f.After.Round(time.Second), f.StepsBefore, f.Violation.Msg, f.ShortSteps, f.Reproduced, f.Shortest)
	}
}

// generator makes a sequence step by step from its seed, looking at the
// model to pick steps that exercise it: re-entries of current holders,
// the revoked holder's own calls, sleeps that end near a fixed hold's
// expiry.
type generator struct {
	rng   *rand.Rand
	ops   opSet
	steps int
	q     Sequence
}

func newGenerator(seed int64, ops opSet) *generator {
	return &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), ops: ops}
}

// header draws the sequence's lock kind, watchdog timeout, Clients and
// length.
func (g *generator) header() Sequence {
	q := Sequence{Kind: kinds[g.rng.IntN(len(kinds))], Watchdog: 2 * time.Second}
	if g.rng.IntN(2) == 0 {
		// A watchdog interval (2 s) longer than the short fixed leases.
		q.Watchdog = 6 * time.Second
	}
	n := 2 + g.rng.IntN(2)
	q.Procs = make([]bool, n)
	procs := 1
	if n == 3 {
		procs += g.rng.IntN(2)
	}
	for _, i := range g.rng.Perm(n)[:procs] {
		q.Procs[i] = true
	}
	g.steps = 20 + g.rng.IntN(41)
	g.q = q
	return q
}

func (g *generator) dur(lo, hi time.Duration, step time.Duration) time.Duration {
	n := int64((hi - lo) / step)
	return lo + time.Duration(g.rng.Int64N(n+1))*step
}

// lease draws an acquisition's lease: watchdog, short fixed or long fixed.
func (g *generator) lease() time.Duration {
	switch x := g.rng.IntN(100); {
	case x < 40:
		return 0
	case x < 75:
		return g.dur(time.Second, 2*time.Second, 50*time.Millisecond)
	}
	return g.dur(10*time.Second, 20*time.Second, time.Second)
}

// next draws an eligible step.
func (g *generator) next(r *seqRun) Step {
	for tries := 0; ; tries++ {
		s := g.draw(r)
		if g.ops[s.Op] && r.eligible(s) {
			return s
		}
		if tries > 200 {
			return Step{Op: "sleep", D: 100 * time.Millisecond}
		}
	}
}

var weights = []struct {
	op string
	w  int
}{
	{"trylock", 17}, {"lock", 10}, {"locklease", 10}, {"unlock", 18}, {"extend", 7}, {"holdcount", 6},
	{"force", 4}, {"flushall", 2}, {"restart", 1}, {"pause", 4}, {"sleep", 20},
}

func (g *generator) draw(r *seqRun) Step {
	total := 0
	for _, w := range weights {
		total += w.w
	}
	x := g.rng.IntN(total)
	op := ""
	for _, w := range weights {
		if x < w.w {
			op = w.op
			break
		}
		x -= w.w
	}
	s := Step{Op: op}
	switch op {
	case "sleep":
		s.D = g.sleep(r)
	case "pause":
		var procs []int
		for c, p := range g.q.Procs {
			if p {
				procs = append(procs, c)
			}
		}
		s.C = procs[g.rng.IntN(len(procs))]
		s.D = g.dur(300*time.Millisecond, 3*time.Second, 100*time.Millisecond)
	case "force":
		s.C = g.rng.IntN(len(g.q.Procs))
	case "flushall", "restart":
	default:
		s.C, s.O = g.owner(r, op)
		me := r.owners[r.idx(s.C, s.O)]
		switch op {
		case "trylock":
			s.D = g.lease()
			if me.holding() && g.rng.IntN(2) == 0 {
				// Mixed leases: a re-entry of the other kind than the
				// holding period's.
				s.D = 0
				if me.wd {
					s.D = g.dur(time.Second, 2*time.Second, 50*time.Millisecond)
				}
			}
		case "locklease":
			for s.D <= 0 {
				s.D = g.lease()
			}
			if me.holding() && me.wd && g.rng.IntN(2) == 0 {
				s.D = g.dur(time.Second, 2*time.Second, 50*time.Millisecond)
			}
		case "extend":
			s.D = g.dur(time.Second, 2*time.Second, 50*time.Millisecond)
			if g.rng.IntN(2) == 0 {
				s.D = g.dur(10*time.Second, 20*time.Second, time.Second)
			}
		}
	}
	return s
}

// owner draws the owner of a call: often a revoked holder (its own next
// call), or the current holder (re-entries, releases), else anyone.
func (g *generator) owner(r *seqRun, op string) (int, int) {
	var revoked, holders, remnants, told []int
	for i, o := range r.owners {
		switch {
		case o.revoked && o.holding():
			revoked = append(revoked, i)
		case o.holding():
			holders = append(holders, i)
		case o.red > 0:
			remnants = append(remnants, i)
			if o.lc.State == "ended" {
				told = append(told, i)
			}
		}
	}
	pick := func(from []int) (int, int) {
		i := from[g.rng.IntN(len(from))]
		return r.owners[i].c, r.owners[i].o
	}
	// Releases and extensions go mostly to holders, acquisitions less so
	// (re-entries, but also contenders).
	toHolder := 45
	if op == "unlock" || op == "extend" || op == "holdcount" {
		toHolder = 85
	}
	switch x := g.rng.IntN(100); {
	case len(told) > 0 && acquireOp(op) && x < 50:
		// Told its hold is lost while Redis still has it (between the
		// local deadline and the expiry): a new acquisition must be a
		// fresh hold.
		return pick(told)
	case len(revoked) > 0 && x < 60:
		return pick(revoked)
	case len(holders) > 0 && x < toHolder:
		return pick(holders)
	case len(remnants) > 0 && x < toHolder+10:
		return pick(remnants)
	}
	i := g.rng.IntN(len(r.owners))
	return r.owners[i].c, r.owners[i].o
}

// sleep draws a sleep: often one that ends near a fixed hold's expiry
// (around its local deadline, or between that deadline and the key's
// expiry), else 0.1-3 s.
func (g *generator) sleep(r *seqRun) time.Duration {
	if g.rng.IntN(100) < 60 {
		var targets []time.Duration
		for _, o := range r.owners {
			if o.red == 0 || o.keyWd {
				continue
			}
			dl, exp := time.Until(o.dlLo), time.Until(o.lo)
			if dl <= 0 || dl >= 3200*time.Millisecond {
				continue
			}
			if g.rng.IntN(2) == 0 {
				targets = append(targets, dl+time.Duration(g.rng.IntN(400)-200)*time.Millisecond)
			} else {
				// Told of the loss, yet still in Redis.
				targets = append(targets, dl+(exp-dl)/4+time.Duration(g.rng.Int64N(int64((exp-dl)/2)+1)))
			}
		}
		// Just past the key's expiry as last read (PTTL): a key that a
		// correct library keeps (a watchdog lease is renewed before it runs
		// out) or lets go (a fixed one) shows which it did.
		if r.lastPTTL > 0 && (len(targets) == 0 || g.rng.IntN(2) == 0) {
			if d := r.lastPTTL - time.Since(r.lastObs); d > 0 && d < 3*time.Second {
				targets = []time.Duration{d + time.Duration(10+g.rng.IntN(300))*time.Millisecond}
			}
		}
		if len(targets) > 0 {
			d := targets[g.rng.IntN(len(targets))]
			return min(max(d, 100*time.Millisecond), 3*time.Second).Round(time.Millisecond)
		}
	}
	return g.dur(100*time.Millisecond, 3*time.Second, 50*time.Millisecond)
}
