package rlock

import (
	"fmt"

	"github.com/goredisson/goredisson/internal/transport"
)

// LostCallFence is how a Client fences a call whose reply was lost.
type LostCallFence int

// The fences; docs/internals.md#fencing-a-lost-call has what each sends.
const (
	FenceAuto  LostCallFence = iota // the default: a lost call's connection is closed (CLIENT KILL) where its id is known and the server sees the Client's own address; else FenceFloor
	FenceFloor                      // every acquire and release reads the lock's cancel floor (goredisson_cancel:{name}); no CLIENT command
	FenceByID                       // FenceAuto also through a NAT or 1:1 TCP proxy; never behind one that pools connections
)

// WithLostCallFence chooses the fence (default FenceAuto); either way a lost
// call never takes effect after its settle and Redisson sees the same commands.
func WithLostCallFence(f LostCallFence) Option {
	return func(o *options) {
		switch f {
		case FenceAuto:
			o.Fence = transport.FenceOwnAddr
		case FenceFloor:
			o.Fence = transport.FenceOff
		case FenceByID:
			o.Fence = transport.FenceAnyAddr
		default:
			o.errs = append(o.errs, fmt.Errorf("lost call fence %d: want FenceAuto, FenceFloor or FenceByID", int(f)))
		}
	}
}
