package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// A paused holder. "cN stop" stops Client N's process (SIGSTOP) and lets
// the sequence go on: its holds run out unrenewed and other owners may
// take the lock; "cN cont" lets it run again. "cN pause <d>" is both in
// one step. Before the stop the Client's looker is armed (exec_look.go):
// code of the holder that looks at its LostContext's Err over and over.
// Right after the stop, the checker reads when each stopped holder's hold
// expires in Redis: nothing can renew it after that. What the model learns
// while the process is stopped (another owner took the lock, the hold left
// Redis) cannot be told to it, so those checks wait for the cont: then no
// look may have seen the LostContext live after the hold expired in Redis
// or after another owner took the lock, and a look that saw it ended must
// have seen the cause ErrLockLost.

// deadState is what the model knows, while an owner's process is stopped,
// of the end of its hold.
type deadState struct {
	// expiry: the hold expires in Redis by then (read right after the
	// stop; zero: not known, or no hold).
	expiry time.Time
	// after: the model knows the hold is over at this moment (another
	// owner took the lock, or Redis showed the hold gone); kind and why
	// say what the LostContext was obliged to by then.
	after     time.Time
	kind, why string
}

// nStopped counts the stopped Clients.
func (r *seqRun) nStopped() int {
	n := 0
	for _, t := range r.stopped {
		if !t.IsZero() {
			n++
		}
	}
	return n
}

// stoppedClient is a stopped Client (-1: none).
func (r *seqRun) stoppedClient() int {
	for c, t := range r.stopped {
		if !t.IsZero() {
			return c
		}
	}
	return -1
}

// stop arms Client c's looker, stops its process and reads when each of
// its holds expires in Redis.
func (r *seqRun) stop(c int) error {
	cl := r.clients[c]
	if _, err := cl.call(req{Op: "arm"}); err != nil {
		return err
	}
	if err := syscall.Kill(cl.pid(), syscall.SIGSTOP); err != nil {
		return err
	}
	r.stopped[c] = time.Now()
	// A renewal sent just before the stop may still land (and be confirmed
	// after the resume): read twice, and keep the later expiry.
	for _, wait := range []time.Duration{50 * time.Millisecond, 250 * time.Millisecond} {
		time.Sleep(wait)
		exp, err := r.expiries()
		if err != nil {
			return err
		}
		for _, o := range r.owners {
			if e := exp[o.name]; o.c == c && o.holding() && !o.revoked && e.After(o.dead.expiry) {
				o.dead.expiry = e
			}
		}
	}
	return nil
}

// cont lets Client c's process run again and returns what its looker saw.
func (r *seqRun) cont(c int) (reply, error) {
	cl := r.clients[c]
	if err := syscall.Kill(cl.pid(), syscall.SIGCONT); err != nil {
		return reply{}, err
	}
	rep, err := cl.call(req{Op: "disarm"}) // answered once the process runs
	r.lastStop = r.stopped[c]
	stopped := time.Since(r.stopped[c])
	r.stopped[c] = time.Time{}
	r.moveBounds(c, stopped)
	return rep, err
}

// pauseStep stops Client c's process for d, then lets it run again.
func (r *seqRun) pauseStep(s Step) (reply, error) {
	if err := r.stop(s.C); err != nil {
		return reply{}, err
	}
	time.Sleep(max(s.D-300*time.Millisecond, 0))
	return r.cont(s.C)
}

// expiries reads when each owner's hold expires in Redis, by owner name:
// the lock key's PTTL for its one holder, or each kept permit's score.
func (r *seqRun) expiries() (map[string]time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := map[string]time.Time{}
	if r.q.Kind == keptKind {
		ob, err := r.readKept(ctx)
		if err != nil {
			return nil, err
		}
		for id, exp := range ob.permits {
			if i, ok := r.byField[id]; ok {
				out[r.owners[i].name] = exp
			}
		}
		return out, nil
	}
	var pt *redis.DurationCmd
	var hk *redis.StringSliceCmd
	_, err := r.env.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hk = p.HKeys(ctx, r.lock)
		pt = p.PTTL(ctx, r.lock)
		return nil
	})
	qr := time.Now()
	if err != nil {
		return nil, err
	}
	for _, f := range hk.Val() {
		if i, ok := r.byField[f]; ok && pt.Val() > 0 {
			out[r.owners[i].name] = qr.Add(pt.Val() + time.Millisecond)
		}
	}
	return out, nil
}

// deferObligation keeps, for an owner whose process is stopped, what its
// LostContext was obliged to: checked against its looks at the cont.
func (r *seqRun) deferObligation(o obligation) {
	d := &r.owners[o.o].dead
	at := o.by.Add(-grace) // the moment the model learnt it: no look may be live after it
	if d.after.IsZero() || at.Before(d.after) {
		d.after, d.kind, d.why = at, o.kind, o.why
	}
}

// judgeCont checks what the looker of Client c saw: no live look after the
// hold expired in Redis or after the model knew it was over, and the
// cause ErrLockLost. The LostContexts must then end as any must.
func (r *seqRun) judgeCont(s Step, rep reply) {
	for o := range ownersPerClient {
		i := r.idx(s.C, o)
		q := r.owners[i]
		d := q.dead
		q.dead = deadState{}
		if o >= len(rep.Looks) || !rep.Looks[o].Watched {
			continue
		}
		lk := rep.Looks[o]
		r.stats.Looks += lk.Live
		r.checkLooks(q, lk, d)
		if !d.after.IsZero() {
			r.oblige(i, time.Now().Add(grace), d.kind, d.why+" (its process was stopped then)")
		}
	}
}

// checkLooks fails a look that saw a stopped holder's LostContext live
// after its end was certain.
func (r *seqRun) checkLooks(q *ownerState, lk lookInfo, d deadState) {
	last := at(lk.LastLive)
	switch {
	case lk.LastLive != 0 && !d.expiry.IsZero() && last.After(d.expiry.Add(eps)):
		r.stats.PausedLive++
		r.fail("paused-live", "%s's LostContext looked live at Err() %v after its hold expired in Redis (its process was stopped past the hold's lease and resumed; %s)",
			q.name, last.Sub(d.expiry).Round(time.Microsecond), looksText(lk))
	case lk.LastLive != 0 && !d.after.IsZero() && last.After(d.after):
		r.stats.PausedLive++
		r.fail("paused-live", "%s's LostContext looked live at Err() %v after the model knew its hold was over: %s (its process was stopped and resumed; %s)",
			q.name, last.Sub(d.after).Round(time.Microsecond), d.why, looksText(lk))
	}
	if lk.FirstEnd != 0 && lk.Cause != "lost" {
		r.fail("lostcontext", "%s's LostContext, looked at after its process resumed, ended with cause %q, not ErrLockLost", q.name, lk.Cause)
	}
}

func (r *seqRun) describeLooks(looks []lookInfo) string {
	var parts []string
	for o, lk := range looks {
		if !lk.Watched {
			continue
		}
		s := fmt.Sprintf("o%d: %d live", o, lk.Live)
		if lk.FirstEnd != 0 {
			s += fmt.Sprintf(", ended (%s) %v after resuming", lk.Cause, at(lk.FirstEnd).Sub(at(lk.Resumed)).Round(time.Microsecond))
		}
		s += fmt.Sprintf(" [from the stop: first look %v, resumed %v (gap %v), last live %v]", rel(lk.First, r.lastStop), rel(lk.Resumed, r.lastStop),
			time.Duration(lk.Gap).Round(time.Millisecond), rel(lk.LastLive, r.lastStop))
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// rel is t (ns) as a duration from base ("-": none).
func rel(t int64, base time.Time) string {
	if t == 0 {
		return "-"
	}
	return at(t).Sub(base).Round(time.Millisecond).String()
}

// looksText says what the looker saw of a context after a resume.
func looksText(lk lookInfo) string {
	s := fmt.Sprintf("%d live looks in all", lk.Live)
	if lk.FirstEnd != 0 {
		s += fmt.Sprintf("; the first look that saw the loss came %v after the last live one", at(lk.FirstEnd).Sub(at(lk.LastLive)).Round(time.Microsecond))
	}
	return s
}
