package main

import (
	"time"

	"github.com/goredisson/goredisson/watchdog"
)

// What an election must never do, checked after every step:
//
//   - two leaders: a term's leadership context looked live (a look at its
//     Err, at a state report or by the looker of a stopped process) after
//     a later term's Campaign returned, or its watcher saw it end more
//     than the grace after, its process running;
//   - a short wait: a candidate's pending mark names the wait the record
//     it replaced calls for (the lease of a leader record, the wait of a
//     pending one, nothing after a resignation or a told end, WithMaxLease
//     when there was no record), and Campaign returned no sooner than
//     that wait plus watchdog.Allowance after the candidate took the lock;
//   - terms: within an epoch each leader record's term is one more than
//     the last, and the other records carry the last;
//   - ObserveTerms: every term each candidate is told of is a leader
//     record written, in order, never twice, with no gap but across a
//     restart of Redis or a stop of its process; at the end, every
//     candidate is told the last term;
//   - Leader: never the value of a term known over (a later term began,
//     its hold was seen gone, it resigned); never "no leader" while the
//     record named a leader that held the lock before and after the call;
//   - a revoked leader (force unlock, FLUSHALL, restart) is told within a
//     renewal interval and a second; a leadership context ends with
//     ErrLockLost unless its candidate resigned or closed its Client;
//     Campaign fails only when cancelled or closed.

// judgeStep judges a step's own result.
func (r *electRun) judgeStep(s Step, rep reply, pre, ob electObs, start, end time.Time) {
	switch s.Op {
	case "campaign":
		if rep.Err != "" {
			r.fail("result", "%s failed: %s", s, rep.Msg)
		}
	case "resign":
		r.judgeResign(s, rep, start, end)
	case "leader":
		r.judgeLeader(s, rep, pre, ob, start)
	case "force", "close":
		if rep.Err != "" {
			r.fail("result", "%s failed: %s", s, rep.Msg)
		}
		if s.Op == "force" {
			r.revoke(end)
		}
	case "flushall", "restart":
		r.revoke(end)
	case "cont":
		r.mergeLooks(s.C, rep)
	}
}

// judgeResign: nil only while the campaign led and its context had not
// ended with a loss before the call; ErrNotLeader otherwise.
func (r *electRun) judgeResign(s Step, rep reply, start, end time.Time) {
	cp := r.camps[rep.ID]
	switch rep.Err {
	case "":
		if cp == nil || !cp.leads() {
			r.fail("result", "%s returned nil, but the candidate did not lead", s)
			return
		}
		if cp.info.EndAt != 0 && at(cp.info.EndAt).Before(start.Add(-grace)) && cp.info.Cause == "lost" {
			r.fail("result", "%s returned nil, but %s's leadership was lost %v before the call", s, cp.value, start.Sub(at(cp.info.EndAt)).Round(time.Millisecond))
		}
	case "notleader":
	default:
		r.fail("result", "%s failed: %s", s, rep.Msg)
		return
	}
	if cp != nil && cp.leads() {
		cp.resigned = end
	}
}

// judgeLeader: Leader's value is a term still open; "no leader" only when
// the record did not name a holder of the lock both before and after.
func (r *electRun) judgeLeader(s Step, rep reply, pre, ob electObs, start time.Time) {
	switch rep.Err {
	case "":
		r.judgeLeaderValue(s, rep, start)
	case "noleader":
		if pre.hasRec && ob.hasRec && pre.rec == ob.rec && ob.rec.state == 'L' && pre.holds(ob.rec.holder) && ob.holds(ob.rec.holder) {
			r.fail("leader", "%s returned ErrNoLeader, but the record named %s as leader, holding the lock, before and after the call", s, ob.rec.value)
		}
	default:
		r.fail("result", "%s failed: %s", s, rep.Msg)
	}
}

func (r *electRun) judgeLeaderValue(s Step, rep reply, start time.Time) {
	cp := r.camps[rep.ID]
	if cp == nil {
		r.fail("leader", "%s returned %q, the value of no campaign", s, rep.ID)
		return
	}
	switch {
	case !cp.resigned.IsZero() && cp.resigned.Before(start):
		r.fail("leader", "%s returned %s, which resigned %v before the call", s, cp.value, start.Sub(cp.resigned).Round(time.Millisecond))
	case !cp.gone.IsZero() && cp.gone.Before(start):
		r.fail("leader", "%s returned %s, whose hold was seen gone from the lock %v before the call", s, cp.value, start.Sub(cp.gone).Round(time.Millisecond))
	case cp.led && (int64(rep.N) != cp.term || rep.Msg != cp.epoch):
		r.fail("leader", "%s returned %s with term %d of epoch %s; its leader record says term %d of %s", s, cp.value, rep.N, shortID(rep.Msg), cp.term, shortID(cp.epoch))
	}
	if w := r.laterTerm(cp, start); w != nil {
		r.fail("leader", "%s returned %s (term %d), but %s's term %d began %v before the call", s, cp.value, cp.term, w.value, w.term, start.Sub(at(w.info.Ret)).Round(time.Millisecond))
	}
}

// laterTerm is a term of cp's epoch after cp's that began before t.
func (r *electRun) laterTerm(cp *campaign, t time.Time) *campaign {
	if !cp.led {
		return nil
	}
	for _, w := range r.order {
		if w.leads() && w.led && w.epoch == cp.epoch && w.term > cp.term && at(w.info.Ret).Before(t) {
			return w
		}
	}
	return nil
}

// revoke marks every leading campaign whose context is live as revoked:
// it must be told within its candidate's renewal interval and a second.
func (r *electRun) revoke(end time.Time) {
	for _, cp := range r.order {
		if !cp.leads() || cp.ended() || !cp.revokedAt.IsZero() {
			continue
		}
		cp.revokedAt = end
		cp.bound = end.Add(r.cands[cp.c].wd/3 + revokeSlack)
		r.stats.Revoked++
	}
}

// mergeLooks takes what a continued candidate's looker saw of the
// leadership it watched.
func (r *electRun) mergeLooks(c int, rep reply) {
	cd := r.cands[c]
	cp := r.camps[cd.watched]
	if cp == nil || len(rep.Looks) == 0 || !rep.Looks[0].Watched {
		return
	}
	lk := rep.Looks[0]
	r.stats.Looks += lk.Live
	cp.lookLive = max(cp.lookLive, lk.LastLive)
	if lk.FirstEnd != 0 && (cp.lookEnd == 0 || lk.FirstEnd < cp.lookEnd) {
		cp.lookEnd = lk.FirstEnd
		if lk.Cause != "lost" && cp.resigned.IsZero() && cp.info.Closed == 0 {
			r.fail("lostcontext", "%s's leadership context, looked at after its process resumed, ended with cause %q, not ErrLockLost", cp.value, lk.Cause)
		}
	}
}

// checkAll runs the checks every step must pass.
func (r *electRun) checkAll(ob electObs) {
	r.processLog()
	for _, cp := range r.order {
		if cp.led && cp.gone.IsZero() && cp.holder != "" && !ob.holds(cp.holder) && cp.info.Ret != 0 && ob.qs.After(at(cp.info.Ret)) {
			cp.gone = ob.qs
		}
		r.checkWait(cp)
		r.checkCause(cp)
		r.checkRevoked(cp, ob)
	}
	r.checkOverlaps()
	for _, cd := range r.cands {
		r.checkObserved(cd)
	}
}

// checkWait: Campaign returned no sooner than its mark's wait (and the
// allowance) after the candidate took the lock.
func (r *electRun) checkWait(cp *campaign) {
	if cp.waitChecked || !cp.leads() || !cp.led || !cp.marked || cp.info.LockAt == 0 {
		return
	}
	cp.waitChecked = true
	waited := at(cp.info.Ret).Sub(at(cp.info.LockAt))
	need := cp.wait + watchdog.Allowance(cp.wait)
	if cp.wait > 0 {
		r.stats.Takeovers++
	}
	if waited < need-eps {
		r.fail("short-wait", "%s led %v after it took the lock, but its pending mark calls for a wait of %v (+ allowance: %v)", cp.value, waited.Round(time.Millisecond), cp.wait, need.Round(time.Millisecond))
	}
}

// checkCause: a campaign fails only when cancelled or closed; a
// leadership context ends with ErrLockLost unless resigned or closed.
func (r *electRun) checkCause(cp *campaign) {
	if cp.causeChecked || cp.info.Ret == 0 {
		return
	}
	if cp.info.Err != "" {
		cp.causeChecked = true
		if cp.info.Err != "canceled" && cp.info.Err != "closed" {
			r.fail("result", "%s's Campaign failed: %s", cp.value, cp.info.Msg)
		}
		return
	}
	if cp.info.EndAt == 0 {
		return
	}
	cp.causeChecked = true
	switch {
	case cp.info.Cause == "lost":
		r.stats.Losses++
	case cp.info.Cause == "canceled" && cp.info.Resign != 0:
	case cp.info.Cause == "closed" && cp.info.Closed != 0:
	default:
		r.fail("lostcontext", "%s's leadership context ended with cause %q (resigned: %v, Client closed: %v)", cp.value, cp.info.Cause, cp.info.Resign != 0, cp.info.Closed != 0)
	}
}

// checkRevoked: a revoked leader is told by its bound (moved by any stop
// of its process).
func (r *electRun) checkRevoked(cp *campaign, ob electObs) {
	if cp.revokedAt.IsZero() || cp.revokeChecked || !cp.killed.IsZero() {
		return
	}
	if r.cands[cp.c].stoppedDuring(cp.revokedAt, ob.qr) {
		return // its process could tell nothing meanwhile: the looks decide
	}
	// A look that saw the context live past the bound is the proof (an end
	// noticed late by a starved process is none).
	live := at(max(cp.info.LastLive, cp.lookLive))
	switch {
	case live.After(cp.bound):
		cp.revokeChecked = true
		r.fail("revocation-unsignalled", "%s's hold was revoked %v before a look last saw its leadership context live, past its bound of %v",
			cp.value, live.Sub(cp.revokedAt).Round(time.Millisecond), cp.bound.Sub(cp.revokedAt).Round(time.Millisecond))
	case cp.ended() || cp.info.Resign != 0 || cp.info.Closed != 0:
		cp.revokeChecked = true
	}
}

// checkOverlaps: no term's context is live after a later term began.
func (r *electRun) checkOverlaps() {
	for _, b := range r.order {
		if !b.leads() {
			continue
		}
		began := at(b.info.Ret)
		for _, a := range r.order {
			if a == b || !a.leads() || !at(a.info.Ret).Before(began) {
				continue
			}
			r.checkOverlap(a, b, began)
		}
	}
}

func (r *electRun) checkOverlap(a, b *campaign, began time.Time) {
	live := at(max(a.info.LastLive, a.lookLive))
	if live.After(began) {
		r.stats.PausedLive++
		r.fail("two-leaders", "%s's leadership context looked live at Err() %v after %s became leader (its Campaign returned)%s",
			a.value, live.Sub(began).Round(time.Microsecond), b.value, r.stopText(a, began))
		return
	}
}

func (r *electRun) stopText(a *campaign, began time.Time) string {
	if r.cands[a.c].stoppedDuring(began.Add(-time.Minute), time.Now()) {
		return " (its process had been stopped)"
	}
	return ""
}

// processLog checks the records published since the last step, in order.
func (r *electRun) processLog() {
	for ; r.logDone < len(r.log); r.logDone++ {
		ev := r.log[r.logDone]
		var prev *record
		if r.logDone > 0 && !ev.broken {
			prev = &r.log[r.logDone-1].rec
		}
		r.checkRecord(ev.rec, prev)
		r.noteRecord(ev)
	}
}

// checkRecord checks a record against the one it replaced (prev; nil: not
// known, the subscription was made again between them).
func (r *electRun) checkRecord(rec record, prev *record) {
	if prev == nil {
		return
	}
	newEpoch := prev.epoch != rec.epoch
	if rec.state == 'P' {
		r.checkMark(rec, *prev, newEpoch)
	}
	switch {
	case newEpoch && rec.state != 'P':
		r.fail("term", "record %s starts epoch %s without a pending mark (the record before: %s)", rec, shortID(rec.epoch), *prev)
	case newEpoch && rec.term != 0:
		r.fail("term", "the first record of epoch %s has term %d, not 0", shortID(rec.epoch), rec.term)
	case !newEpoch && rec.state == 'L' && rec.term != prev.term+1:
		r.fail("term", "leader record %s has term %d after %s: a new term is one more", rec, rec.term, *prev)
	case !newEpoch && rec.state != 'L' && rec.term != prev.term:
		r.fail("term", "record %s has term %d after %s: only a leader record moves the term", rec, rec.term, *prev)
	}
}

// checkMark: the wait a pending mark names is what the record it replaced
// calls for.
func (r *electRun) checkMark(rec, prev record, newEpoch bool) {
	var want time.Duration
	switch {
	case newEpoch:
		// No record: the longest lease it knows of.
		want = r.q.maxLease()
		if cp := r.camps[rec.value]; cp != nil {
			want = max(want, r.cands[cp.c].wd)
		}
	case prev.state == 'L' || prev.state == 'P':
		want = prev.lease
	}
	if rec.lease != want {
		r.fail("short-wait", "pending mark %s waits %v after %s; it should wait %v", rec, rec.lease, prev, want)
	}
}

// noteRecord ties a record to its campaign.
func (r *electRun) noteRecord(ev recEvent) {
	rec := ev.rec
	cp := r.camps[rec.value]
	if cp == nil {
		r.fail("record", "record %s has the value of no campaign", rec)
		return
	}
	cp.holder = rec.holder
	switch rec.state {
	case 'P':
		cp.wait, cp.marked, cp.markedAt = rec.lease, true, ev.at
	case 'L':
		cp.led, cp.term, cp.epoch = true, rec.term, rec.epoch
		r.stats.Terms++
	}
}

// checkObserved checks the terms a candidate's ObserveTerms reported
// since the last step.
func (r *electRun) checkObserved(cd *candidate) {
	for ; cd.checked < len(cd.terms); cd.checked++ {
		t := cd.terms[cd.checked]
		if cp := r.camps[t.Value]; cp == nil || cp.led && (cp.term != t.Rev || cp.epoch != t.Epoch) {
			r.fail("observe", "c%d's ObserveTerms reported %s term %d of %s, which no leader record says", cd.c, t.Value, t.Rev, shortID(t.Epoch))
		}
		if cd.checked == 0 {
			continue
		}
		p := cd.terms[cd.checked-1]
		gapOK := r.disconnected(cd, at(p.At), at(t.At))
		switch {
		case t.Epoch == p.Epoch && t.Rev <= p.Rev:
			r.fail("observe", "c%d's ObserveTerms reported term %d after term %d of the same epoch", cd.c, t.Rev, p.Rev)
		case t.Epoch == p.Epoch && t.Rev != p.Rev+1 && !gapOK:
			r.fail("observe", "c%d's ObserveTerms skipped from term %d to %d with no disconnection between", cd.c, p.Rev, t.Rev)
		case t.Epoch != p.Epoch && t.Rev != 1 && !gapOK:
			r.fail("observe", "c%d's ObserveTerms reported term %d first of a new epoch, with no disconnection since term %d", cd.c, t.Rev, p.Rev)
		}
	}
}

// disconnected reports whether a candidate's subscription may have been
// dropped between from and to: Redis restarted, or its process was
// stopped.
func (r *electRun) disconnected(cd *candidate, from, to time.Time) bool {
	for _, t := range r.restarts {
		if t.After(from.Add(-time.Second)) && t.Before(to.Add(time.Second)) {
			return true
		}
	}
	return cd.stoppedDuring(from, to)
}

// checkObserversCaughtUp: at the end, every candidate is told the last
// term (a moment given for the message), unless Redis restarted after the
// term began or its process started after it.
func (r *electRun) checkObserversCaughtUp() {
	var last *campaign
	for _, cp := range r.order {
		if cp.led && (last == nil || cp.epoch != last.epoch || cp.term > last.term) {
			last = cp
		}
	}
	if last == nil || last.info.Ret == 0 {
		return
	}
	began := at(last.info.Ret)
	for _, t := range r.restarts {
		if t.After(began.Add(-time.Second)) {
			return
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, cd := range r.cands {
		if !cd.started.After(began.Add(-time.Second)) && !r.awaitTold(cd, last, deadline) {
			r.fail("observe", "c%d's ObserveTerms was never told of the last term, %s (term %d), begun %v before the end", cd.c, last.value, last.term, time.Since(began).Round(time.Millisecond))
		}
	}
}

// awaitTold polls a candidate until its ObserveTerms was told of cp's
// term, or deadline.
func (r *electRun) awaitTold(cd *candidate, cp *campaign, deadline time.Time) bool {
	for !r.toldOf(cd, cp) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if rep, err := cd.cl.call(req{Op: "state"}); err == nil {
			r.absorb(cd, rep.Elect)
		}
	}
	return r.toldOf(cd, cp)
}

func (r *electRun) toldOf(cd *candidate, cp *campaign) bool {
	for _, t := range cd.terms {
		if t.Value == cp.value {
			return true
		}
	}
	return false
}
