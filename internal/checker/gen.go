package main

import (
	"math/rand/v2"
	"time"
)

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
