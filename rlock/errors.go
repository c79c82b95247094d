package rlock

import (
	"errors"
	"fmt"

	"github.com/goredisson/goredisson/internal/engine"
)

// Every error of this package wraps one of these, a context or a Redis
// error, in an *Error; test them with errors.Is (docs/api.md).
var (
	// ErrNotHeld: the owner holds none, or a permit id is not held. A
	// lock's error names the caller's owner and who holds the lock.
	ErrNotHeld = engine.ErrNotHeld
	// ErrClosed: the Client was closed (before the call, or during it).
	ErrClosed = engine.ErrClosed
	// ErrInvalidArgument: a nil or empty argument, a bad count, lease or wait.
	ErrInvalidArgument = engine.ErrInvalidArgument
	// ErrReentry: a non-reentrant lock's holder took it again.
	ErrReentry = engine.ErrReentry
	// ErrBusy: Do did not acquire the lock within its wait.
	ErrBusy = errors.New("lock busy")
	// ErrLockLost: a hold was lost (LostContext's cause, a re-entry's error).
	ErrLockLost = engine.ErrLockLost
	// ErrReplicaSync: too few replicas confirmed an acquisition in time.
	ErrReplicaSync = engine.ErrReplicaSync
	// ErrNoQuorum: a RedLock's masters failed too often for a majority.
	ErrNoQuorum = errors.New("no quorum of masters reachable")
	// ErrUnknownOutcome: a release's reply was lost; it may not have run.
	ErrUnknownOutcome = engine.ErrUnknownOutcome
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
