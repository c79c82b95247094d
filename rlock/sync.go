package rlock

import (
	"context"
	"fmt"
	"time"
)

// What the synchronizers (Semaphore, PermitExpirableSemaphore,
// CountDownLatch) share: a name on a Client, a check of each call, and a
// safety bound on waits.

// syncHandle is a synchronizer's name on a Client.
type syncHandle struct {
	c    *Client
	name string
	kind string // for errors and events: "semaphore", ...
}

// check validates a call: the handle, ctx, and the Client's state.
func (s *syncHandle) check(ctx context.Context, op string) error {
	switch {
	case s == nil || s.c == nil:
		return opErr(op, "", fmt.Errorf("%w: nil client", ErrInvalidArgument))
	case s.name == "":
		return opErr(op, "", fmt.Errorf("%w: empty name", ErrInvalidArgument))
	case ctx == nil:
		return opErr(op, s.name, fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case s.c.closed.Load():
		return opErr(op, s.name, ErrClosed)
	}
	return nil
}

// checkWait validates a wait: <= 0 is one attempt, below 1 ms a mistake.
func checkWait(wait time.Duration) error {
	if wait > 0 && wait < time.Millisecond {
		return fmt.Errorf("%w: wait %v is below 1ms (use <= 0 for one attempt)", ErrInvalidArgument, wait)
	}
	return nil
}

// run runs one of the synchronizer's scripts whose outcome the caller may
// lose without harm, or must report as unknown.
func (s *syncHandle) run(ctx context.Context, sc *script, keys []string, args ...any) (int64, error) {
	v, err := s.c.script(ctx, sc, keys, args...)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, errUnexpected(v)
	}
	return n, nil
}

// safetyPause bounds a synchronizer's wait between two attempts when no
// message is due (Redisson waits for the message alone): a permit set by
// hand, without a message, is found within it.
func (s *syncHandle) safetyPause() time.Duration { return s.c.opts.watchdogTimeout }

// waitDeadline returns when a wait ends (zero: until ctx ends).
func waitDeadline(wait time.Duration) time.Time {
	if wait > 0 {
		return time.Now().Add(wait)
	}
	return time.Time{}
}
