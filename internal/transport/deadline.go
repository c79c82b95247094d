package transport

import "context"

// DeadlineOnly is a context that, while a call runs on it, ends only at
// its deadline (its owner stops it once the call returned): the inline
// lane bounds the call's I/O by the deadline instead of watching it. A
// marker method, not a wrapper type, so that the engine's context is one
// pointer and passes as a context.Context without an allocation.
type DeadlineOnly interface {
	context.Context
	// EndsOnlyAtDeadline marks the context; it does nothing.
	EndsOnlyAtDeadline()
}
