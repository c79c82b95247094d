package rlock

import (
	"errors"
	"fmt"
)

// Every error returned by this package wraps one of these sentinels, a
// context error, or a Redis error, inside an *Error naming the operation and
// the lock; test them with errors.Is.
var (
	// ErrNotHeld is returned when the caller's owner does not hold the lock
	// it tried to unlock (Redisson's IllegalMonitorStateException), and,
	// worded for a permit ("permit with id ... has already been released or
	// does not exist", Redisson's IllegalArgumentException), when a permit id
	// to release or read is unknown, released already or expired. Nothing
	// changed.
	ErrNotHeld = errors.New("lock not held by this owner")
	// ErrClosed is returned by every call on a Client that was closed, and
	// to waiters and calls in flight when it closes.
	ErrClosed = errors.New("client closed")
	// ErrInvalidArgument is returned for a nil client, an empty lock name, a
	// nil lock in a group, a nil context, a lease or wait between 0 and 1 ms
	// (exclusive; <= 0 has a meaning of its own), and an option value that
	// makes no sense.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrReentry is returned when the owner that holds a non-reentrant lock
	// (NewNonReentrantLock) takes it again (Redisson's
	// IllegalMonitorStateException "is non-reentrant"). Nothing changed.
	ErrReentry = errors.New("non-reentrant lock already held by this owner")
	// ErrBusy is returned by Do when the lock was not acquired within its
	// wait.
	ErrBusy = errors.New("lock busy")
	// ErrLockLost is the cause of a LostContext that ended because the hold
	// was lost: its lease ran out without a confirmed renewal, the lock was
	// force-unlocked, or another owner took it.
	ErrLockLost = errors.New("lock lost")
	// ErrReplicaSync is returned, with WithReplicaSync, when too few
	// replicas confirmed an acquisition in time; it was given back.
	ErrReplicaSync = errors.New("too few replicas confirmed the acquisition")
	// ErrNoQuorum is returned by a RedLock when too many masters failed
	// (unreachable, erroring) for a majority to grant the lock.
	ErrNoQuorum = errors.New("no quorum of masters reachable")
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
