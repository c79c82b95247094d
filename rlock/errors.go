package rlock

import (
	"errors"
	"fmt"

	"github.com/goredisson/goredisson/internal/engine"
)

// Every error here is an *Error wrapping these, a context or a Redis error.
var (
	ErrNotHeld         = engine.ErrNotHeld                            // the owner holds none, or a permit id is not held
	ErrClosed          = engine.ErrClosed                             // the Client was closed (before the call, or during it)
	ErrInvalidArgument = engine.ErrInvalidArgument                    // a nil or empty argument, a bad count, lease or wait
	ErrReentry         = engine.ErrReentry                            // a non-reentrant lock's holder took it again
	ErrBusy            = errors.New("lock busy")                      // Do did not acquire the lock within its wait
	ErrLockLost        = engine.ErrLockLost                           // a hold was lost (LostContext's cause, a re-entry's error)
	ErrReplicaSync     = engine.ErrReplicaSync                        // too few replicas confirmed an acquisition in time
	ErrNoQuorum        = errors.New("no quorum of masters reachable") // a RedLock's masters failed too often for a majority
	ErrUnknownOutcome  = engine.ErrUnknownOutcome                     // a release's reply was lost; it may not have run
)

// Error is a failed operation on a lock; Err is its cause.
type Error struct {
	Op   string // "lock", "trylock", "unlock", "forceunlock", ...
	Lock string // the lock's name
	Err  error
}

// Error returns "goredisson: <op> "<lock>": <cause>".
func (e *Error) Error() string {
	return fmt.Sprintf("goredisson: %s %q: %v", e.Op, e.Lock, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// opErr wraps err with the operation and lock name; nil stays nil, and an
// *Error is not wrapped twice.
func opErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && e.Lock == name {
		return err
	}
	return &Error{Op: op, Lock: name, Err: err}
}
