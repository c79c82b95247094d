package rlock

import (
	"errors"
	"fmt"
)

// Every error returned by this package wraps one of these sentinels, a
// context error, or a Redis error, inside an *Error naming the operation and
// the lock; test them with errors.Is.
var (
	// ErrNotHeld: the caller's owner does not hold the lock it unlocks
	// (Redisson's IllegalMonitorStateException), or a permit id is unknown,
	// released or expired (worded for a permit). Nothing changed.
	ErrNotHeld = errors.New("lock not held by this owner")
	// ErrClosed: the Client was closed (before the call, or during it).
	ErrClosed = errors.New("client closed")
	// ErrInvalidArgument: a nil client, lock or context, an empty name, a
	// lease or wait between 0 and 1 ms, a bad count or option.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrReentry: the holder of a non-reentrant lock took it again. Nothing
	// changed.
	ErrReentry = errors.New("non-reentrant lock already held by this owner")
	// ErrBusy: Do did not acquire the lock within its wait.
	ErrBusy = errors.New("lock busy")
	// ErrLockLost: the cause of a LostContext that ended because the hold
	// was lost, and the error of an acquisition that found the owner's
	// earlier hold gone (it holds nothing then).
	ErrLockLost = errors.New("lock lost")
	// ErrReplicaSync: too few replicas confirmed an acquisition in time
	// (WithReplicaSync); it was given back.
	ErrReplicaSync = errors.New("too few replicas confirmed the acquisition")
	// ErrNoQuorum: a RedLock's masters failed too often for a majority.
	ErrNoQuorum = errors.New("no quorum of masters reachable")
	// ErrUnknownOutcome: a release, count-down or permit release whose
	// reply was lost (the connection died): it may or may not have taken
	// effect (docs/guarantees.md says what is done about it).
	ErrUnknownOutcome = errors.New("outcome unknown: it may not have taken effect")
)

// Error describes a failed operation on a lock. Err is the cause: a sentinel
// of this package, a context error or a Redis error.
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
