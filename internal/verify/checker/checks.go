package main

import (
	"fmt"
	"strings"
	"time"
)

// checkAll checks what every step must leave: one owner at most in Redis,
// counts that agree, fields that leave Redis only as the model allows,
// and a key lease that covers what the holds need.
func (r *seqRun) checkAll(s Step, acting int, pre []ownerState, ob observation) {
	if len(ob.unknown) > 0 {
		r.fail("result", "the lock has holds of nobody in this sequence: %v", ob.unknown)
	}
	r.checkOneInRedis(ob)
	revocation := s.Op == "force" || s.Op == "flushall" || s.Op == "restart"
	for j := range r.owners {
		if j != acting && !revocation {
			r.checkUncalled(j, pre[j], ob)
		}
		r.checkCounted(j, ob)
	}
	// Another owner in Redis: every other holder must have been told.
	if len(ob.holders) == 1 {
		h := ob.holders[0]
		for j, q := range r.owners {
			if j != h && q.holding() {
				r.oblige(j, ob.qs.Add(grace), "two-inside", fmt.Sprintf("%s holds the lock in Redis while %s's LostContext is live (%s counted %d holds)", r.owners[h].name, q.name, q.name, q.n))
			}
		}
		if r.cfg.LeaseCheck && !pre[h].lost.pending() && !r.owners[h].lost.pending() {
			r.checkLease(r.owners[h], ob)
		}
	}
}

// checkOneInRedis: Redis holds one owner's hold at most.
func (r *seqRun) checkOneInRedis(ob observation) {
	if len(ob.holders) > 1 {
		var hs []string
		for _, i := range ob.holders {
			hs = append(hs, r.owners[i].name)
		}
		r.fail("two-inside", "Redis has holds of %s at once", strings.Join(hs, " and "))
	}
}

// checkUncalled checks the count of an owner that made no call: no field
// appears or changes without a call (but a lost call's), and none leaves
// before its lease.
func (r *seqRun) checkUncalled(j int, p ownerState, ob observation) {
	q, oc := r.owners[j], ob.counts[j]
	switch {
	case countLost(q, p, oc):
	case oc > 0 && p.red == 0:
		r.fail("count", "a hold of %s appeared in Redis without an acquisition", q.name)
	case oc > 0 && oc != p.red:
		r.fail("count", "%s's count in Redis went from %d to %d without a call of its own", q.name, p.red, oc)
	case oc == 0 && p.red > 0 && !q.keyWd && r.cfg.LeaseCheck && ob.qr.Before(q.lo.Add(-eps)):
		r.fail("lease", "%s's hold left Redis %v before the lease its holds asked for ran out", q.name, q.lo.Sub(ob.qr).Round(time.Millisecond))
	}
}

// checkCounted checks a hold the Client still counts: in Redis while its
// LostContext is live (unless revoked: then by the bound), with the count
// the Client has.
func (r *seqRun) checkCounted(j int, ob observation) {
	q, oc := r.owners[j], ob.counts[j]
	if q.holding() && !q.revoked && oc == 0 {
		r.oblige(j, ob.qr.Add(grace), "gone-unsignalled", fmt.Sprintf("%s's hold is gone from Redis while its LostContext is live (%s counted %d holds, %s)", q.name, q.name, q.n, q.leaseText()))
	}
	if q.holding() && oc > 0 && oc != q.n {
		r.fail("count", "Redis counts %d holds of %s, its Client counted %d", oc, q.name, q.n)
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
			r.fail("lease", "the key of %s's watchdog-managed hold expires %v before a watchdog lease (%v) from the last call that set it (pttl %v)", h.name, h.wdFloor.Sub(ehi).Round(time.Millisecond), h.wdT, ob.pttl)
		}
	}
}

// deferStopped keeps the obligations of owners whose process is stopped
// for its cont (pause.go): a stopped process can end nothing.
func (r *seqRun) deferStopped() {
	keep := r.obls[:0]
	for _, o := range r.obls {
		if !r.stopped[r.owners[o.o].c].IsZero() {
			r.deferObligation(o)
			continue
		}
		keep = append(keep, o)
	}
	r.obls = keep
}

// resolve waits until every obligation's LostContext has ended, or its
// time is up, and fails those that ended late or not at all.
func (r *seqRun) resolve(ob observation) {
	for i, l := range ob.lc {
		r.owners[i].lc = l
	}
	r.deferStopped()
	if len(r.obls) == 0 {
		return
	}
	last := r.obls[0].by
	for _, o := range r.obls {
		last = later(last, o.by)
	}
	// Poll until each obligation's LostContext has ended, or a look has
	// seen it live past its time (the proof of a violation; an end
	// noticed late, by a process starved of CPU, is none).
	for giveUp := last.Add(5 * time.Second); ; {
		lcs, err := r.lcs()
		if err != nil {
			r.fail("agent", "%v", err)
			return
		}
		for i, l := range lcs {
			r.owners[i].lc = l
		}
		if r.obligationsSettled() || time.Now().After(giveUp) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	seen := map[int]bool{}
	for _, o := range r.obls {
		l := r.owners[o.o].lc
		if seen[o.o] || !at(l.Live).After(o.by) {
			continue
		}
		seen[o.o] = true
		if l.State != "ended" {
			r.fail(o.kind, "%s; still live (a look at Err) %v after the moment it should have ended by", o.why, at(l.Live).Sub(o.by.Add(-grace)).Round(time.Millisecond))
		} else {
			r.fail(o.kind, "%s; a look at Err saw it live %v after the moment it should have ended by", o.why, at(l.Live).Sub(o.by.Add(-grace)).Round(time.Millisecond))
		}
	}
}

// obligationsSettled reports whether each obligation's LostContext, as last
// polled, has ended or was seen live past its time.
func (r *seqRun) obligationsSettled() bool {
	for _, o := range r.obls {
		if l := r.owners[o.o].lc; l.State != "ended" && !at(l.Live).After(o.by) {
			return false
		}
	}
	return true
}

// checkRevocations fails revoked holders that were not told within their
// bound.
func (r *seqRun) checkRevocations() {
	now := time.Now()
	for _, q := range r.owners {
		if !q.revoked || q.n == 0 || !r.stopped[q.c].IsZero() {
			continue // (a stopped process's bounds move at its cont)
		}
		// A look that saw the LostContext live past the bound is the
		// proof (an end noticed late by a starved process is none).
		live := at(q.lc.Live)
		switch {
		case !live.After(q.bound):
		case q.lc.State == "ended":
			r.fail("revocation-unsignalled", "%s's hold was revoked %v before a look last saw its LostContext live, past its bound of %v", q.name, live.Sub(q.revokedAt).Round(time.Millisecond), q.bound.Sub(q.revokedAt).Round(time.Millisecond))
			q.revoked = false // once
		default:
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
