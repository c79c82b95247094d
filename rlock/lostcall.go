package rlock

import (
	"fmt"

	"github.com/goredisson/goredisson/internal/transport"
)

// LostCallFence says how a Client keeps a call whose reply was lost (the
// caller's context ended, the connection broke) from taking effect after it
// was settled: see WithLostCallFence.
type LostCallFence int

const (
	// FenceAuto (the default): an acquire or release that goes out on one
	// of the Client's own connections whose server-side id it learned when
	// the connection was set up (CLIENT INFO, and a CLIENT KILL that
	// matches nothing, to see that the ACL allows it) runs only Redisson's
	// commands; should its reply be lost, the Client closes that
	// connection on the server (CLIENT KILL ID <id> ADDR <addr> SKIPME
	// yes), after which Redis runs nothing more from it, then settles the
	// call. Every other call (the ACL refuses CLIENT, a proxy or NAT
	// between the Client and Redis, a connection still being set up, a
	// pipelined batch through the go-redis pool) reads the cancel floor
	// as with FenceFloor.
	FenceAuto LostCallFence = iota
	// FenceFloor: every acquire and release script first reads the
	// lock's cancel floor (goredisson_cancel:{name}), which the settle of
	// a lost call raises; no CLIENT command is sent.
	FenceFloor
	// FenceByID is FenceAuto also for connections the server sees from
	// another address than the Client's own: through a NAT, or a TCP
	// proxy that relays each connection on one upstream connection of its
	// own and never replays bytes onto another (HAProxy in TCP mode,
	// stunnel, toxiproxy), where closing the upstream connection stops
	// the call. Never use it behind a proxy that pools or multiplexes
	// upstream connections (twemproxy, Envoy's Redis proxy, a Redis-aware
	// cloud proxy): there FenceAuto finds the address differs and falls
	// back to the floor.
	FenceByID
)

// WithLostCallFence chooses how lost calls are fenced (default FenceAuto).
// Either way a call whose reply was lost never takes effect after it was
// settled, and Redisson sees the same commands on the lock's hash and
// channel; FenceAuto saves Redis one HGET per uncontended acquire and
// release (docs/internals.md, "Fencing a lost call").
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
