package transport

import (
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// What a done op's outcome is (Outcome: Replied, NotRun, Unknown), and the
// errors that prove that a command never reached Redis (notSent).

// Outcome classifies a done op.
type Outcome int

const (
	// Replied: a reply was read (o.V, possibly a ReplyError).
	Replied Outcome = iota
	// NotRun: the command certainly did not run: never sent, or refused
	// before it ran (NOSCRIPT, MOVED, LOADING, ...).
	NotRun
	// Unknown: sent, and no reply read; it may have run, or may still run.
	Unknown
)

// Outcome classifies the op once done.
func (o *Op) Outcome() Outcome {
	switch {
	case o.Err != nil && notSent(o.Err):
		return NotRun
	case o.Err != nil:
		return Unknown
	}
	if e, ok := o.V.(ReplyError); ok && e.NotRun() {
		return NotRun
	}
	return Replied
}

// Transient reports whether a done op that got no reply, or was refused
// before it ran (see Outcome), may get one if sent again: not when
// go-redis's client is closed, nor when its connection's set-up was
// refused (a wrong password: a Redis error in Err).
func (o *Op) Transient() bool {
	if o.Err == nil {
		return true // a refusal (LOADING, BUSY, READONLY, ...) or a reply
	}
	var re redis.Error
	return !errors.Is(o.Err, redis.ErrClosed) && !errors.As(o.Err, &re)
}

// ReplyErr returns the error of a done op: its transport error, or the
// error reply of Redis, or nil.
func (o *Op) ReplyErr() error {
	if o.Err != nil {
		return o.Err
	}
	if e, ok := o.V.(ReplyError); ok {
		return e
	}
	return nil
}

// notSentError marks an op that was never sent (its node could not be
// found): its outcome is notRun.
type notSentError struct{ err error }

func (e notSentError) Error() string { return e.err.Error() }
func (e notSentError) Unwrap() error { return e.err }

// unwrittenError marks an op sent inline that failed before a byte of its
// command was written (inline.Lane.Sent): its outcome is notRun. The node
// was reached (or is being dialed): unlike a dial failure, it is not
// forgotten (Sender.afterError).
type unwrittenError struct{ err error }

func (e unwrittenError) Error() string { return "not sent: " + e.err.Error() }
func (e unwrittenError) Unwrap() error { return e.err }

// notSent reports whether err proves that a command never reached Redis:
// it could not be sent (unreachable), or an inline call failed before a
// byte of it was written (unwrittenError). Its outcome is known.
func notSent(err error) bool {
	var uw unwrittenError
	return unreachable(err) || errors.As(err, &uw)
}

// unreachable reports whether err says that a command could not be sent:
// no connection could be made or taken from the pool, or set up (a refused
// AUTH or HELLO: go-redis returns a Redis error for a raw command only
// then, its replies being raw), or its node could not be found.
func unreachable(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		return true
	}
	var ns notSentError
	return errors.As(err, &ns) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}
