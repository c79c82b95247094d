package main

import (
	"math/rand/v2"
	"time"
)

// generator makes a sequence step by step from its seed, looking at the
// model to pick steps that exercise it: re-entries of current holders,
// the revoked holder's own calls, sleeps that end near a fixed hold's
// expiry, a stopped holder's takeover, looks after a lost reply.
type generator struct {
	rng    *rand.Rand
	ops    opSet
	steps  int
	q      Sequence
	family string
	last   string // the op of the last step drawn (elections)
}

// familyNames are the families of sequences: the lock kinds, the lock
// kinds and kept permits with stalls and lost replies (their Clients on a
// short ReadTimeout), kept permits, and leader elections.
var familyNames = []string{"locks", "stalls", "kept", "election"}

// newGenerator makes the generator of the sequence of seed: its family is
// the seed's turn among families (all when empty), so that consecutive
// seeds go through every family.
func newGenerator(seed int64, ops opSet, families []string) *generator {
	if len(families) == 0 {
		families = familyNames
	}
	g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), ops: ops}
	g.family = families[uint64(seed)%uint64(len(families))]
	return g
}

// header draws the sequence's kind, watchdog timeouts, Clients and length.
func (g *generator) header() Sequence {
	if g.family == "election" {
		return g.electionHeader()
	}
	q := Sequence{Kind: kinds[g.rng.IntN(len(kinds))], Watchdog: 2 * time.Second}
	if g.rng.IntN(2) == 0 {
		// A watchdog interval (2 s) longer than the short fixed leases.
		q.Watchdog = 6 * time.Second
	}
	switch g.family {
	case "kept":
		q.Kind = keptKind
	case "stalls":
		if g.rng.IntN(3) == 0 {
			q.Kind = keptKind
		}
		q.ReadTimeout = lostReadTimeout
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
	if g.rng.IntN(3) == 0 {
		// Mixed watchdog timeouts: each Client its own.
		for range n {
			q.WDs = append(q.WDs, []time.Duration{2 * time.Second, 6 * time.Second}[g.rng.IntN(2)])
		}
		q.Watchdog = q.WDs[0]
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

type weight struct {
	op string
	w  int
}

var weights = []weight{
	{"trylock", 17}, {"lock", 10}, {"locklease", 10}, {"unlock", 18}, {"extend", 7}, {"holdcount", 6}, {"isheld", 3},
	{"force", 4}, {"flushall", 2}, {"restart", 1}, {"pause", 3}, {"stop", 3}, {"sleep", 20},
}

// stallWeights are the weights of the stalls family: lost replies, and
// the looks that must not report their holds.
var stallWeights = append([]weight{{"lost", 14}, {"stall", 2}, {"holdcount", 6}, {"isheld", 6}}, weights...)

func pickOp(rng *rand.Rand, ws []weight) string {
	total := 0
	for _, w := range ws {
		total += w.w
	}
	x := rng.IntN(total)
	for _, w := range ws {
		if x < w.w {
			return w.op
		}
		x -= w.w
	}
	return ws[0].op
}

func (g *generator) draw(r *seqRun) Step {
	if c := r.stoppedClient(); c >= 0 && g.contNow(r, c) {
		return Step{Op: "cont", C: c}
	}
	ws := weights
	if g.family == "stalls" {
		ws = stallWeights
	}
	s := Step{Op: pickOp(g.rng, ws)}
	switch s.Op {
	case "sleep":
		s.D = g.sleep(r)
	case "pause", "stop":
		s.C = g.procClient(r)
		s.D = g.dur(300*time.Millisecond, 3*time.Second, 100*time.Millisecond)
		if s.Op == "stop" {
			s.D = 0
		}
	case "force":
		s.C = g.rng.IntN(len(g.q.Procs))
	case "stall":
		s.D = g.dur(time.Second, 3*time.Second, 100*time.Millisecond)
	case "flushall", "restart":
	case "lost":
		s.C, s.O = g.idleOwner(r)
		s.D = g.ownerLease(r, s)
	default:
		s.C, s.O = g.owner(r, s.Op)
		s.D = g.ownerLease(r, s)
	}
	return s
}

// idleOwner draws an owner with no hold, in Redis or counted.
func (g *generator) idleOwner(r *seqRun) (int, int) {
	var idle []*ownerState
	for _, o := range r.owners {
		if o.n == 0 && o.red == 0 && !o.live() {
			idle = append(idle, o)
		}
	}
	if len(idle) == 0 {
		return 0, 0
	}
	o := idle[g.rng.IntN(len(idle))]
	return o.c, o.o
}

// contNow decides whether stopped Client c runs again: mostly once its
// holds ran out in Redis and another owner took the lock, or once it was
// stopped past its watchdog timeout and a second; now and then sooner.
func (g *generator) contNow(r *seqRun, c int) bool {
	x := g.rng.IntN(100)
	expired, other := true, false
	for _, o := range r.owners {
		if o.c == c && !o.dead.expiry.IsZero() && time.Now().Before(o.dead.expiry) {
			expired = false
		}
		if o.c != c && o.red > 0 {
			other = true
		}
	}
	switch {
	case expired && other:
		return x < 70
	case time.Since(r.stopped[c]) > r.q.wd(c)+time.Second:
		return x < 50
	}
	return x < 8
}

// procClient draws a Client in a process of its own, mostly one whose
// owner holds the lock.
func (g *generator) procClient(r *seqRun) int {
	var procs, holding []int
	for c, p := range g.q.Procs {
		if !p {
			continue
		}
		procs = append(procs, c)
		for o := range ownersPerClient {
			if r.owners[r.idx(c, o)].holding() {
				holding = append(holding, c)
			}
		}
	}
	if len(holding) > 0 && g.rng.IntN(100) < 75 {
		return holding[g.rng.IntN(len(holding))]
	}
	return procs[g.rng.IntN(len(procs))]
}

// ownerLease draws the lease of an owner's call.
func (g *generator) ownerLease(r *seqRun, s Step) time.Duration {
	if r.q.Kind == keptKind {
		return 0 // a kept permit's lease is the watchdog's
	}
	me := r.owners[r.idx(s.C, s.O)]
	short := func() time.Duration { return g.dur(time.Second, 2*time.Second, 50*time.Millisecond) }
	switch s.Op {
	case "trylock":
		if me.holding() && g.rng.IntN(2) == 0 {
			// Mixed leases: a re-entry of the other kind than the
			// holding period's.
			if me.wd {
				return short()
			}
			return 0
		}
		return g.lease()
	case "locklease":
		if me.holding() && me.wd && g.rng.IntN(2) == 0 {
			return short()
		}
		d := g.lease()
		for d <= 0 {
			d = g.lease()
		}
		return d
	case "extend":
		if g.rng.IntN(2) == 0 {
			return g.dur(10*time.Second, 20*time.Second, time.Second)
		}
		return short()
	case "lost":
		// Mostly a long fixed lease: a hold left behind lasts past the
		// clean-up bound.
		if g.rng.IntN(100) < 30 {
			return 0
		}
		return g.dur(10*time.Second, 20*time.Second, time.Second)
	}
	return 0
}

// ownerGroups sorts the owners for the generator: revoked holders,
// holders, remnants (a hold in Redis the Client no longer counts), told
// remnants (their loss signalled), owners of a pending lost call.
type ownerGroups struct{ revoked, holders, remnants, told, lost []int }

func (r *seqRun) groups() ownerGroups {
	var g ownerGroups
	for i, o := range r.owners {
		if o.lost.pending() {
			g.lost = append(g.lost, i)
		}
		switch {
		case o.revoked && o.holding():
			g.revoked = append(g.revoked, i)
		case o.holding():
			g.holders = append(g.holders, i)
		case o.red > 0:
			g.remnants = append(g.remnants, i)
			if o.lc.State == "ended" {
				g.told = append(g.told, i)
			}
		}
	}
	return g
}

// owner draws the owner of a call: often a revoked holder (its own next
// call), or the current holder (re-entries, releases), else anyone.
func (g *generator) owner(r *seqRun, op string) (int, int) {
	gr := r.groups()
	pick := func(from []int) (int, int) {
		i := from[g.rng.IntN(len(from))]
		return r.owners[i].c, r.owners[i].o
	}
	toHolder := holderShare(op)
	switch x := g.rng.IntN(100); {
	case len(gr.lost) > 0 && (op == "holdcount" || op == "isheld" || acquireOp(op)) && x < 70:
		// Told its acquisition failed (its reply was lost): its looks
		// must not say it holds the lock, a new acquisition must be fresh.
		return pick(gr.lost)
	case len(gr.told) > 0 && acquireOp(op) && x < 50:
		// Told its hold is lost while Redis still has it (between the
		// local deadline and the expiry): a new acquisition must be a
		// fresh hold.
		return pick(gr.told)
	case len(gr.revoked) > 0 && x < 60:
		return pick(gr.revoked)
	case len(gr.holders) > 0 && x < toHolder:
		return pick(gr.holders)
	case len(gr.remnants) > 0 && x < toHolder+10:
		return pick(gr.remnants)
	}
	i := g.rng.IntN(len(r.owners))
	return r.owners[i].c, r.owners[i].o
}

// holderShare is the share (%) of an op's calls made by holders: releases
// and extensions go mostly to holders, acquisitions less so (re-entries,
// but also contenders).
func holderShare(op string) int {
	if op == "unlock" || op == "extend" || op == "holdcount" {
		return 85
	}
	return 45
}

// sleep draws a sleep: often one that ends near a fixed hold's expiry
// (around its local deadline, or between that deadline and the key's
// expiry), just past the key's expiry as last read, or just past a lost
// call's clean-up bound; else 0.1-3 s.
func (g *generator) sleep(r *seqRun) time.Duration {
	if g.rng.IntN(100) < 60 {
		targets := g.deadlineTargets(r)
		// Just past the key's expiry as last read (PTTL): a key that a
		// correct library keeps (a watchdog lease is renewed before it runs
		// out) or lets go (a fixed one) shows which it did.
		if r.lastPTTL > 0 && (len(targets) == 0 || g.rng.IntN(2) == 0) {
			if d := r.lastPTTL - time.Since(r.lastObs); d > 0 && d < 3*time.Second {
				targets = []time.Duration{d + time.Duration(10+g.rng.IntN(300))*time.Millisecond}
			}
		}
		targets = append(targets, g.pastTargets(r)...)
		if len(targets) > 0 {
			d := targets[g.rng.IntN(len(targets))]
			return min(max(d, 100*time.Millisecond), 3*time.Second).Round(time.Millisecond)
		}
	}
	return g.dur(100*time.Millisecond, 3*time.Second, 50*time.Millisecond)
}

// pastTargets are sleeps that end just past the expiry of a stopped
// holder's hold, or just past the clean-up bound of a lost call whose hold
// is in Redis.
func (g *generator) pastTargets(r *seqRun) []time.Duration {
	var targets []time.Duration
	for _, o := range r.owners {
		if d := time.Until(o.dead.expiry); d > 0 && d < 3*time.Second {
			targets = append(targets, d+time.Duration(20+g.rng.IntN(300))*time.Millisecond)
		}
		if d := time.Until(o.lost.deadline()); o.lost.pending() && o.red > 0 && d > 0 && d < 3*time.Second {
			targets = append(targets, d+time.Duration(50+g.rng.IntN(200))*time.Millisecond)
		}
	}
	return targets
}

// deadlineTargets are sleeps that end around a fixed hold's local
// deadline, or between it and the key's expiry (told of the loss, yet
// still in Redis).
func (g *generator) deadlineTargets(r *seqRun) []time.Duration {
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
			targets = append(targets, dl+(exp-dl)/4+time.Duration(g.rng.Int64N(int64((exp-dl)/2)+1)))
		}
	}
	return targets
}
