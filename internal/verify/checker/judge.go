package main

import (
	"fmt"
	"time"

	"github.com/goredisson/goredisson/watchdog"
)

// judgeCallSettled judges an owner's call; when the result is not one the
// model allows while the owner's LostContext still looks live, it waits up
// to the grace for a loss that raced the call to reach the watcher (two
// goroutine hops), and judges again with what it then sees.
func (r *seqRun) judgeCallSettled(s Step, i int, pre []ownerState, rep reply, ob *observation) {
	me := *r.owners[i]
	nv, no, nt := len(r.violations), len(r.obls), len(r.trace)
	r.judgeCall(s, i, pre, rep, ob)
	if len(r.violations) == nv || ob.lc[i].State != "live" || !pre[i].holding() {
		return
	}
	deadline := at(rep.End).Add(grace)
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		lcs, err := r.lcs()
		if err != nil {
			return
		}
		if lcs[i].State == "ended" {
			*r.owners[i] = me
			r.violations, r.obls, r.trace = r.violations[:nv], r.obls[:no], r.trace[:nt]
			ob.lc[i] = lcs[i]
			r.logf("    (the owner's LostContext ended %v after the call: judged as a loss that raced it)", at(lcs[i].At).Sub(at(rep.End)).Round(time.Millisecond))
			r.judgeCall(s, i, pre, rep, ob)
			return
		}
	}
}

// call is what judging one owner's call needs: the step, the owner's
// model before it (p) and now (me), the reply and what the model allows.
type call struct {
	s      Step
	i      int
	me     *ownerState
	p      ownerState
	pre    []ownerState
	rep    reply
	ob     *observation
	s0, e0 time.Time
	k      int // the owner's count in Redis after the call
	// held: the Client counted holds with a live LostContext; raced: that
	// LostContext has ended since (a loss that raced the call); edge: the
	// call ended around a fixed hold's local deadline.
	held, raced, edge          bool
	canHeld, canGone, canFresh bool
	lease                      time.Duration
	what                       string
	lostBy                     time.Time
}

func (r *seqRun) newCall(s Step, i int, pre []ownerState, rep reply, ob *observation) *call {
	p := pre[i]
	c := &call{s: s, i: i, me: r.owners[i], p: p, pre: pre, rep: rep, ob: ob, s0: at(rep.Start), e0: at(rep.End), k: ob.counts[i]}
	c.held = p.n > 0 && p.live()
	c.raced = c.held && ob.lc[i].State == "ended"
	c.edge = c.held && !p.wd && !c.e0.Before(p.dlLo.Add(-edgeEps))
	c.canHeld = c.held && p.red > 0
	c.canGone = c.held && (p.revoked || p.red == 0 || c.raced || c.edge)
	c.canFresh = !c.held || c.raced || c.edge
	c.lease = s.D
	if s.Op == "lock" {
		c.lease = 0
	}
	c.what = fmt.Sprintf("%s (holding %d, Redis %d%s)", s, p.n, p.red, map[bool]string{true: ", revoked", false: ""}[p.revoked])
	c.lostBy = c.e0.Add(grace)
	return c
}

// judgeCall checks the result of an owner's call against the model and
// moves the model on.
func (r *seqRun) judgeCall(s Step, i int, pre []ownerState, rep reply, ob *observation) {
	c := r.newCall(s, i, pre, rep, ob)
	if c.edge || c.raced && !c.p.revoked && c.p.red > 0 {
		r.stats.Uncertain++ // (a revoked hold's call ends its LostContext: no race)
	}
	switch s.Op {
	case "trylock", "lock", "locklease", "lost":
		r.judgeAcquire(c)
	case "isheld":
		r.judgeIsHeld(c)
	case "unlock":
		r.judgeUnlock(c)
	case "extend":
		r.judgeExtend(c)
	case "holdcount":
		r.judgeHoldCount(c)
	}
	if (acquireOp(s.Op) || s.Op == "lost") && rep.Err == "" && rep.OK {
		r.othersTold(c)
	}
}

// othersTold: after another owner's acquisition, every other holder must
// have been told.
func (r *seqRun) othersTold(c *call) {
	for j, q := range r.owners {
		if j != c.i && q.holding() {
			r.oblige(j, c.lostBy, "two-inside", fmt.Sprintf("%s took the lock while %s's LostContext was live (%s counted %d holds)", c.s, q.name, q.name, q.n))
		}
	}
}

// judgeAcquire judges TryLock, Lock and LockLease.
func (r *seqRun) judgeAcquire(c *call) {
	switch rep := c.rep; {
	case rep.Err == "" && rep.OK:
		r.judgeAcquired(c)
	case rep.Err == "" && !rep.OK: // TryLock: taken
		if !(c.canFresh && c.otherHeld()) {
			r.fail("result", "%s returned false (lock taken), but no other owner held it in Redis and the owner's hold is not gone", c.what)
		}
	case rep.Err == "lost":
		if !c.canGone {
			r.fail("result", "%s returned ErrLockLost while the owner's hold was in Redis: %s", c.what, rep.Msg)
		}
		if c.held {
			r.oblige(c.i, c.lostBy, "result", c.what+" returned ErrLockLost, but the owner's LostContext did not end")
		}
		if c.k != 0 {
			r.fail("result", "%s returned ErrLockLost (nothing held) but Redis counts %d holds of the owner", c.what, c.k)
		}
	case rep.Err == "timeout" && c.s.Op != "trylock":
		r.fail("lock-timeout", "%s did not return within %v, although the lock was free or the owner's own", c.what, callTimeout)
	default:
		r.fail("result", "%s failed: %s", c.what, rep.Msg)
	}
}

// otherHeld reports whether another owner held the lock in Redis before
// the call.
func (c *call) otherHeld() bool {
	for j, q := range c.pre {
		if j != c.i && q.red > 0 {
			return true
		}
	}
	return false
}

// judgeAcquired judges a successful acquisition: a re-entry or a fresh hold.
func (r *seqRun) judgeAcquired(c *call) {
	p, k := c.p, c.k
	switch {
	case k == 0:
		r.fail("result", "%s succeeded, but Redis has no hold of the owner", c.what)
	case c.canHeld && k == p.red+1:
		r.reentered(c.me, c.lease, c.s0, c.e0, k)
	case k == 1 && (c.canFresh || c.canGone):
		r.judgeFresh(c)
	case !c.held && p.red > 0 && k == p.red+1 && p.lost.pending():
		r.fail("fresh-count", "%s: the owner's last acquisition was reported failed (its reply lost), yet this one counts the hold it took: Redis counts %d, a fresh hold counts 1", c.what, k)
		r.fresh(c.me, c.lease, c.s0, c.e0)
	case !c.held && p.red > 0 && k == p.red+1:
		r.fail("fresh-count", "%s: the owner's LostContext had ended (its loss was signalled), yet the new acquisition counts the lost holds: Redis counts %d, a fresh hold counts 1", c.what, k)
		r.fresh(c.me, c.lease, c.s0, c.e0)
		c.me.n = k
	default:
		r.fail("result", "%s succeeded with %d holds in Redis (re-entry would give %d, a fresh hold 1)", c.what, k, p.red+1)
	}
}

// judgeFresh judges a fresh hold (count 1) in place of holds the Client
// counted: only once their loss was signalled (the LostContext it replaced
// had ended).
func (r *seqRun) judgeFresh(c *call) {
	prev := c.rep.Prev
	if c.held && prev == nil && c.ob.lc[c.i].State == "ended" {
		// The loss reached the watcher only after the call
		// (judgeCallSettled): watch the fresh hold now.
		l := c.ob.lc[c.i]
		prev = &l
		if _, err := r.clients[c.s.C].call(req{Op: "open", Owner: c.s.O}); err != nil {
			r.fail("agent", "%v", err)
		}
		c.ob.lc[c.i] = lcInfo{State: "live"}
	}
	switch {
	case !c.held:
	case prev == nil:
		r.fail("result", "%s took a fresh hold (count 1) in place of the owner's earlier holds while its LostContext was live: their loss went unsignalled", c.what)
	case at(prev.Live).After(c.lostBy):
		r.fail("result", "%s took a fresh hold (count 1) in place of the owner's earlier holds; a look saw its LostContext live %v after the call", c.what, at(prev.Live).Sub(c.e0).Round(time.Millisecond))
	}
	r.fresh(c.me, c.lease, c.s0, c.e0)
}

// judgeUnlock judges Unlock.
func (r *seqRun) judgeUnlock(c *call) {
	p, k, me := c.p, c.k, c.me
	switch c.rep.Err {
	case "":
		switch {
		case p.red == 0:
			r.fail("result", "%s succeeded, but Redis had no hold of the owner", c.what)
		case k != p.red-1 && !(k == 0 && p.vanishable(c.ob.qr)):
			r.fail("count", "%s left %d holds of the owner in Redis, not %d", c.what, k, p.red-1)
		}
		if c.held {
			me.n = k
			if k == 0 {
				me.wd, me.revoked = false, false
			} else if me.wd {
				me.wdFloor = c.s0.Add(me.wdT) // a release keeps the watchdog lease
			}
		}
	case "notheld":
		if !(p.red == 0 || p.vanishable(c.e0) || c.raced) {
			r.fail("result", "%s returned ErrNotHeld while the owner held the lock in Redis", c.what)
		}
		if c.held {
			r.notHeldTold(c)
		}
	default:
		r.fail("result", "%s failed: %s", c.what, c.rep.Msg)
	}
}

// liveFixed reports whether Extend may succeed: a fixed hold the Client
// counts, in Redis or around its loss.
func (c *call) liveFixed() bool {
	return c.held && !c.p.wd && (c.p.red > 0 || c.raced || c.edge)
}

// notHeldTold: an Unlock that returned ErrNotHeld ends the holder's
// LostContext. A kept permit's failed Release stops its renewals instead:
// its LostContext ends at its lease's deadline, not at once
// (docs/synchronizers.md), even when the failure is ErrNotHeld.
func (r *seqRun) notHeldTold(c *call) {
	if r.q.Kind != keptKind {
		r.oblige(c.i, c.lostBy, "result", c.what+" returned ErrNotHeld, but the owner's LostContext did not end")
		return
	}
	by := c.e0.Add(c.me.wdT + grace)
	r.oblige(c.i, by, "result", c.what+" returned ErrNotHeld, but the permit's LostContext did not end by its lease")
	c.me.bound = later(c.me.bound, by.Add(revokeSlack-grace))
}

// judgeExtend judges Extend.
func (r *seqRun) judgeExtend(c *call) {
	p := c.p
	switch c.rep.Err {
	case "":
		if !c.liveFixed() {
			r.fail("result", "%s succeeded on a hold that is not a live fixed hold", c.what)
		} else {
			c.me.lo, c.me.hi = c.s0.Add(c.lease), c.e0.Add(c.lease)
			c.me.dlLo = c.s0.Add(c.lease - watchdog.Allowance(c.lease))
		}
	case "invalid":
		if !(c.held && p.wd) {
			r.fail("result", "%s returned ErrInvalidArgument for a hold that is not watchdog-managed: %s", c.what, c.rep.Msg)
		}
	case "notheld":
		if c.held && !(p.red == 0 || p.revoked || c.raced || c.edge) {
			r.fail("result", "%s returned ErrNotHeld while the owner held the lock in Redis", c.what)
		}
		if c.held {
			r.oblige(c.i, c.lostBy, "result", c.what+" returned ErrNotHeld, but the owner's LostContext did not end")
		}
	default:
		r.fail("result", "%s failed: %s", c.what, c.rep.Msg)
	}
}

// judgeHoldCount judges HoldCount.
func (r *seqRun) judgeHoldCount(c *call) {
	if c.rep.Err != "" {
		r.fail("result", "%s failed: %s", c.what, c.rep.Msg)
		return
	}
	h, p := c.rep.N, c.p
	if !(h == p.red || (h == 0 && p.vanishable(c.e0))) {
		r.fail("result", "HoldCount returned %d, Redis counts %d holds of the owner", h, p.red)
	}
	if c.held && h < p.n {
		r.oblige(c.i, c.lostBy, "result", c.what+fmt.Sprintf(" returned %d, fewer than the Client counted, but the owner's LostContext did not end", h))
	}
}

// fresh records a new holding period of the owner.
func (r *seqRun) fresh(o *ownerState, lease time.Duration, s0, e0 time.Time) {
	o.n, o.revoked, o.lost = 1, false, lostState{}
	o.wd = lease <= 0
	o.keyWd = o.wd
	if o.wd {
		o.wdFloor = s0.Add(o.wdT)
		return
	}
	o.lo, o.hi = s0.Add(lease), e0.Add(lease)
	o.dlLo = s0.Add(lease - watchdog.Allowance(lease))
}

// reentered records a re-entry: a watchdog-managed hold stays so, a fixed
// lease extends the key (the write side adds it to what is left).
func (r *seqRun) reentered(o *ownerState, lease time.Duration, s0, e0 time.Time, k int) {
	o.n = k
	switch {
	case o.wd || lease <= 0:
		o.wd, o.keyWd = true, true
		o.wdFloor = s0.Add(o.wdT)
	case r.q.Kind == "WriteLock":
		o.lo, o.hi = o.lo.Add(lease-time.Millisecond), o.hi.Add(lease)
		o.dlLo = o.dlLo.Add(lease - watchdog.Allowance(lease))
	default:
		o.lo = later(o.lo, s0.Add(lease))
		o.hi = later(o.hi, e0.Add(lease))
		o.dlLo = later(o.dlLo, s0.Add(lease-watchdog.Allowance(lease)))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// judgeOther checks the steps that are no owner's call.
func (r *seqRun) judgeOther(s Step, pre []ownerState, rep reply, ob observation, start, end time.Time) {
	switch s.Op {
	case "force", "flushall", "restart":
		if s.Op == "force" {
			r.judgeForce(s, pre, rep)
		}
		if len(ob.holders) > 0 {
			r.fail("result", "%s left holds in Redis", s)
		}
		r.revoked(s, pre, ob, end)
	case "pause", "cont":
		// (A paused process can tell nothing: cont moved its revoked
		// holders' bounds by the pause.)
		r.judgeCont(s, rep)
	case "stall":
		// Nor can any renewal see a revocation while Redis sleeps.
		r.moveBounds(-1, s.D)
	}
}

// judgeForce judges ForceUnlock's result.
func (r *seqRun) judgeForce(s Step, pre []ownerState, rep reply) {
	if rep.Err != "" {
		r.fail("result", "%s failed: %s", s, rep.Msg)
	}
	any, all := false, true
	for _, q := range pre {
		if q.red > 0 {
			any = true
			if !q.vanishable(at(rep.End)) {
				all = false
			}
		}
	}
	if rep.OK && !any {
		r.fail("result", "ForceUnlock reported a lock, but Redis had none")
	}
	if !rep.OK && !all {
		r.fail("result", "ForceUnlock reported no lock while an owner held it in Redis")
	}
}

// revoked marks the holders whose holds a revocation deleted behind their
// back, with the bound by which each must be told.
func (r *seqRun) revoked(s Step, pre []ownerState, ob observation, end time.Time) {
	for j, q := range r.owners {
		if !pre[j].holding() || ob.lc[j].State != "live" {
			continue
		}
		bound := end.Add(q.wdT/3 + revokeSlack)
		if !q.wd {
			bound = later(q.hi, end).Add(revokeSlack)
		}
		switch {
		case !q.revoked:
			q.revokedAt, q.bound = end, bound
		case s.Op == "restart":
			// Redis was down: no renewal could see an earlier
			// revocation until it was back.
			q.bound = later(q.bound, bound)
		case bound.Before(q.bound):
			q.bound = bound
		}
		q.revoked = true
		r.stats.Revoked++
	}
}

// moveBounds moves the bounds of revoked holders of Client c (every
// Client: -1) by d, a time when they could tell nothing.
func (r *seqRun) moveBounds(c int, d time.Duration) {
	for _, q := range r.owners {
		if (c < 0 || q.c == c) && q.revoked {
			q.bound = q.bound.Add(d)
		}
	}
}
