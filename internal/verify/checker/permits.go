package main

// permits.go: the permit-conservation property check (TestPermits,
// docs/checker.md "Permits"). Seeded rounds of random semaphore calls by
// six actors on two goredisson Clients, each Client behind a fault proxy,
// against one real redis-server, with faults drawn from the round's seed:
// lost replies (the proxy drops what Redis answers), latency, reset and
// cut-off connections, a stalled server (SIGSTOP), a restart. A sampler
// reads Redis in one transaction every few tens of milliseconds and checks,
// against what the actors were told:
//
//   - Redis never holds more permits than were set: the counter plus the
//     permits taken (the {name}:timeout sorted set, expired or not) stay at
//     or under every permit set or added (counted from the call's start);
//   - held + available never exceeds what was set: the permits the
//     holders were told they hold and whose lease lasts, plus those
//     available (the counter, and expired permits not yet swept back);
//   - no live permit id a holder was told it has disappears while its
//     lease lasts (a fixed lease from the acquire's start, a kept permit's
//     while its LostContext is live), nor expires before it.
//
// Reads (AvailablePermits, Permits), releases, lease updates and LeaseTime
// of a permit whose lease lasts are checked against the same.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/faultproxy"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// PermitsConfig sets up a permit-conservation run.
type PermitsConfig struct {
	// Duration: start rounds until it has passed; with Rounds > 0, run
	// that many instead.
	Duration time.Duration
	Rounds   int
	// Seed is the first round's seed; round i has Seed+i. A round's seed
	// draws its plan: the semaphore, the permits, the Clients' timeouts,
	// each actor's calls and pauses, and the faults with their times. The
	// interleaving is the machine's: a failing seed is rerun with its plan,
	// not with the same schedule.
	Seed int64
	// Kind: "both" (the seed's parity picks), "Semaphore" or
	// "PermitExpirableSemaphore".
	Kind string
	// Active is how long a round's actors and faults run (0: 6-9 s from
	// the seed).
	Active  time.Duration
	Verbose bool
	Out     io.Writer
}

// PermitsResult is what a run saw.
type PermitsResult struct {
	Rounds   int
	Calls    int
	Checks   int            // samples of Redis checked
	Ops      map[string]int // calls by op
	Faults   map[string]int
	Leaked   int // permits not back by a round's end (lost replies of unknown outcome): never an excess
	Failures []PermitsFailure
	Elapsed  time.Duration
}

// PermitsFailure is a round that broke the property.
type PermitsFailure struct {
	Seed       int64
	Kind       string
	Violations []string
	Trace      []string // the round's last events before the first violation
}

// permit ids never expire at this score (Redisson's nonExpirableTimeout).
const neverScore = 922337203685477

// RunPermits runs the permit-conservation check.
func RunPermits(cfg PermitsConfig) (PermitsResult, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Kind == "" {
		cfg.Kind = "both"
	}
	switch cfg.Kind {
	case "both", "Semaphore", "PermitExpirableSemaphore":
	default:
		return PermitsResult{}, fmt.Errorf("permits: unknown kind %q (both, Semaphore, PermitExpirableSemaphore)", cfg.Kind)
	}
	redis.SetLogger(quietLog{}) // lost replies make go-redis log every broken connection
	srv, err := redistest.Start()
	if err != nil {
		return PermitsResult{}, err
	}
	defer srv.Close()
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer raw.Close()
	res := PermitsResult{Ops: map[string]int{}, Faults: map[string]int{}}
	start := time.Now()
	fmt.Fprintf(cfg.Out, "permits: seed %d, kind %s, redis %s\n", cfg.Seed, cfg.Kind, srv.Addr)
	for i := 0; ; i++ {
		if cfg.Rounds > 0 && i >= cfg.Rounds || cfg.Rounds <= 0 && time.Since(start) >= cfg.Duration {
			break
		}
		seed := cfg.Seed + int64(i)
		r, err := newPermitRound(&cfg, seed, srv, raw)
		if err != nil {
			return res, err
		}
		fail := r.run()
		res.Rounds++
		res.Calls += r.calls
		res.Checks += r.checks
		res.Leaked += r.leaked
		for k, v := range r.ops {
			res.Ops[k] += v
		}
		for k, v := range r.faults {
			res.Faults[k] += v
		}
		status := "ok"
		if fail != nil {
			status = fmt.Sprintf("VIOLATION (%d)", len(fail.Violations))
		}
		fmt.Fprintf(cfg.Out, "permits: round %d seed %d %s %d permits: %d calls, %d checks, faults %s, leaked %d: %s\n",
			i, seed, r.kind, r.base, r.calls, r.checks, fmtCounts(r.faults), r.leaked, status)
		if fail != nil {
			res.Failures = append(res.Failures, *fail)
			fmt.Fprintf(cfg.Out, "\npermits: VIOLATION in round %d, seed %d (%s)\n", i, seed, r.kind)
			for _, v := range fail.Violations {
				fmt.Fprintf(cfg.Out, "  %s\n", v)
			}
			fmt.Fprintf(cfg.Out, "  last events before it:\n")
			for _, t := range fail.Trace {
				fmt.Fprintf(cfg.Out, "    %s\n", t)
			}
			fmt.Fprintf(cfg.Out, "  rerun: go test -race -run TestPermits ./internal/verify/checker -v -permits.seed %d -permits.kind %s\n\n", seed, r.kind)
		}
	}
	res.Elapsed = time.Since(start)
	keys := make([]string, 0, len(res.Ops))
	for k := range res.Ops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ops []string
	for _, k := range keys {
		ops = append(ops, fmt.Sprintf("%s %d", k, res.Ops[k]))
	}
	fmt.Fprintf(cfg.Out, "permits: %d rounds, %d calls (%s), %d checks of Redis, faults %s, %d permits leaked (not back by a round's end), %d violations, %v\n",
		res.Rounds, res.Calls, strings.Join(ops, ", "), res.Checks, fmtCounts(res.Faults), res.Leaked, len(res.Failures), res.Elapsed.Round(time.Millisecond))
	return res, nil
}

func fmtCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

// pHold is what one actor was told it holds: a Semaphore's n permits or a
// PermitExpirableSemaphore's permit ids.
type pHold struct {
	actor   int
	ids     []string // hex, as Acquire returns them
	n       int
	kept    *rlock.KeptPermit
	lost    context.Context // a kept permit's LostContext
	stop    context.CancelFunc
	start   time.Time // the acquire's start: its lease began no earlier
	got     time.Time // the acquire returned
	expiry  time.Time // the lease ends no earlier (finite leases)
	never   bool      // a permit that never expires
	release time.Time // a release (or forgetting) began: no longer counted
	// A lease update that succeeded set expiry and never at raised; reads
	// begun before then judge by prevExpiry and prevNever.
	raised     time.Time
	prevExpiry time.Time
	prevNever  bool
	stale      bool      // taken before a restart, or across one: not checked
	suspect    time.Time // a kept permit seen gone while its LostContext was live
	// reported: the kinds of violation about it already reported.
	reported map[string]bool
}

// leaseAt returns the lease as a read begun at t must judge it: whether
// the permit never expires, else the earliest its lease ends.
func (h *pHold) leaseAt(t time.Time) (never bool, expiry time.Time) {
	if !h.raised.IsZero() && t.Before(h.raised) {
		return h.prevNever, h.prevExpiry
	}
	return h.never, h.expiry
}

// finite reports a permit with a fixed lease (neither kept nor never).
func (h *pHold) finite() bool { return h.kept == nil && !h.never }

// liveAt reports whether the holder may count on h at t, for a read begun
// at t0: no release began by t, and its lease lasts past t (by margin).
func (h *pHold) liveAt(t0, t time.Time, margin time.Duration) bool {
	if h.stale || !h.release.IsZero() && !h.release.After(t) {
		return false
	}
	if h.kept != nil {
		return h.lost.Err() == nil
	}
	never, expiry := h.leaseAt(t0)
	return never || expiry.After(t.Add(margin))
}

// pRound is one round: one semaphore name, two Clients, six actors.
type pRound struct {
	cfg     *PermitsConfig
	seed    int64
	rng     *rand.Rand
	kind    string
	name    string
	base    int
	srv     *redistest.Server
	raw     *redis.Client
	proxies []*faultproxy.Proxy
	rdbs    []*redis.Client
	clients []*rlock.Client
	active  time.Duration
	start   time.Time

	mu    sync.Mutex
	setHi int // every permit set or added, from the call's start
	// addsOpen counts the adds begun and not known done (running, or
	// failed: a lost one may still land): a set of the total to n may be
	// followed by each of them.
	addsOpen   int
	allowance  int // Semaphore: permits a restart may let back (calls in flight across it)
	holds      map[*pHold]bool
	inflight   map[int]int // Semaphore calls that may give permits back: id -> n
	nextCall   int
	restarting bool
	restartAt  time.Time // the last restart's start (zero: none)
	restartEnd time.Time
	violations []string
	once       map[string]bool // round-wide violations reported (see violateOnce)
	trace      []string
	traceAt    int // trace length when the first violation came
	calls      int
	checks     int
	leaked     int
	ops        map[string]int
	faults     map[string]int
}

func newPermitRound(cfg *PermitsConfig, seed int64, srv *redistest.Server, raw *redis.Client) (*pRound, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	kind := cfg.Kind
	if kind == "both" {
		kind = "Semaphore"
		if seed%2 != 0 {
			kind = "PermitExpirableSemaphore"
		}
	}
	r := &pRound{cfg: cfg, seed: seed, rng: rng, kind: kind, srv: srv, raw: raw,
		name: fmt.Sprintf("permits:%d:%d", time.Now().UnixNano()%1e9, seed),
		base: 1 + rng.IntN(3), holds: map[*pHold]bool{}, inflight: map[int]int{},
		ops: map[string]int{}, faults: map[string]int{}}
	r.active = cfg.Active
	if r.active <= 0 {
		r.active = time.Duration(6000+rng.IntN(3000)) * time.Millisecond
	}
	r.setHi = r.base
	for i := range 2 {
		p, err := faultproxy.Start(srv.Addr)
		if err != nil {
			r.close()
			return nil, err
		}
		r.proxies = append(r.proxies, p)
		timeout := time.Duration(300+rng.IntN(700)) * time.Millisecond
		rdb := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
			ReadTimeout: timeout, WriteTimeout: timeout, PoolSize: 2 + rng.IntN(6)})
		r.rdbs = append(r.rdbs, rdb)
		c, err := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(2*time.Second), rlock.WithClientRegistry(false),
			rlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), rlock.WithClientName(fmt.Sprintf("permits-c%d", i)))
		if err != nil {
			r.close()
			return nil, err
		}
		r.clients = append(r.clients, c)
	}
	return r, nil
}

func (r *pRound) close() {
	for _, c := range r.clients {
		_ = c.Close()
	}
	for _, rdb := range r.rdbs {
		_ = rdb.Close()
	}
	for _, p := range r.proxies {
		_ = p.Close()
	}
}

// event records a line of the round's trace.
func (r *pRound) event(format string, args ...any) {
	line := fmt.Sprintf("%7.3fs ", time.Since(r.start).Seconds()) + fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.trace = append(r.trace, line)
	r.mu.Unlock()
	if r.cfg.Verbose {
		fmt.Fprintln(r.cfg.Out, "  "+line)
	}
}

// violateOnce records a violation about h, once per hold and kind of
// violation (the sampler sees it again at every look); r.mu is held.
// A nil h: once per round.
func (r *pRound) violateOnce(h *pHold, kind string, format string, args ...any) {
	seen := &r.once
	if h != nil {
		seen = &h.reported
	}
	if *seen == nil {
		*seen = map[string]bool{}
	}
	if (*seen)[kind] {
		return
	}
	(*seen)[kind] = true
	r.violate(format, args...)
}

// violate records a violation; r.mu is held.
func (r *pRound) violate(format string, args ...any) {
	v := fmt.Sprintf("%7.3fs ", time.Since(r.start).Seconds()) + fmt.Sprintf(format, args...)
	if len(r.violations) == 0 {
		r.traceAt = len(r.trace)
	}
	r.violations = append(r.violations, v)
	r.trace = append(r.trace, "VIOLATION "+v)
	if r.cfg.Verbose {
		fmt.Fprintln(r.cfg.Out, "  VIOLATION "+v)
	}
}

// run runs the round and returns its failure, if any.
func (r *pRound) run() *PermitsFailure {
	defer r.close()
	ctx := context.Background()
	r.start = time.Now()
	if err := r.set(ctx, r.raw); err != nil {
		r.mu.Lock()
		r.violate("could not set the permits: %v", err)
		r.mu.Unlock()
		return r.failure()
	}
	r.event("%s %q set to %d permits", r.kind, r.name, r.base)
	end := r.start.Add(r.active)
	actx, stopActors := context.WithDeadline(ctx, end)
	var wg sync.WaitGroup
	for a := range 6 {
		rng := rand.New(rand.NewPCG(uint64(r.seed), uint64(a+1)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.actor(actx, a, rng)
		}()
	}
	plan := r.faultPlan()
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		r.runFaults(actx, plan)
	}()
	samplerDone := make(chan struct{})
	sctx, stopSampler := context.WithCancel(ctx)
	go func() {
		defer close(samplerDone)
		for sctx.Err() == nil {
			r.sample(sctx)
			sleepCtx(sctx, samplePause())
		}
	}()
	wg.Wait()
	<-faultsDone
	stopActors()
	r.event("actors and faults stopped")
	r.finish(ctx)
	stopSampler()
	<-samplerDone
	r.sample(ctx) // a last look, after the settles
	r.mu.Lock()
	defer r.mu.Unlock()
	for h := range r.holds {
		if h.stop != nil {
			h.stop()
		}
	}
	if len(r.violations) > 0 {
		return r.failureLocked()
	}
	return nil
}

var sampleRand = struct {
	sync.Mutex
	r *rand.Rand
}{r: rand.New(rand.NewPCG(1, 2))}

// samplePause draws the sampler's pause, 10-50 ms (not from the round's
// seed: the sampler's timing is no part of the plan).
func samplePause() time.Duration {
	sampleRand.Lock()
	defer sampleRand.Unlock()
	return time.Duration(10+sampleRand.r.IntN(40)) * time.Millisecond
}

func (r *pRound) failure() *PermitsFailure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failureLocked()
}

func (r *pRound) failureLocked() *PermitsFailure {
	from := max(0, r.traceAt-60)
	trace := slices.Clone(r.trace[from:min(len(r.trace), r.traceAt+5)])
	return &PermitsFailure{Seed: r.seed, Kind: r.kind, Violations: slices.Clone(r.violations), Trace: trace}
}

// set sets the round's permits through a Client on rdb.
func (r *pRound) set(ctx context.Context, rdb *redis.Client) error {
	c, err := rlock.NewClient(rdb, rlock.WithClientRegistry(false))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r.mu.Lock()
	n := r.setHi
	r.mu.Unlock()
	if r.kind == "Semaphore" {
		_, err = c.NewSemaphore(r.name).TrySetPermits(ctx, n)
	} else {
		_, err = c.NewPermitExpirableSemaphore(r.name).TrySetPermits(ctx, n)
	}
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// --- faults ---

type pFault struct {
	at     time.Duration
	what   string // drop latency reset partition stall restart
	client int
	dur    time.Duration
}

func (f pFault) String() string {
	switch f.what {
	case "stall", "restart":
		return fmt.Sprintf("%s %v", f.what, f.dur)
	}
	return fmt.Sprintf("%s c%d %v", f.what, f.client, f.dur)
}

// faultPlan draws the round's faults from its seed.
func (r *pRound) faultPlan() []pFault {
	rng := rand.New(rand.NewPCG(uint64(r.seed), 0xfa17))
	var plan []pFault
	restart := rng.IntN(3) == 0
	for at := time.Duration(300+rng.IntN(700)) * time.Millisecond; at < r.active-500*time.Millisecond; at += time.Duration(400+rng.IntN(1200)) * time.Millisecond {
		f := pFault{at: at, client: rng.IntN(2)}
		switch x := rng.IntN(20); {
		case x < 8:
			f.what, f.dur = "drop", time.Duration(100+rng.IntN(700))*time.Millisecond
		case x < 11:
			f.what, f.dur = "latency", time.Duration(200+rng.IntN(800))*time.Millisecond
		case x < 13:
			f.what = "reset"
		case x < 15:
			f.what, f.dur = "partition", time.Duration(100+rng.IntN(500))*time.Millisecond
		case x < 19:
			f.what, f.dur = "stall", time.Duration(300+rng.IntN(2200))*time.Millisecond
		default:
			if !restart {
				continue
			}
			restart = false
			f.what = "restart"
		}
		plan = append(plan, f)
	}
	return plan
}

func (r *pRound) runFaults(ctx context.Context, plan []pFault) {
	for _, f := range plan {
		sleepCtx(ctx, time.Until(r.start.Add(f.at)))
		if ctx.Err() != nil {
			return
		}
		r.event("fault %s", f)
		r.mu.Lock()
		r.faults[f.what]++
		r.mu.Unlock()
		p := r.proxies[f.client]
		switch f.what {
		case "drop":
			p.DropResponses(true)
			sleepCtx(ctx, f.dur)
			p.DropResponses(false)
		case "latency":
			p.SetLatency(time.Duration(20+r.rng.IntN(80)) * time.Millisecond)
			sleepCtx(ctx, f.dur)
			p.SetLatency(0)
		case "reset":
			p.ResetConnections()
		case "partition":
			p.Partition(true)
			sleepCtx(ctx, f.dur)
			p.Partition(false)
		case "stall":
			if err := r.srv.Pause(); err != nil {
				r.event("stall: %v", err)
				continue
			}
			sleepCtx(ctx, f.dur)
			_ = r.srv.Resume()
		case "restart":
			r.restart(ctx)
		}
		r.event("fault %s over", f.what)
	}
}

// restart restarts redis-server (every key lost) and sets the permits
// again. What was taken before it is forgotten (stale); for a Semaphore,
// the permits of calls in flight across it (a lost acquire given back, a
// release) may come back on the new server: that is its allowance.
func (r *pRound) restart(ctx context.Context) {
	r.mu.Lock()
	r.restarting = true
	r.restartAt = time.Now()
	for h := range r.holds {
		h.stale = true
	}
	for _, n := range r.inflight {
		r.allowance += n
	}
	r.mu.Unlock()
	err := r.srv.Restart()
	if err == nil {
		err = r.set(ctx, r.raw)
	}
	r.mu.Lock()
	r.setHi += r.addsOpen // adds open across the restart may land on the new server
	r.restarting = false
	r.restartEnd = time.Now()
	if err != nil {
		r.violate("restart: %v", err)
	}
	// Lost acquires of before the restart are given back within the
	// clean-up bound (5 s) after their reply: the allowance stays.
	r.mu.Unlock()
}

// --- the sampler ---

// sample reads the semaphore in one transaction and checks the property.
func (r *pRound) sample(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s0 := time.Now()
	var get *redis.StringCmd
	var zr *redis.ZSliceCmd
	var tm *redis.TimeCmd
	_, err := r.raw.TxPipelined(cctx, func(p redis.Pipeliner) error {
		get = p.Get(cctx, r.name)
		if r.kind != "Semaphore" {
			zr = p.ZRangeWithScores(cctx, "{"+r.name+"}:timeout", 0, -1)
		}
		tm = p.Time(cctx)
		return nil
	})
	s1 := time.Now()
	if err != nil && !errors.Is(err, redis.Nil) {
		return
	}
	counter, gerr := get.Int()
	if gerr != nil && !errors.Is(gerr, redis.Nil) {
		return
	}
	missing := errors.Is(gerr, redis.Nil)
	now := tm.Val()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.restarting || !r.restartAt.IsZero() && s0.Before(r.restartEnd) {
		return // a restart overlapped the read
	}
	r.checks++
	if r.kind == "Semaphore" {
		r.checkSemaphore(s0, s1, counter, missing)
		return
	}
	r.checkPermits(s0, s1, now, counter, missing, zr.Val())
}

// countedAt reports whether h counts as held in a read made in [s0, s1]:
// the acquire returned before s0, and no release began by s1.
func (h *pHold) countedAt(s0, s1 time.Time) bool {
	return !h.stale && h.got.Before(s0) && (h.release.IsZero() || h.release.After(s1))
}

func (r *pRound) checkSemaphore(s0, s1 time.Time, counter int, missing bool) {
	held := 0
	for h := range r.holds {
		if h.countedAt(s0, s1) {
			held += h.n
		}
	}
	if missing && held > 0 {
		r.violateOnce(nil, "gone", "the semaphore's counter is gone while %d permits are held", held)
		return
	}
	if counter+held > r.setHi+r.allowance {
		r.violateOnce(nil, "excess", "held %d + available %d = %d > %d set (+%d a restart may let back)", held, counter, held+counter, r.setHi, r.allowance)
	}
}

func (r *pRound) checkPermits(s0, s1, now time.Time, counter int, missing bool, members []redis.Z) {
	scores := make(map[string]float64, len(members))
	expired := 0
	nowMs := float64(now.UnixMilli())
	for _, z := range members {
		id, _ := z.Member.(string)
		scores[hex.EncodeToString([]byte(id))] = z.Score
		if z.Score <= nowMs {
			expired++
		}
	}
	if missing && len(members) == 0 {
		if len(r.liveIDs(s0, s1, now)) > 0 {
			r.violateOnce(nil, "gone", "the semaphore is gone (no counter, no permits taken) while permits are held")
		}
		return
	}
	if counter+len(members) > r.setHi {
		r.violateOnce(nil, "redis-excess", "Redis: available %d + taken %d = %d > %d set (taken: %s)", counter, len(members), counter+len(members), r.setHi, fmtScores(scores, nowMs))
	}
	live := 0
	for h := range r.holds {
		if !h.countedAt(s0, s1) {
			continue
		}
		if h.kept != nil {
			if h.lost.Err() != nil {
				continue
			}
			if _, ok := scores[h.ids[0]]; !ok {
				if h.suspect.IsZero() {
					h.suspect = s1 // gone while its LostContext is live: it must end soon
				}
				continue
			}
			live++
			continue
		}
		// Redis's clock and ours are the machine's: the lease, counted from
		// the acquire's start, lasts past Redis's now.
		never, expiry := h.leaseAt(s0)
		if !never && !expiry.After(now.Add(5*time.Millisecond)) {
			continue
		}
		live++
		for _, id := range h.ids {
			score, ok := scores[id]
			switch {
			case !ok:
				r.violateOnce(h, "vanished", "live permit %s of actor %d vanished (taken at %.3fs, its lease lasts %s; Redis now %d): available %d, taken %s",
					id[:8], h.actor, h.got.Sub(r.start).Seconds(), leaseLeft(never, expiry, now), now.UnixMilli(), counter, fmtScores(scores, nowMs))
			case never && score != neverScore:
				r.violateOnce(h, "score", "permit %s of actor %d never expires, but Redis has it expire at %.0f", id[:8], h.actor, score)
			case !never && score < float64(expiry.UnixMilli())-5:
				r.violateOnce(h, "score", "permit %s of actor %d expires at %.0f in Redis, %v before its lease ends", id[:8], h.actor, score,
					time.Duration(float64(expiry.UnixMilli())-score)*time.Millisecond)
			}
		}
	}
	if avail := counter + expired; live+avail > r.setHi {
		r.violateOnce(nil, "excess", "held %d (live) + available %d (%d counted, %d expired not yet swept) = %d > %d set",
			live, avail, counter, expired, live+avail, r.setHi)
	}
	// A kept permit seen gone must see its LostContext end within 300 ms.
	for h := range r.holds {
		if !h.suspect.IsZero() && h.lost.Err() == nil && h.release.IsZero() && !h.stale && time.Since(h.suspect) > 300*time.Millisecond {
			r.violate("kept permit %s of actor %d gone from Redis for %v while its LostContext is live", h.ids[0][:8], h.actor, time.Since(h.suspect).Round(time.Millisecond))
			h.suspect = time.Time{}
		}
	}
}

func leaseLeft(never bool, expiry, now time.Time) string {
	if never {
		return "forever"
	}
	return expiry.Sub(now).Round(time.Millisecond).String() + " more"
}

func fmtScores(scores map[string]float64, nowMs float64) string {
	var parts []string
	for id, s := range scores {
		if s == neverScore {
			parts = append(parts, id[:8]+"=never")
		} else {
			parts = append(parts, fmt.Sprintf("%s=%+.0fms", id[:8], s-nowMs))
		}
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// liveIDs returns the ids of holds that count in [s0, s1] and whose lease
// lasts past now (kept ones excluded).
func (r *pRound) liveIDs(s0, s1, now time.Time) []string {
	var ids []string
	for h := range r.holds {
		if h.countedAt(s0, s1) && h.kept == nil {
			if never, expiry := h.leaseAt(s0); never || expiry.After(now.Add(5*time.Millisecond)) {
				ids = append(ids, h.ids...)
			}
		}
	}
	return ids
}

// --- the actors ---

// actor makes random calls on its Client until ctx ends, then gives back
// what it holds.
func (r *pRound) actor(ctx context.Context, a int, rng *rand.Rand) {
	c := r.clients[a%2]
	var mine []*pHold
	for ctx.Err() == nil {
		// Forget what a restart made stale or an op finished with.
		mine = slices.DeleteFunc(mine, func(h *pHold) bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return !r.holds[h] || h.stale && r.kind == "Semaphore"
		})
		if r.kind == "Semaphore" {
			mine = r.semaphoreStep(ctx, a, rng, c.NewSemaphore(r.name), mine)
		} else {
			mine = r.permitsStep(ctx, a, rng, c.NewPermitExpirableSemaphore(r.name), mine)
		}
		sleepCtx(ctx, time.Duration(rng.IntN(150))*time.Millisecond)
	}
}

// callCtx returns a context for one call: a timeout, and now and then a
// cancel at a random moment.
func callCtx(rng *rand.Rand, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	if rng.IntN(4) == 0 {
		t := time.AfterFunc(time.Duration(rng.IntN(300))*time.Millisecond, cancel)
		return ctx, func() { t.Stop(); cancel() }
	}
	return ctx, cancel
}

func (r *pRound) count(op string) {
	r.mu.Lock()
	r.calls++
	r.ops[op]++
	r.mu.Unlock()
}

// addHold records a hold the actor was told it has.
func (r *pRound) addHold(h *pHold) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.overlapsRestart(h.start) {
		h.stale = true // the call overlapped a restart: which server took it is unknown
	}
	r.holds[h] = true
}

// beginRelease marks h no longer counted from now on.
func (r *pRound) beginRelease(h *pHold) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.release = time.Now()
	return h.release
}

func (r *pRound) dropHold(h *pHold) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.stop != nil {
		h.stop()
	}
	delete(r.holds, h)
}

// track records a Semaphore call that may give n permits back (an acquire:
// a lost one is given back; a release) while it runs.
func (r *pRound) track(n int) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextCall++
	id := r.nextCall
	r.inflight[id] = n
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.inflight, id)
	}
}

func (r *pRound) semaphoreStep(ctx context.Context, a int, rng *rand.Rand, sem *rlock.Semaphore, mine []*pHold) []*pHold {
	switch x := rng.IntN(20); {
	case x < 8 || len(mine) == 0 && x < 14:
		n := 1
		if r.base > 1 && rng.IntN(4) == 0 {
			n = 2
		}
		cctx, cancel := callCtx(rng, time.Duration(200+rng.IntN(3000))*time.Millisecond)
		defer cancel()
		untrack := r.track(n) // a lost acquire is given back in the background
		start := time.Now()
		var ok bool
		var err error
		op := "acquire"
		if rng.IntN(2) == 0 {
			op = "tryacquire"
			wait := time.Duration(rng.IntN(1500)) * time.Millisecond
			if wait < time.Millisecond {
				wait = 0
			}
			ok, err = sem.TryAcquire(cctx, n, wait)
		} else {
			err = sem.Acquire(cctx, n)
			ok = err == nil
		}
		r.count(op)
		// A lost acquire is given back within the clean-up bound (5 s).
		time.AfterFunc(6*time.Second, untrack)
		r.event("a%d %s %d: ok=%v err=%v", a, op, n, ok, errText(err))
		if ok && err == nil {
			h := &pHold{actor: a, n: n, start: start, got: time.Now()}
			r.addHold(h)
			mine = append(mine, h)
		}
	case x < 14:
		h := mine[rng.IntN(len(mine))]
		untrack := r.track(h.n)
		r.beginRelease(h)
		cctx, cancel := callCtx(rng, time.Duration(100+rng.IntN(2000))*time.Millisecond)
		var err error
		op := "release"
		if rng.IntN(4) == 0 {
			op = "releaseifexists"
			_, err = sem.ReleaseIfExists(cctx, h.n)
		} else {
			err = sem.Release(cctx, h.n)
		}
		cancel()
		untrack()
		r.count(op)
		r.event("a%d %s %d: err=%v", a, op, h.n, errText(err))
		r.dropHold(h)
	case x < 15:
		cctx, cancel := callCtx(rng, time.Second)
		start := time.Now()
		v, err := sem.DrainPermits(cctx)
		cancel()
		r.count("drain")
		r.event("a%d drain: %d err=%v", a, v, errText(err))
		if err == nil && v > 0 {
			h := &pHold{actor: a, n: v, start: start, got: time.Now()}
			r.addHold(h)
			mine = append(mine, h)
		}
	case x < 16:
		r.add(a, rng, func(ctx context.Context) error { return sem.AddPermits(ctx, 1) })
	case x < 18:
		cctx, cancel := callCtx(rng, time.Second)
		s0 := time.Now()
		v, err := sem.AvailablePermits(cctx)
		s1 := time.Now()
		cancel()
		r.count("available")
		if err == nil {
			r.mu.Lock()
			held := 0
			for h := range r.holds {
				if h.countedAt(s0, s1) {
					held += h.n
				}
			}
			if !r.overlapsRestart(s0) && v+held > r.setHi+r.allowance {
				r.violate("a%d AvailablePermits %d with %d held: %d > %d set (+%d)", a, v, held, v+held, r.setHi, r.allowance)
			}
			r.mu.Unlock()
		}
	default:
		sleepCtx(ctx, time.Duration(300+rng.IntN(1500))*time.Millisecond)
	}
	return mine
}

// overlapsRestart reports whether a call that began at s0 may have met a
// restart; r.mu is held.
func (r *pRound) overlapsRestart(s0 time.Time) bool {
	return r.restarting || !r.restartAt.IsZero() && s0.Before(r.restartEnd)
}

// add adds one permit (at most 2 per round): the bound grows from the
// call's start, whatever its outcome.
func (r *pRound) add(a int, rng *rand.Rand, add func(context.Context) error) {
	r.mu.Lock()
	if r.setHi >= r.base+2 {
		r.mu.Unlock()
		return
	}
	r.setHi++
	r.addsOpen++
	r.mu.Unlock()
	cctx, cancel := callCtx(rng, time.Second)
	err := add(cctx)
	cancel()
	if err == nil {
		r.mu.Lock()
		r.addsOpen--
		r.mu.Unlock()
	}
	r.count("add")
	r.event("a%d add 1: err=%v", a, errText(err))
}

// pickLease draws a permit's lease: mostly short (they run out under the
// waiters), some longer, some never.
func pickLease(rng *rand.Rand) time.Duration {
	switch x := rng.IntN(10); {
	case x < 6:
		return time.Duration(1000+rng.IntN(1000)) * time.Millisecond
	case x < 9:
		return time.Duration(2500+rng.IntN(3500)) * time.Millisecond
	}
	return 0
}

func (r *pRound) permitsStep(ctx context.Context, a int, rng *rand.Rand, sem *rlock.PermitExpirableSemaphore, mine []*pHold) []*pHold {
	switch x := rng.IntN(26); {
	case x >= 24:
		r.permitsSpin(ctx, a, rng, sem, &mine)
	case x < 8 || len(mine) == 0 && x < 17:
		r.permitsAcquire(a, rng, sem, &mine)
	case x < 13:
		h := mine[rng.IntN(len(mine))]
		r.permitsRelease(a, rng, sem, h)
	case x < 15:
		h := mine[rng.IntN(len(mine))]
		if h.kept != nil || h.stale || len(h.ids) > 1 { // one lease per hold: update only a single permit's
			break
		}
		r.permitsUpdate(a, rng, sem, h)
	case x < 16:
		h := mine[rng.IntN(len(mine))]
		if h.kept != nil || h.stale || len(h.ids) > 1 {
			break
		}
		cctx, cancel := callCtx(rng, time.Second)
		c0 := time.Now()
		d, err := sem.LeaseTime(cctx, h.ids[0])
		c1 := time.Now()
		cancel()
		r.count("leasetime")
		r.event("a%d leasetime %s: %v err=%v", a, h.ids[0][:8], d, errText(err))
		if errors.Is(err, rlock.ErrNotHeld) {
			r.mu.Lock()
			if !r.overlapsRestart(c0) && h.liveAt(c0, c1, 5*time.Millisecond) {
				never, expiry := h.leaseAt(c0)
				r.violate("a%d LeaseTime of live permit %s (lease lasts %s): not held", a, h.ids[0][:8], leaseLeft(never, expiry, c1))
			}
			r.mu.Unlock()
		}
	case x < 17:
		// Forget a permit with a fixed lease: it runs out in Redis.
		h := mine[rng.IntN(len(mine))]
		if !h.finite() {
			break
		}
		r.beginRelease(h)
		r.event("a%d forgets %s (its lease runs out)", a, h.ids[0][:8])
		r.dropHold(h)
	case x < 18:
		r.add(a, rng, func(ctx context.Context) error { return sem.AddPermits(ctx, 1) })
	case x < 19:
		r.mu.Lock()
		n := r.setHi
		// Adds still open may land after the set: each adds to n.
		r.setHi = n + r.addsOpen
		r.mu.Unlock()
		cctx, cancel := callCtx(rng, time.Second)
		var err error
		op := "setpermits"
		if rng.IntN(2) == 0 {
			op = "trysetpermits"
			_, err = sem.TrySetPermits(cctx, n)
		} else {
			err = sem.SetPermits(cctx, n)
		}
		cancel()
		r.count(op)
		r.event("a%d %s %d: err=%v", a, op, n, errText(err))
	case x < 21:
		cctx, cancel := callCtx(rng, time.Second)
		s0 := time.Now()
		var v int
		var err error
		op := "available"
		if rng.IntN(3) == 0 {
			op = "permits"
			v, err = sem.Permits(cctx)
		} else {
			v, err = sem.AvailablePermits(cctx)
		}
		s1 := time.Now()
		cancel()
		r.count(op)
		if err != nil {
			break
		}
		r.mu.Lock()
		if !r.overlapsRestart(s0) {
			live := 0
			for h := range r.holds {
				if h.countedAt(s0, s1) && h.kept == nil && h.liveAt(s0, s1, 5*time.Millisecond) {
					live += len(h.ids)
				}
			}
			switch {
			case op == "permits" && v > r.setHi:
				r.violate("a%d Permits %d > %d set", a, v, r.setHi)
			case op == "available" && v+live > r.setHi:
				r.violate("a%d AvailablePermits %d with %d live permits held: %d > %d set", a, v, live, v+live, r.setHi)
			}
		}
		r.mu.Unlock()
	default:
		sleepCtx(ctx, time.Duration(300+rng.IntN(1500))*time.Millisecond)
	}
	return mine
}

func (r *pRound) permitsAcquire(a int, rng *rand.Rand, sem *rlock.PermitExpirableSemaphore, mine *[]*pHold) {
	lease := pickLease(rng)
	n := 1
	if r.base > 1 && rng.IntN(5) == 0 {
		n = 2
	}
	cctx, cancel := callCtx(rng, time.Duration(200+rng.IntN(3000))*time.Millisecond)
	defer cancel()
	wait := time.Duration(rng.IntN(1500)) * time.Millisecond
	if wait < time.Millisecond {
		wait = 0
	}
	start := time.Now()
	h := &pHold{actor: a, start: start, never: lease <= 0, expiry: start.Add(lease).Round(0)}
	var ids []string
	var ok bool
	var err error
	op := "acquire"
	switch k := rng.IntN(10); {
	case k < 2 && n == 1:
		op = "acquirekept"
		var kp *rlock.KeptPermit
		if rng.IntN(2) == 0 {
			op = "tryacquirekept"
			kp, ok, err = sem.TryAcquireKept(cctx, wait)
		} else {
			kp, err = sem.AcquireKept(cctx)
			ok = err == nil
		}
		if ok && err == nil {
			h.kept, h.never = kp, false
			ids = []string{kp.ID()}
			h.lost, h.stop = kp.LostContext(context.Background())
		}
	case k < 5 && n == 1:
		op = "acquire"
		var id string
		id, err = sem.Acquire(cctx, lease)
		ok = err == nil
		ids = []string{id}
	case k < 8 && n == 1:
		op = "tryacquire"
		var id string
		id, ok, err = sem.TryAcquire(cctx, wait, lease)
		ids = []string{id}
	case n == 2 && k < 5:
		op = "acquiren"
		ids, err = sem.AcquireN(cctx, n, lease)
		ok = err == nil
	default:
		op = "tryacquiren"
		ids, ok, err = sem.TryAcquireN(cctx, n, wait, lease)
	}
	r.count(op)
	r.event("a%d %s n=%d lease=%v wait=%v: ok=%v err=%v ids=%s", a, op, n, lease, wait, ok, errText(err), shortIDs(ids))
	if !ok || err != nil {
		if ok && err != nil {
			r.mu.Lock()
			r.violate("a%d %s returned ok with error %v", a, op, err)
			r.mu.Unlock()
		}
		return
	}
	h.ids, h.got = ids, time.Now()
	r.addHold(h)
	*mine = append(*mine, h)
	if h.kept != nil {
		r.checkKeptLive(a, h)
	}
}

// checkKeptLive checks, 150 ms after a kept permit was handed out, that its
// LostContext is live while Redis gives it most of a watchdog lease (2 s):
// a LostContext that ends while Redis has the permit for 1.5 s more was
// dated from long before the permit was taken.
func (r *pRound) checkKeptLive(a int, h *pHold) {
	time.Sleep(150 * time.Millisecond)
	if h.lost.Err() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	raw, _ := hex.DecodeString(h.ids[0])
	var score *redis.FloatCmd
	var tm *redis.TimeCmd
	if _, err := r.raw.TxPipelined(ctx, func(p redis.Pipeliner) error {
		score = p.ZScore(ctx, "{"+r.name+"}:timeout", string(raw))
		tm = p.Time(ctx)
		return nil
	}); err != nil {
		return
	}
	left := time.Duration(score.Val()-float64(tm.Val().UnixMilli())) * time.Millisecond
	r.mu.Lock()
	defer r.mu.Unlock()
	if left > 1500*time.Millisecond && !h.stale && h.release.IsZero() {
		r.violate("a%d kept permit %s: its LostContext ended %v after AcquireKept returned (%v), while Redis keeps it %v more",
			a, h.ids[0][:8], time.Since(h.got).Round(time.Millisecond), context.Cause(h.lost), left)
	}
}

// permitsSpin makes single attempts back to back (about one per ms) for
// 0.2-0.8 s, until one takes a permit: attempts at every millisecond
// around the expiries of the permits held meanwhile, where a refusal's
// reply (the ms until the nearest expiry) is smallest.
func (r *pRound) permitsSpin(ctx context.Context, a int, rng *rand.Rand, sem *rlock.PermitExpirableSemaphore, mine *[]*pHold) {
	lease := pickLease(rng)
	end := time.Now().Add(time.Duration(200+rng.IntN(600)) * time.Millisecond)
	tries := 0
	for ctx.Err() == nil && time.Now().Before(end) {
		tries++
		start := time.Now()
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		id, ok, err := sem.TryAcquire(cctx, 0, lease)
		cancel()
		if err != nil {
			break
		}
		if ok {
			h := &pHold{actor: a, start: start, never: lease <= 0, expiry: start.Add(lease).Round(0), ids: []string{id}, got: time.Now()}
			r.addHold(h)
			*mine = append(*mine, h)
			break
		}
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
	}
	r.count("spin")
	r.mu.Lock()
	r.calls += tries - 1
	r.mu.Unlock()
	r.event("a%d spin lease=%v: %d tries, holds %d", a, lease, tries, len(*mine))
}

func (r *pRound) permitsRelease(a int, rng *rand.Rand, sem *rlock.PermitExpirableSemaphore, h *pHold) {
	c0 := r.beginRelease(h)
	cctx, cancel := callCtx(rng, time.Duration(100+rng.IntN(2000))*time.Millisecond)
	defer cancel()
	var err error
	gone := false
	op := "release"
	switch {
	case h.kept != nil:
		op = "keptrelease"
		err = h.kept.Release(cctx)
	case len(h.ids) > 1 && rng.IntN(2) == 0:
		op = "releasen"
		err = sem.ReleaseN(cctx, h.ids)
	case len(h.ids) > 1:
		op = "tryreleasen"
		var n int
		n, err = sem.TryReleaseN(cctx, h.ids)
		gone = err == nil && n != len(h.ids)
	case rng.IntN(2) == 0:
		op = "tryrelease"
		var ok bool
		ok, err = sem.TryRelease(cctx, h.ids[0])
		gone = err == nil && !ok
	default:
		err = sem.Release(cctx, h.ids[0])
	}
	c1 := time.Now()
	gone = gone || errors.Is(err, rlock.ErrNotHeld)
	r.count(op)
	r.event("a%d %s %s: err=%v gone=%v", a, op, shortIDs(h.ids), errText(err), gone)
	r.mu.Lock()
	if never, expiry := h.leaseAt(c0); gone && h.kept == nil && !h.stale && !r.overlapsRestart(c0) && (never || expiry.After(c1.Add(5*time.Millisecond))) {
		r.violate("a%d %s of live permit %s (lease lasts %s): not held", a, op, shortIDs(h.ids), leaseLeft(never, expiry, c1))
	}
	r.mu.Unlock()
	r.dropHold(h)
}

func (r *pRound) permitsUpdate(a int, rng *rand.Rand, sem *rlock.PermitExpirableSemaphore, h *pHold) {
	lease := pickLease(rng)
	start := time.Now()
	next := start.Add(lease).Round(0)
	r.mu.Lock()
	wasNever, was := h.never, h.expiry
	// While the update runs, the lease ends no earlier than the sooner of
	// the two.
	if lease > 0 && (h.never || next.Before(h.expiry)) {
		h.never, h.expiry = false, next
	}
	r.mu.Unlock()
	cctx, cancel := callCtx(rng, time.Second)
	ok, err := sem.UpdateLeaseTime(cctx, h.ids[0], lease)
	c1 := time.Now()
	cancel()
	r.count("update")
	r.event("a%d update %s lease=%v: ok=%v err=%v", a, h.ids[0][:8], lease, ok, errText(err))
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil && ok:
		// A read begun before c1 may have seen any lease the permit had
		// before: judge it by the shortest.
		if h.raised.IsZero() || !h.never && (h.prevNever || h.expiry.Before(h.prevExpiry)) {
			h.prevNever, h.prevExpiry = h.never, h.expiry
		}
		h.raised = c1
		h.never, h.expiry = lease <= 0, next
	case err == nil && !ok:
		if !h.stale && !r.overlapsRestart(start) && (wasNever || was.After(c1.Add(5*time.Millisecond))) {
			r.violate("a%d UpdateLeaseTime of live permit %s: not held", a, h.ids[0][:8])
		}
	}
}

func shortIDs(ids []string) string {
	var s []string
	for _, id := range ids {
		if len(id) >= 8 {
			s = append(s, id[:8])
		}
	}
	return "[" + strings.Join(s, " ") + "]"
}

func errText(err error) string {
	if err == nil {
		return "nil"
	}
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// finish gives back what the actors hold, waits for the settles of lost
// calls, and counts the permits not back (leaked).
func (r *pRound) finish(ctx context.Context) {
	for _, p := range r.proxies {
		p.SetLatency(0)
		p.DropResponses(false)
		p.Partition(false)
	}
	_ = r.srv.Resume()
	r.mu.Lock()
	var give []*pHold
	for h := range r.holds {
		if !h.stale || r.kind != "Semaphore" {
			give = append(give, h)
		}
	}
	r.mu.Unlock()
	for _, h := range give {
		r.beginRelease(h)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		c := r.clients[h.actor%2]
		switch {
		case r.kind == "Semaphore":
			err = c.NewSemaphore(r.name).Release(cctx, h.n)
		case h.kept != nil:
			err = h.kept.Release(cctx)
		default:
			_, err = c.NewPermitExpirableSemaphore(r.name).TryReleaseN(cctx, h.ids)
		}
		cancel()
		r.event("a%d gives back %s%v at the end: err=%v", h.actor, shortIDs(h.ids), h.n, errText(err))
		r.dropHold(h)
	}
	// Lost calls are settled within the clean-up bound (5 s); permits whose
	// lease runs out come back by themselves.
	admin, err := rlock.NewClient(r.raw, rlock.WithClientRegistry(false))
	if err != nil {
		r.event("finish: %v", err)
		return
	}
	defer admin.Close()
	deadline := time.Now().Add(7 * time.Second)
	for {
		total, err := r.total(ctx, admin)
		r.mu.Lock()
		want := r.setHi
		r.mu.Unlock()
		if err == nil && total >= want || time.Now().After(deadline) {
			if err == nil && total < want {
				r.leaked = want - total
				r.event("%d permits not back at the end (total %d of %d)", want-total, total, want)
			}
			return
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// total returns the permits available and taken, after sweeping expired
// ones back.
func (r *pRound) total(ctx context.Context, c *rlock.Client) (int, error) {
	if r.kind == "Semaphore" {
		return c.NewSemaphore(r.name).AvailablePermits(ctx)
	}
	return c.NewPermitExpirableSemaphore(r.name).Permits(ctx)
}
