package transport

import (
	"context"
	"errors"
	"time"
)

// Exec, the caller's side of a call: it submits the op and waits for its
// outcome, its ctx's end (then endGrace more), Close or its call bound
// (bounds.go). A call its caller leaves is withdrawn when no byte of it was
// written yet (NotRun: claim.go), else abandoned (errAbandoned): rlock
// settles it as any lost reply.

// endGrace is how long a caller whose ctx ended still waits for its call's
// own outcome.
const endGrace = 5 * time.Millisecond

// errNoReply is the reason of a call abandoned at its wait's bound.
var errNoReply = errors.New("no reply from Redis within the wait")

// errAbandoned marks a call its caller stopped waiting for: its outcome is
// unknown to the caller. It wraps the reason: ctx's error or ErrClosed.
type errAbandoned struct{ reason error }

func (e errAbandoned) Error() string { return e.reason.Error() }
func (e errAbandoned) Unwrap() error { return e.reason }

// Abandoned reports whether err marks an abandoned call, and its reason.
func Abandoned(err error) (reason error, ok bool) {
	if err == nil {
		return nil, false
	}
	var ab errAbandoned
	if errors.As(err, &ab) {
		return ab.reason, true
	}
	return nil, false
}

// Exec sends o and waits for its outcome, ctx's end or the Client's Close
// (a clean-up, see Config.IsCleanup, is not ended by Close). The caller
// checked ctx and Close before. It returns nil once o is done (see
// Op.Outcome; a call withdrawn before its write is done, NotRun), else an
// error Abandoned recognizes.
func (s *Sender) Exec(ctx context.Context, o *Op) error {
	closing := s.closing(ctx)
	s.submit(o)
	var bound <-chan time.Time
	if d, ok := CallBound(ctx); ok {
		t := time.NewTimer(max(time.Until(d), 0) + CallGrace)
		defer t.Stop()
		bound = t.C
	}
	select {
	case <-o.done: // sent inline: done already
		return s.finished(ctx, o, closing)
	default:
	}
	select {
	case <-o.done:
		return s.finished(ctx, o, closing)
	case <-closing:
		return leave(o, s.cfg.ErrClosed)
	case <-bound:
		return leave(o, errNoReply)
	case <-ctx.Done():
	}
	if o.withdraw(ctx.Err()) {
		return nil // not written: NotRun (claim.go)
	}
	// A call that had not reached Redis yet (dialing, waiting for a
	// connection) ends with ctx, with its own reason: give it a moment, so
	// that the caller learns that reason and nothing needs settling.
	grace := time.NewTimer(endGrace)
	defer grace.Stop()
	select {
	case <-o.done:
		return s.finished(ctx, o, closing)
	case <-grace.C:
	case <-closing:
	}
	if closing != nil && s.cfg.Closed() {
		return leave(o, s.cfg.ErrClosed)
	}
	return leave(o, ctx.Err())
}

// leave ends the wait of a caller that stops waiting for o because of
// reason: o is withdrawn (nil: its outcome is NotRun) when no flusher took
// it yet, else abandoned (it may have run).
func leave(o *Op, reason error) error {
	if o.withdraw(reason) {
		return nil
	}
	return errAbandoned{reason}
}

// finished returns Exec's result for a done op: nil, or an errAbandoned
// when ctx's end or Close cut its read (runInline) before a reply came.
func (s *Sender) finished(ctx context.Context, o *Op, closing <-chan struct{}) error {
	if !o.cut || o.Outcome() != Unknown {
		return nil
	}
	if closing != nil && s.cfg.Closed() {
		return errAbandoned{s.cfg.ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return errAbandoned{err}
	}
	return nil
}
