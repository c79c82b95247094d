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

	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
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
	// Families the generator draws from, in turn by seed (nil: all of
	// familyNames).
	Families []string
	// StopAfter ends the run once this many sequences failed (0: never).
	StopAfter int
	Verbose   bool
	Out       io.Writer
	// Fence is the Clients' lost-call fence (rlock.WithLostCallFence):
	// "auto" (or "": FenceAuto) or "floor" (FenceFloor).
	Fence string
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
	// Looks counts the looks at a stopped holder's LostContext that saw it
	// live (pause.go), PausedLive those of them after its end was certain.
	Looks      int
	PausedLive int
	// LostReplies counts acquisitions whose reply was lost to a stall,
	// UntrueLooks the HoldCount or IsHeldByCurrent that then said "held".
	LostReplies int
	UntrueLooks int
	// Inconclusive counts sequences ended by a call that the Clients'
	// short ReadTimeout cut outside a stall (load, not a bug).
	Inconclusive int
	// Families counts the sequences of each family (the lock kinds
	// together, with stalls, kept permits, elections).
	Families map[string]int
	// Terms counts the elections' terms begun; Takeovers those that
	// followed another term within its epoch.
	Terms     int
	Takeovers int
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
	srv   *redistest.Server
	rdb   *redis.Client
	debug bool // DEBUG is enabled: stalls (DEBUG SLEEP) can run
	tag   int64
	n     int // sequences started (lock names)
	lc    *rlock.Client
}

// startEnv starts the run's redis-server, with DEBUG enabled for stalls
// when the server takes the option.
func startEnv() (*env, error) {
	debug := true
	srv, err := redistest.Start(redistest.WithArgs("--enable-debug-command", "yes"))
	if err != nil {
		debug = false
		if srv, err = redistest.Start(); err != nil {
			return nil, err
		}
	}
	return &env{srv: srv, rdb: redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: 5}), debug: debug, tag: time.Now().UnixNano() % 1e9}, nil
}

func (e *env) close() {
	if e.lc != nil {
		_ = e.lc.Close()
	}
	_ = e.rdb.Close()
	_ = e.srv.Close()
}

// checkerClient is a Client of the checker's own, for setting up what the
// sequences need (a semaphore's permits).
func (e *env) checkerClient() (*rlock.Client, error) {
	if e.lc != nil {
		return e.lc, nil
	}
	c, err := rlock.NewClient(e.rdb)
	if err != nil {
		return nil, err
	}
	e.lc = c
	return c, nil
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
	e, err := startEnv()
	if err != nil {
		return nil, err
	}
	defer e.close()
	res := &Result{Ops: map[string]int{}, Families: map[string]int{}}
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	if cfg.Replay != "" {
		err = runReplay(&cfg, e, res, start)
	} else {
		err = runGenerated(&cfg, e, res, start)
	}
	if err != nil {
		return res, err
	}
	summary(cfg.Out, &cfg, res, time.Since(start))
	return res, nil
}

// runReplay runs cfg.Replay's one sequence.
func runReplay(cfg *Config, e *env, res *Result, start time.Time) error {
	q, err := ParseSequence(cfg.Replay)
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "checker: replaying %d steps: %s\n", len(q.Steps), q)
	sr, err := runSequence(cfg, e, res, q, nil, time.Time{})
	if err != nil {
		return err
	}
	res.Sequences++
	printTrace(cfg.Out, sr)
	if sr.inconclusive != "" {
		fmt.Fprintf(cfg.Out, "checker: the replay was inconclusive: %s\n", sr.inconclusive)
	}
	if v := sr.first(); v != nil {
		f := Failure{Sequence: 1, Violation: *v, Full: sr.executed().String(), After: time.Since(start), StepsBefore: res.Steps}
		f.Shortest, f.ShortSteps, f.Replays, f.Reproduced = shrink(cfg, e, sr.executed(), *v)
		res.Failures = append(res.Failures, f)
		report(cfg.Out, f)
	}
	return nil
}

// runGenerated runs generated sequences, for cfg.Duration or
// cfg.Sequences. Each sequence gets a share of a short run (seqBudget), so
// that a one-minute run sees every family.
func runGenerated(cfg *Config, e *env, res *Result, start time.Time) error {
	deadline := time.Time{}
	if cfg.Sequences <= 0 {
		deadline = start.Add(cfg.Duration)
	}
	fmt.Fprintf(cfg.Out, "checker: %s, first seed %d, ops %s, families %s, lease check %v, redis %s (stalls %v)\n",
		plan(*cfg), cfg.Seed, cfg.Ops, familiesText(cfg.Families), cfg.LeaseCheck, e.srv.Addr, e.debug)
	for i := 0; ; i++ {
		if cfg.Sequences > 0 && i >= cfg.Sequences || cfg.Sequences <= 0 && time.Now().After(deadline) {
			break
		}
		seed := cfg.Seed + int64(i)
		g := newGenerator(seed, cfg.Ops, cfg.Families)
		q := g.header()
		stop := deadline
		if cfg.Sequences <= 0 {
			stop = earliest(deadline, time.Now().Add(seqBudget(cfg.Duration)))
		}
		sr, err := runSequence(cfg, e, res, q, g, stop)
		if err != nil {
			return fmt.Errorf("sequence %d (seed %d): %w", i+1, seed, err)
		}
		res.Sequences++
		res.Families[g.family]++
		printSeq(cfg.Out, i+1, seed, q, sr)
		v := sr.first()
		if v == nil {
			continue
		}
		printTrace(cfg.Out, sr)
		f := Failure{Seed: seed, Sequence: i + 1, Violation: *v, Full: sr.executed().String(), After: time.Since(start), StepsBefore: res.Steps}
		f.Shortest, f.ShortSteps, f.Replays, f.Reproduced = shrink(cfg, e, sr.executed(), *v)
		res.Failures = append(res.Failures, f)
		report(cfg.Out, f)
		if cfg.StopAfter > 0 && len(res.Failures) >= cfg.StopAfter {
			break
		}
	}
	return nil
}

// seqBudget is how long one sequence may run in a run of duration d: a
// quarter of a short run (so that a one-minute run sees every family), at
// least 15 s.
func seqBudget(d time.Duration) time.Duration { return max(d/4, 15*time.Second) }

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

func printSeq(out io.Writer, n int, seed int64, q Sequence, sr *seqResult) {
	status := "ok"
	switch v := sr.first(); {
	case v != nil:
		status = "VIOLATION " + v.Kind
	case sr.inconclusive != "":
		status = "inconclusive: " + sr.inconclusive
	}
	extra := ""
	if q.ReadTimeout > 0 {
		extra = fmt.Sprintf(" rt %v", q.ReadTimeout)
	}
	fmt.Fprintf(out, "  seq %3d seed %d %-10s %d clients (%s) wd %s%s: %2d steps, %v: %s\n", n, seed, q.Kind, len(q.Procs),
		procText(q.Procs), q.wdText(), extra, len(sr.q.Steps), sr.took.Round(100*time.Millisecond), status)
}

func familiesText(f []string) string {
	if len(f) == 0 {
		return "all"
	}
	return strings.Join(f, ",")
}

// parseFamilies reads -checker.families: "all" or a list of familyNames.
func parseFamilies(text string) ([]string, error) {
	text = strings.TrimSpace(text)
	if text == "" || text == "all" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(text, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(familyNames, f) {
			return nil, fmt.Errorf("checker: unknown family %q (families: %s)", f, strings.Join(familyNames, ", "))
		}
		out = append(out, f)
	}
	return out, nil
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
	// inconclusive: the sequence ended without a verdict (why).
	inconclusive string
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
	lock := fmt.Sprintf("checker:%d:%d", e.tag, e.n)
	if cfg.Verbose {
		fmt.Fprintf(cfg.Out, "  sequence: %s\n", q)
	}
	head := q
	head.Steps = nil
	var sr *seqResult
	var err error
	if q.Kind == electionKind {
		sr, err = runElection(cfg, e, res, head, lock, q.Steps, g, deadline)
	} else {
		sr, err = runLocks(cfg, e, res, head, lock, q.Steps, g, deadline)
	}
	if sr != nil {
		sr.took = time.Since(start)
	}
	return sr, err
}

// runLocks runs a sequence of a lock kind or of kept permits.
func runLocks(cfg *Config, e *env, res *Result, head Sequence, lock string, steps []Step, g *generator, deadline time.Time) (*seqResult, error) {
	return drive(&seqRun{journal: journal{cfg: cfg}, env: e, q: head, lock: lock, stats: res}, steps, g, deadline)
}

func (r *seqRun) draw(g *generator) Step { return g.next(r) }
func (r *seqRun) done() bool             { return r.inconclusive != "" || len(r.violations) > 0 }
func (r *seqRun) result() *seqResult {
	return &seqResult{q: r.q, trace: r.trace, violations: r.violations, inconclusive: r.inconclusive}
}

// runner runs one sequence of a family.
type runner interface {
	setup() error
	draw(g *generator) Step // the next step the generator draws for it
	step(s Step)            // runs s, observes and checks
	done() bool             // a violation (or no verdict) ended it
	wrapUp()
	teardown()
	result() *seqResult
}

// drive runs a sequence: the steps drawn by g (until its length or the
// deadline), or steps.
func drive(r runner, steps []Step, g *generator, deadline time.Time) (*seqResult, error) {
	if err := r.setup(); err != nil {
		r.teardown()
		return nil, err
	}
	src := source{g: g, steps: steps, deadline: deadline}
	for !r.done() {
		s, ok := src.next(r.draw)
		if !ok {
			break
		}
		r.step(s)
	}
	r.wrapUp()
	r.teardown()
	return r.result(), nil
}

// source yields a sequence's steps: drawn by a generator until its length
// or the deadline, or those of a replay.
type source struct {
	g        *generator
	steps    []Step
	deadline time.Time
	i        int
}

func (s *source) next(draw func(*generator) Step) (Step, bool) {
	s.i++
	switch {
	case s.g == nil && s.i > len(s.steps):
		return Step{}, false
	case s.g == nil:
		return s.steps[s.i-1], true
	case s.i > s.g.steps || !s.deadline.IsZero() && time.Now().After(s.deadline):
		return Step{}, false
	}
	return draw(s.g), true
}

// step runs s and records it.
func (r *seqRun) step(s Step) {
	r.stepNo = len(r.q.Steps)
	if !r.run(s) {
		r.skipped(s, r.stats)
		return
	}
	r.q.Steps = append(r.q.Steps, s)
}

// wrapUp ends a sequence that broke no invariant: stopped processes run
// again (a cont step, recorded), lost calls get their clean-up bound, and
// revoked holders their bounds.
func (r *seqRun) wrapUp() {
	for c := range r.stopped {
		if len(r.violations) == 0 && r.inconclusive == "" && !r.stopped[c].IsZero() {
			r.step(Step{Op: "cont", C: c})
		}
	}
	if len(r.violations) > 0 || r.inconclusive != "" {
		r.contAll()
		return
	}
	r.stepNo = len(r.q.Steps) - 1
	if err := r.awaitLost(); err != nil {
		r.fail("agent", "%v", err)
		return
	}
	r.finish()
}

// contAll lets every stopped process run again, unchecked.
func (r *seqRun) contAll() {
	for c, t := range r.stopped {
		if !t.IsZero() {
			_, _ = r.cont(c)
		}
	}
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
	fmt.Fprintf(out, "  shortest failing (%d steps, %d replays spent shrinking; it failed again in %d of 3 replays):\n    go test ./internal/verify/checker -run TestChecker -v -checker.replay '%s'\n", f.ShortSteps, f.Replays, f.Reproduced, f.Shortest)
	if f.Seed != 0 {
		fmt.Fprintf(out, "  rerun the sequence from its seed: go test ./internal/verify/checker -run TestChecker -v -checker.seed %d\n", f.Seed)
	}
}

func summary(out io.Writer, cfg *Config, res *Result, took time.Duration) {
	var ops []string
	for _, o := range opNames {
		if n := res.Ops[o]; n > 0 {
			ops = append(ops, fmt.Sprintf("%s %d", o, n))
		}
	}
	var fams []string
	for _, f := range familyNames {
		if n := res.Families[f]; n > 0 {
			fams = append(fams, fmt.Sprintf("%s %d", f, n))
		}
	}
	fmt.Fprintf(out, "checker done: %d sequences (%s), %d steps (%d replayed steps skipped) in %v; ops: %s; holds revoked %d, losses signalled %d, calls judged across a deadline or a racing loss %d; live looks at stopped holders %d (after their end %d); replies lost %d (looks then saying held %d); election terms %d (takeovers %d); inconclusive %d; violations %d\n",
		res.Sequences, strings.Join(fams, ", "), res.Steps, res.Skipped, took.Round(time.Second), strings.Join(ops, ", "), res.Revoked, res.Losses, res.Uncertain,
		res.Looks, res.PausedLive, res.LostReplies, res.UntrueLooks, res.Terms, res.Takeovers, res.Inconclusive, len(res.Failures))
	for _, f := range res.Failures {
		fmt.Fprintf(out, "  %s (seed %d, after %v / %d steps): %s\n    shortest (%d steps, failed again in %d of 3 replays): %s\n", f.Violation.Kind, f.Seed, f.After.Round(time.Second), f.StepsBefore, f.Violation.Msg, f.ShortSteps, f.Reproduced, f.Shortest)
	}
}
