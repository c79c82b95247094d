package main

import (
	"fmt"
	"strings"
)

// The targets of issue 41 ("Ahead of every peer, measured honestly"),
// each from the same run's bursts: a ratio is taken within each burst (the
// two libraries measured one right after the other), and a target's figure
// is the median of those ratios, given with the min–max of the bursts and
// their number.

// Issue 41's bounds.
const (
	targetB          = 1.2  // (b) goredisson ÷ rueidislock tuned, at least
	targetBPeers     = 2.0  // (b) goredisson ÷ every other Go peer, at least
	targetServerCPU  = 0.9  // (b) Redis CPU per pair ÷ Redisson's scripts', at most
	targetAP50       = 1.1  // (a) p50 ÷ the naive lock's, at most
	targetACPU       = 1.0  // (a) client CPU per pair ÷ redislock's, at most
	targetWaiterSize = 5000 // (w) bytes per waiter, at most
)

// otherGoPeers are the Go lock libraries (b) must be 2× of: every peer but
// rueidislock tuned (which has its own bound) and the naive lock (not a
// library).
var otherGoPeers = []string{"redsync", "redislock", "rueidislock"}

// targetList collects the targets' lines.
type targetList struct {
	b            strings.Builder
	pass, missed int
}

// line writes one target: NOT MEASURED without figures, else PASS or
// MISSED.
func (t *targetList) line(measured, ok bool, format string, args ...any) {
	mark := "PASS"
	switch {
	case !measured:
		mark = "NOT MEASURED"
	case ok:
		t.pass++
	default:
		mark = "MISSED"
		t.missed++
	}
	fmt.Fprintf(&t.b, "- %s: %s\n", mark, fmt.Sprintf(format, args...))
}

// burstRatios returns lib's metric over ref's in part, one per burst.
func (r *report) burstRatios(part, lib, ref, metric string) []float64 {
	return pooled(r.store.ratios(part, lib, ref, metric))
}

// atLeast and atMost check the median of vs against bound (false for none).
func atLeast(vs []float64, bound float64) bool { m, _, _ := med(vs); return m >= bound }
func atMost(vs []float64, bound float64) bool  { m, _, _ := med(vs); return m <= bound }

// targets checks goredisson RLock against issue 41's targets, one line
// each. A target whose figures this run did not measure (a part or a
// library left out) says NOT MEASURED.
func (r *report) targets() string {
	t := &targetList{}
	t.b.WriteString("\n## Targets for goredisson RLock (issue 41)\n\n")
	if _, err := findSelected(rlockName); err != nil {
		t.b.WriteString("goredisson RLock was not measured (--libs): no target checked.\n")
		return t.b.String()
	}
	t.b.WriteString("Each figure is the median of the per-burst ratios (min–max of the bursts, n bursts).\n\n")
	r.targetsB(t)
	r.targetsA(t)
	r.targetCluster(t)
	r.targetsWaiters(t)
	r.targetsC(t)
	fmt.Fprintf(&t.b, "\n%d PASS, %d MISSED of the targets above.\n", t.pass, t.missed)
	return t.b.String()
}

func (r *report) targetsB(t *targetList) {
	vs := r.burstRatios("b", rlockName, rueidisTunedName, "pairs/s")
	t.line(len(vs) > 0, atLeast(vs, targetB), "(b) pairs/s ÷ rueidislock tuned's: %s ≥ %s", spreadOf(vs, fTimes), fTimes(targetB))
	for _, peer := range otherGoPeers {
		vs := r.burstRatios("b", rlockName, peer, "pairs/s")
		t.line(len(vs) > 0, atLeast(vs, targetBPeers), "(b) pairs/s ÷ %s's: %s ≥ %s", peer, spreadOf(vs, fTimes), fTimes(targetBPeers))
	}
	vs = r.burstRatios("b", rlockName, redissonScriptsName, mSrvCPU)
	peer := r.burstRatios("b", rueidisTunedName, redissonScriptsName, mSrvCPU)
	t.line(len(vs) > 0, atMost(vs, targetServerCPU), "(b) Redis CPU per pair ÷ Redisson's own scripts': %s ≤ %s (goredisson %s µs, Redisson's scripts %s µs; rueidislock tuned ÷ Redisson's scripts: %s)",
		spreadOf(vs, fTimes), fTimes(targetServerCPU), fNum(r.median("b", rlockName, mSrvCPU)), fNum(r.median("b", redissonScriptsName, mSrvCPU)), spreadOf(peer, fTimes))
}

func (r *report) targetsA(t *targetList) {
	vs := r.burstRatios("a", rlockName, naiveName, "p50")
	t.line(len(vs) > 0, atMost(vs, targetAP50), "(a) p50 ÷ the naive lock's: %s ≤ %s (goredisson %s, naive %s)",
		spreadOf(vs, fTimes), fTimes(targetAP50), fDur(r.median("a", rlockName, "p50")), fDur(r.median("a", naiveName, "p50")))
	vs = r.burstRatios("a", rlockName, "redislock", "cpu")
	t.line(len(vs) > 0, atMost(vs, targetACPU), "(a) client CPU per pair ÷ redislock's: %s ≤ %s (goredisson %s µs, redislock %s µs)",
		spreadOf(vs, fTimes), fTimes(targetACPU), fNum(r.median("a", rlockName, "cpu")), fNum(r.median("a", "redislock", "cpu")))
}

func (r *report) targetCluster(t *targetList) {
	gap := clusterGap(&r.store, "cl")
	t.line(len(gap) > 0, atLeast(gap, -clusterGapTarget), "Cluster ÷ one node within %.2f of the naive lock's: goredisson's less the naive lock's %s (goredisson %s, naive %s)",
		clusterGapTarget, spreadOf(gap, fSigned), spreadOf(clusterRatios(&r.store, "cl", rlockName), fTimes), spreadOf(clusterRatios(&r.store, "cl", naiveName), fTimes))
}

func (r *report) targetsWaiters(t *targetList) {
	for _, wn := range []struct{ part, what string }{{"w:one", "on one name"}, {"w:many", "each on a name of its own"}} {
		vs := pooled(r.store.values(wn.part, rlockName, "B/waiter"))
		peer := pooled(r.store.values(wn.part, rueidisTunedName, "B/waiter"))
		t.line(len(vs) > 0, atMost(vs, targetWaiterSize), "%d waiters %s: %s per waiter ≤ %s (rueidislock tuned %s)",
			r.cfg.waiters, wn.what, spreadOf(vs, fKB), fKB(targetWaiterSize), spreadOf(peer, fKB))
	}
}

// targetsC checks (c)'s commands per acquisition and fairness against the
// baseline's (--baseline): no worse means at most the baseline's largest
// burst.
func (r *report) targetsC(t *targetList) {
	for _, cc := range contendConfigs {
		p := "c:" + cc.label
		for _, m := range []struct{ metric, what string }{{"cmds/acq", "commands per acquisition"}, {"fairness", "fairness max/min"}} {
			vs := pooled(r.store.values(p, rlockName, m.metric))
			if r.baseline == nil {
				t.line(false, false, "(c) %s: %s %s, no worse than the build before (needs --baseline)", cc.label, m.what, spreadOf(vs, fNum))
				continue
			}
			base := pooled(r.baseline.values(p, rlockName, m.metric))
			_, _, worst := med(base)
			t.line(len(vs) > 0 && len(base) > 0, atMost(vs, worst), "(c) %s: %s %s ≤ the baseline's largest burst %s (baseline %s)",
				cc.label, m.what, spreadOf(vs, fNum), fNum(worst), spreadOf(base, fNum))
		}
	}
}
