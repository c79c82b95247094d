package watchdog

import (
	"container/heap"
	"slices"
	"sync/atomic"
	"time"
)

// An Entry: one watched lease, its local deadline, and the loss signal
// (Lost, Err, AfterLost) its holder reads.

// Entry is one watched lease.
type Entry struct {
	s        *Scheduler
	lease    Lease
	renewed  bool      // renewed by the Scheduler (else a fixed lease)
	deadline time.Time // local deadline (see Deadline)
	when     time.Time // next renewal, for a renewed lease
	index    int       // position in the due heap, -1 when not in it
	dindex   int       // position in byDeadline, -1 when not in it
	stopped  bool      // no longer watched: lost, or stopped
	drained  bool      // given up by its holder (Drain): its loss is quiet
	// lost is Lost's channel, made on its first call (most holds never
	// ask); gone says the lease is lost (Lost is closed), set under s.mu.
	lost atomic.Pointer[chan struct{}]
	gone atomic.Bool
	// dl is deadline as mono gives it, for IsLost's look without s.mu
	// (never once stopped without a loss); set under s.mu.
	dl    atomic.Int64
	err   error
	after []*afterLost // AfterLost's functions, run at the loss
}

// afterLost is one function registered with AfterLost.
type afterLost struct{ f func() }

// Confirm records a new acquisition of a watched lease (a re-entry) whose
// lease lasts until deadline: the lease's deadline moves to it if that is
// later (a re-entry extends a lease, never shortens it), and with renew set
// the Scheduler renews it from now on (a renewed lease stays renewed). It
// does nothing to a lease that is already lost or stopped, and loses one
// whose deadline has passed (a lost lease is final).
func (e *Entry) Confirm(deadline time.Time, renew bool) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.stopped {
		return
	}
	if s.expireLocked(e, time.Now()) {
		s.notifySoon()
		return
	}
	if deadline.After(e.deadline) {
		s.setDeadline(e, deadline)
	}
	if renew && !e.renewed {
		e.renewed = true
		e.when = time.Now().Add(s.interval)
	}
	if e.index >= 0 {
		heap.Fix(&s.due, e.index)
		s.pokeFor(e)
	}
}

// Reset sets the deadline of a watched fixed lease to deadline, earlier or
// later (the holder set the lease anew, see rlock's Extend). It does
// nothing to a renewed lease, or one already lost or stopped, loses one
// whose deadline has passed, and reports whether it was set.
func (e *Entry) Reset(deadline time.Time) bool {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.stopped || e.renewed {
		return false
	}
	if s.expireLocked(e, time.Now()) {
		s.notifySoon()
		return false
	}
	s.setDeadline(e, deadline)
	if e.index >= 0 {
		heap.Fix(&s.due, e.index)
		s.pokeFor(e)
	}
	return true
}

// next is when the loop must look at the entry: its next renewal or its
// deadline, whichever comes first.
func (e *Entry) next() time.Time {
	if e.renewed && e.when.Before(e.deadline) {
		return e.when
	}
	return e.deadline
}

// Stop ends the watch without signalling a loss, unless the lease's local
// deadline has passed already: then it is lost (as the first look after the
// deadline would have found it). A stopped lease is never lost: IsLost
// stays false, Lost stays open, and AfterLost's functions are dropped. It
// is idempotent.
func (e *Entry) Stop() {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.stopped {
		return
	}
	if s.expireLocked(e, time.Now()) {
		s.notifySoon()
		return
	}
	e.stopped = true
	e.dl.Store(never)
	e.after = nil
	if e.index >= 0 {
		heap.Remove(&s.due, e.index)
	}
	if e.dindex >= 0 {
		heap.Remove(&s.byDeadline, e.dindex)
	}
}

// Drain stops renewing a lease its holder gave up without knowing that
// Redis dropped it (its release failed): it is still watched, and Lost
// closes at its deadline, or at Lose, without a log line or a WithOnLost
// call.
func (e *Entry) Drain() {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.stopped {
		return
	}
	e.drained, e.renewed = true, false
	if e.index >= 0 {
		heap.Fix(&s.due, e.index)
		s.pokeFor(e)
	}
}

// Lose ends the watch of a lease its holder found lost some other way (its
// client saw Redis count fewer holds than it did), as a renewal that finds
// the lease gone does: Lost closes and the WithOnLost function
// is called. It does nothing to a lease already stopped or lost.
func (e *Entry) Lose() {
	s := e.s
	s.mu.Lock()
	e.lose(errLost)
	s.mu.Unlock()
	s.notify()
}

// Lost returns a channel closed when the lease is lost or the Scheduler
// closed while the lease was still watched. It is never closed by Stop. Asked
// after the local deadline, it is closed.
func (e *Entry) Lost() <-chan struct{} {
	e.IsLost()
	if p := e.lost.Load(); p != nil {
		return *p
	}
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if p := e.lost.Load(); p != nil {
		return *p
	}
	ch := make(chan struct{})
	if e.gone.Load() {
		close(ch)
	}
	e.lost.Store(&ch)
	return ch
}

// IsLost reports whether the lease is lost (Lost is closed). Once its local
// deadline has passed it is, at the first look, whatever ran before: the
// look loses it (as the Scheduler's timer would). It costs two atomic loads
// and a reading of the monotonic clock while the lease is watched and its
// deadline ahead, and is safe to call in a tight loop.
func (e *Entry) IsLost() bool {
	if e.gone.Load() {
		return true
	}
	if monoNow() < e.dl.Load() {
		return false
	}
	s := e.s
	s.mu.Lock()
	lost := s.expireLocked(e, time.Now())
	s.mu.Unlock()
	if lost {
		s.notifySoon()
	}
	return e.gone.Load()
}

// Err returns why Lost was closed, or nil: ErrClosed when the Scheduler
// closed, another error when the lease was lost.
func (e *Entry) Err() error {
	e.IsLost()
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.err
}

// AfterLost arranges for f to run on a goroutine of its own when the lease
// is lost (at once if it is lost already, or its deadline has passed). A
// lease stopped without a loss never runs it. The returned stop unregisters
// f; it reports whether it stopped f from being run.
func (e *Entry) AfterLost(f func()) (stop func() bool) {
	no := func() bool { return false }
	if e.IsLost() {
		go f()
		return no
	}
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case e.gone.Load():
		go f()
		return no
	case e.stopped:
		return no
	}
	a := &afterLost{f: f}
	e.after = append(e.after, a)
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		i := slices.Index(e.after, a)
		if i < 0 {
			return false
		}
		e.after = slices.Delete(e.after, i, i+1)
		return true
	}
}

// Deadline returns the lease's current local deadline.
func (e *Entry) Deadline() time.Time {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.deadline
}

// lose marks the entry lost and queues it for the onLost callback (see
// notify). Called with mu held.
func (e *Entry) lose(err error) {
	if e.stopped {
		return
	}
	e.stopped = true
	e.err = err
	if e.index >= 0 {
		heap.Remove(&e.s.due, e.index)
	}
	if e.dindex >= 0 {
		heap.Remove(&e.s.byDeadline, e.dindex)
	}
	e.gone.Store(true)
	if p := e.lost.Load(); p != nil {
		close(*p)
	}
	for _, a := range e.after {
		go a.f()
	}
	e.after = nil
	if e.s.onLost != nil && !e.drained {
		e.s.justLost = append(e.s.justLost, e)
	}
}
