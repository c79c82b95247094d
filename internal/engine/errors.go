package engine

import (
	"errors"
	"fmt"
)

// The errors the engine's calls wrap (rlock re-exports them under the same
// names, where their meaning is documented).
var (
	ErrNotHeld         = errors.New("lock not held by this owner")
	ErrClosed          = errors.New("client closed")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrReentry         = errors.New("non-reentrant lock already held by this owner")
	ErrLockLost        = errors.New("lock lost")
	ErrReplicaSync     = errors.New("too few replicas confirmed the acquisition")
	ErrUnknownOutcome  = errors.New("outcome unknown: it may not have taken effect")
)

// PermitLostError is the ErrLockLost of a kept permit, worded for a
// permit: "permit <id> lost".
type PermitLostError struct{ ID string }

func (e *PermitLostError) Error() string {
	return "permit " + e.ID + " lost (its lease ran out unrenewed, or it was released or removed elsewhere)"
}

// Is makes the error ErrLockLost for errors.Is.
func (e *PermitLostError) Is(target error) bool { return target == ErrLockLost }

// errUnexpected reports a reply of a shape no script gives.
func errUnexpected(v any) error {
	return fmt.Errorf("goredisson: unexpected reply %v", v)
}

// unknownOutcome is the error of a call whose outcome is unknown.
func unknownOutcome(cause error) error {
	return fmt.Errorf("%w: %w", ErrUnknownOutcome, cause)
}
