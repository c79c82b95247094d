package rlock

import (
	"errors"
	"fmt"

	"github.com/goredisson/goredisson/watchdog"
)

// Sentinel errors. Every error returned by this package wraps one of them, a
// context error, or a Redis error, inside an *Error naming the operation and
// the lock; test them with errors.Is.
var (
	// ErrNotHeld: the caller's owner does not hold the lock it tried to
	// unlock (Redisson's IllegalMonitorStateException). Nothing changed.
	ErrNotHeld = errors.New("lock not held by this owner")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client closed")
	// ErrInvalidArgument: a nil client, an empty lock name, a nil lock, or
	// an option value that makes no sense.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrReplicaSync: with WithReplicaSync, too few replicas confirmed an
	// acquisition in time; it was given back.
	ErrReplicaSync = errors.New("too few replicas confirmed the acquisition")
	// ErrLockLost is the cause reported when the watchdog finds a hold lost:
	// the lease expired, the lock was force-unlocked, or another owner took
	// it. It is watchdog.ErrLost.
	ErrLockLost = watchdog.ErrLost
)

// Error describes a failed operation on a lock. Err is the cause: a sentinel
// of this package, a context error or a Redis error.
type Error struct {
	Op   string // "lock", "trylock", "unlock", "forceunlock", ...
	Lock string // the lock's name
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("goredisson: %s %q: %v", e.Op, e.Lock, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func opErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Lock: name, Err: err}
}
