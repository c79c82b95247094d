package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lost replies of single attempts, and the truth of HoldCount and
// IsHeldByCurrent. "stall <d>" has redis-server sleep d (DEBUG SLEEP);
// "cNoM lost <lease>" is a TryLock(ctx, 0, lease) (TryAcquireKept for kept
// permits) sent while Redis sleeps past the Clients' go-redis ReadTimeout
// (the sequence's rt=): the call returns an error, and the acquisition
// runs when Redis wakes. From then on, until the owner acquires again,
// its HoldCount and IsHeldByCurrent must never report a hold (the owner
// was told it did not get one), and the hold the lost call took must
// leave Redis within the clean-up bound.

const (
	// lostStall is how long Redis sleeps in a lost step: past the
	// ReadTimeout the generator gives such sequences (1 s).
	lostStall = 3 * time.Second
	// lostReadTimeout is the go-redis ReadTimeout of sequences with stalls.
	lostReadTimeout = 500 * time.Millisecond
	// cleanupBound is rlock's clean-up bound (cleanupTimeout): a lost
	// call is settled within it; cleanupSlack is what a loaded machine
	// may add.
	cleanupBound = 5 * time.Second
	cleanupSlack = 3 * time.Second
)

// lostState is an owner's acquisition whose reply was lost.
type lostState struct {
	at   time.Time // when the owner was told it failed (zero: none pending)
	seen bool      // its hold was seen in Redis since
}

func (l lostState) pending() bool { return !l.at.IsZero() }

// deadline is when the lost hold must have left Redis.
func (l lostState) deadline() time.Time { return l.at.Add(cleanupBound + cleanupSlack) }

// canStall reports whether the sequence may stall Redis: the server has
// DEBUG enabled, and the Clients' ReadTimeout is shorter than a stall.
func (r *seqRun) canStall() bool {
	return r.env.debug && r.q.ReadTimeout > 0 && r.q.ReadTimeout < lostStall-time.Second
}

// lostEligible: an owner with no hold at all, and no other lost call
// pending (a kept permit's lost id is known by being the only one).
func (r *seqRun) lostEligible(s Step) bool {
	me := r.owners[r.idx(s.C, s.O)]
	if me.n > 0 || me.red > 0 || me.live() {
		return false
	}
	for _, p := range r.owners {
		if p.lost.pending() || p.revoked && p.holding() {
			return false
		}
	}
	return true
}

// stall has Redis sleep d (DEBUG SLEEP, on a connection of its own); once
// it sleeps, during runs; the stall returns once Redis woke and a moment
// more, for the calls queued meanwhile to run.
func (r *seqRun) stall(d time.Duration, during func()) error {
	ctx := context.Background()
	sleeper := redis.NewClient(&redis.Options{Addr: r.env.srv.Addr, ReadTimeout: -1, MaxRetries: -1})
	defer sleeper.Close()
	probe := redis.NewClient(&redis.Options{Addr: r.env.srv.Addr, ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer probe.Close()
	if err := probe.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("stall: %w", err)
	}
	woke := make(chan error, 1)
	go func() {
		woke <- sleeper.Do(ctx, "debug", "sleep", fmt.Sprintf("%.3f", d.Seconds())).Err()
	}()
	for asleep := false; !asleep; {
		select {
		case err := <-woke:
			return fmt.Errorf("stall: DEBUG SLEEP returned before the server was seen asleep: %v", err)
		default:
		}
		asleep = probe.Ping(ctx).Err() != nil
	}
	if during != nil {
		during()
	}
	err := <-woke
	time.Sleep(100 * time.Millisecond)
	return err
}

// cutByReadTimeout ends a sequence whose Clients have a short ReadTimeout
// when a call other than a lost step was cut by it: load, not a stall,
// delayed its reply, and the model has no outcome for it. The sequence
// ends without a verdict.
func (r *seqRun) cutByReadTimeout(s Step, rep reply) bool {
	if r.q.ReadTimeout <= 0 || s.Op == "lost" || rep.Err == "" {
		return false
	}
	if rep.Err != "unknown" && !(rep.Err == "other" && strings.Contains(rep.Msg, "timeout")) {
		return false
	}
	r.inconclusive = fmt.Sprintf("%s was cut by the Clients' ReadTimeout (%v) outside a stall: %s", s, r.q.ReadTimeout, rep.Msg)
	r.logf("%3d %-22s inconclusive: %s", r.stepNo, s, r.inconclusive)
	r.stats.Inconclusive++
	return true
}

// judgeLostStep judges what the lost-reply model decides alone: a lost
// step that failed, and the looks (HoldCount, IsHeldByCurrent) of an owner
// whose lost call is pending, or IsHeldByCurrent of anyone. It reports
// whether it judged the step.
func (r *seqRun) judgeLostStep(s Step, i int, pre []ownerState, rep reply) bool {
	me, p := r.owners[i], pre[i]
	switch {
	case s.Op == "lost" && rep.Err != "":
		me.lost = lostState{at: at(rep.End)}
		r.stats.LostReplies++
		return true
	case (s.Op == "holdcount" || s.Op == "isheld") && p.lost.pending():
		r.judgeLostLook(s, me, rep)
		return true
	}
	return false
}

// judgeLostLook: a look of an owner whose lost call is pending may fail (a
// settle that cannot reach Redis yet) or say "no hold"; never "held".
func (r *seqRun) judgeLostLook(s Step, me *ownerState, rep reply) {
	if rep.Err != "" {
		return
	}
	said := fmt.Sprintf("HoldCount returned %d", rep.N)
	if s.Op == "isheld" {
		said = fmt.Sprintf("IsHeldByCurrent returned %v", rep.OK)
	}
	if rep.N > 0 || rep.OK {
		r.stats.UntrueLooks++
		r.fail("held-untrue", "%s: %s %v after the owner's TryLock was reported failed (its reply lost to a stall), with no acquisition since",
			s, said, at(rep.Start).Sub(me.lost.at).Round(time.Millisecond))
	}
}

// judgeIsHeld judges IsHeldByCurrent: true while Redis holds the owner's
// hold; false may also follow a hold that may have run out.
func (r *seqRun) judgeIsHeld(c *call) {
	if c.rep.Err != "" {
		r.fail("result", "%s failed: %s", c.what, c.rep.Msg)
		return
	}
	held, p := c.rep.OK, c.p
	if held != (p.red > 0) && !(!held && p.vanishable(c.e0)) {
		r.fail("result", "IsHeldByCurrent returned %v, Redis counts %d holds of the owner", held, p.red)
	}
	if c.held && !held {
		r.oblige(c.i, c.lostBy, "result", c.what+" returned false, but the owner's LostContext did not end")
	}
}

// countLost lets a pending lost call's hold appear in Redis (count 1) and
// leave it without a call; it reports whether it accounted for owner q's
// count oc.
func countLost(q *ownerState, p ownerState, oc int) bool {
	return p.lost.pending() && q.lost.pending() && oc <= 1
}

// checkLostSettled fails a lost call's hold still in Redis past the
// clean-up bound, and forgets lost calls that are settled.
func (r *seqRun) checkLostSettled(ob observation) {
	for i, q := range r.owners {
		if !q.lost.pending() {
			continue
		}
		k := ob.counts[i]
		if k > 0 {
			q.lost.seen = true
		}
		switch {
		case k > 0 && ob.qs.After(q.lost.deadline()):
			r.fail("lost-unsettled", "the hold %s's lost call took is still in Redis %v after the owner was told the call failed (the clean-up bound is %v; pttl %v)",
				q.name, ob.qs.Sub(q.lost.at).Round(time.Millisecond), cleanupBound, ob.pttl)
			q.lost = lostState{}
		case k == 0 && (q.lost.seen || ob.qs.After(q.lost.deadline())):
			q.lost = lostState{}
		}
	}
}

// awaitLost waits, at the end of a sequence, for the clean-up bound of
// lost calls whose hold is still in Redis, and checks them.
func (r *seqRun) awaitLost() error {
	var last time.Time
	for _, q := range r.owners {
		if q.lost.pending() && q.red > 0 {
			last = later(last, q.lost.deadline())
		}
	}
	if last.IsZero() {
		return nil
	}
	time.Sleep(time.Until(last) + 50*time.Millisecond)
	ob, err := r.observe()
	if err != nil {
		return errors.Join(errors.New("after the clean-up bound"), err)
	}
	r.logf("    (at the end: waited for the clean-up bound of lost calls) redis %s", r.describeRedis(ob))
	r.checkLostSettled(ob)
	return nil
}
