package main

import (
	"time"
)

// electTimeouts are the watchdog timeouts a candidate may run on, each
// drawn on its own; WithMaxLease is the longest of a sequence's.
var electTimeouts = []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 6 * time.Second}

// electionHeader draws an election: 2-3 candidates, each in a process of
// its own on a watchdog timeout of its own.
func (g *generator) electionHeader() Sequence {
	n := 2 + g.rng.IntN(2)
	q := Sequence{Kind: electionKind, Procs: make([]bool, n)}
	for c := range n {
		q.Procs[c] = true
		q.WDs = append(q.WDs, electTimeouts[g.rng.IntN(len(electTimeouts))])
	}
	q.Watchdog = q.WDs[0]
	g.steps = 15 + g.rng.IntN(26)
	g.q = q
	return q
}

var electWeights = []weight{
	{"campaign", 30}, {"cancel", 2}, {"resign", 8}, {"leader", 8}, {"force", 4}, {"renewal", 5},
	{"flushall", 2}, {"restart", 1}, {"stop", 4}, {"kill", 2}, {"close", 2}, {"sleep", 22},
}

// nextElect draws an eligible election step.
func (g *generator) nextElect(r *electRun) Step {
	for range 200 {
		s := g.drawElect(r)
		if g.ops[s.Op] && r.eligible(s) {
			g.last = s.Op
			return s
		}
	}
	return Step{Op: "sleep", D: 100 * time.Millisecond}
}

func (g *generator) drawElect(r *electRun) Step {
	if s, ok := g.electFollowUp(r); ok {
		return s
	}
	s := Step{Op: pickOp(g.rng, electWeights)}
	leader := r.leading()
	switch s.Op {
	case "sleep":
		s.D = g.electSleep(r)
	case "stop", "kill", "close", "resign":
		s.C = g.rng.IntN(len(r.cands))
		if leader != nil && g.rng.IntN(100) < 75 {
			s.C = leader.c
		}
	default:
		s.C = g.rng.IntN(len(r.cands))
	}
	return s
}

// electFollowUp draws the steps that follow from the state: a stopped
// candidate continued, a force unlock or a stop right after the leader's
// renewal, a waiting candidate that gives up, a leader stopped, a lost
// leadership resigned.
func (g *generator) electFollowUp(r *electRun) (Step, bool) {
	x := g.rng.IntN(100)
	leader, lost, pend := r.leading(), r.lostLeader(), r.pending()
	if c := r.stoppedCand(); c >= 0 && g.contCandidate(r, r.cands[c]) {
		return Step{Op: "cont", C: c}, true
	}
	if g.last == "renewal" && leader != nil && x < 80 {
		// Right after the leader's renewal: the longest it may believe it
		// leads.
		if x < 40 {
			return Step{Op: "force", C: g.rng.IntN(len(r.cands))}, true
		}
		return Step{Op: "stop", C: leader.c}, true
	}
	switch {
	case pend != nil && time.Since(pend.markedAt) > pend.wait/3 && x < 5:
		// A waiting candidate gives up while it waits out its predecessor.
		return Step{Op: "cancel", C: pend.c}, true
	case leader != nil && r.nStopped() == 0 && x < 10:
		return Step{Op: "stop", C: leader.c}, true
	case lost != nil && x < 40:
		// A candidate whose leadership was lost resigns before it
		// campaigns again.
		return Step{Op: "resign", C: lost.c}, true
	}
	return Step{}, false
}

// electSleep draws a sleep: often until just after a waiting candidate's
// wait ends, or past a stopped leader's lease, else 0.2-3 s.
func (g *generator) electSleep(r *electRun) time.Duration {
	var targets []time.Duration
	if cp := r.pending(); cp != nil {
		if d := time.Until(cp.markedAt.Add(cp.wait)); d > 0 {
			targets = append(targets, d+time.Duration(50+g.rng.IntN(400))*time.Millisecond)
		}
	}
	for _, cd := range r.cands {
		if cp := r.camps[cd.watched]; !cd.stopped.IsZero() && cp != nil {
			// Past its lease, and past a successor's wait of that lease.
			n := time.Duration(1 + g.rng.IntN(2))
			targets = append(targets, time.Until(cd.stopped.Add(n*cd.wd))+time.Duration(100+g.rng.IntN(500))*time.Millisecond)
		}
	}
	if len(targets) > 0 && g.rng.IntN(100) < 70 {
		d := targets[g.rng.IntN(len(targets))]
		return min(max(d, 100*time.Millisecond), 6*time.Second).Round(time.Millisecond)
	}
	return g.dur(200*time.Millisecond, 3*time.Second, 50*time.Millisecond)
}

// leading is a campaign that leads with a live context, as last seen.
func (r *electRun) leading() *campaign {
	for _, cp := range r.order {
		if cp.leads() && !cp.ended() && r.cands[cp.c].cur == cp.value {
			return cp
		}
	}
	return nil
}

// lostLeader is a campaign whose leadership ended but whose candidate
// has not resigned it yet.
func (r *electRun) lostLeader() *campaign {
	for _, cp := range r.order {
		if cp.leads() && cp.ended() && r.cands[cp.c].cur == cp.value {
			return cp
		}
	}
	return nil
}

// pending is a campaign that has marked the record and waits.
func (r *electRun) pending() *campaign {
	for _, cp := range r.order {
		if cp.marked && cp.info.Ret == 0 && r.cands[cp.c].cur == cp.value {
			return cp
		}
	}
	return nil
}

// contCandidate decides whether a stopped candidate runs again: once another
// campaign leads (a takeover while it was stopped) or it was stopped past
// twice its lease and a second (its lock ran out, a successor waited it
// out), and now and then sooner.
func (g *generator) contCandidate(r *electRun, cd *candidate) bool {
	leader := r.leading()
	switch {
	case leader != nil && leader.c != cd.c:
		return g.rng.IntN(100) < 70
	case time.Since(cd.stopped) > 2*cd.wd+time.Second:
		return g.rng.IntN(100) < 70
	}
	return g.rng.IntN(100) < 8
}

// stoppedCand is a stopped candidate (-1: none).
func (r *electRun) stoppedCand() int {
	for _, cd := range r.cands {
		if !cd.stopped.IsZero() {
			return cd.c
		}
	}
	return -1
}
