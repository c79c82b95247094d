package engine

import (
	"context"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/internal/transport"
)

// The Lua calls of each kind of lock: the acquire and release scripts (a
// release script also settles a lost call, and lets a fair waiter leave the
// queue), the force unlock and the reads. Every call of an owner on a lock
// carries its call number (see lib/cancel.lua).

// acquireCall returns the acquire op of this kind. Every acquire script
// takes KEYS = [lock, cancel floor, ...] and ARGV = [lease ms, field, call
// number, ...]; fairWait is a fair lock's threadWaitTime, queue whether
// the attempt joins the queue, watchdog whether the hold is
// watchdog-managed (a reader's earlier holds then get its lease too), and
// known the holds the Client counts for the owner (lib/reenter.lua).
func (h *Handle) acquireCall(ctx context.Context, field string, keep time.Duration, n uint64, fairWait time.Duration, queue, watchdog bool, known int) *transport.Op {
	o := h.acquireOp(ctx, field, keep, n, fairWait, queue, watchdog, known)
	o.MarkFloor(callNumberArg)
	return o
}

// callNumberArg is where the call number sits in the arguments of every
// acquire and release script (ARGV[3]): read with the cancel floor, unless
// the call goes out as one the Client can fence (transport.Op.MarkFloor).
const callNumberArg = 2

// acquireOp is acquireCall's op, per kind.
func (h *Handle) acquireOp(ctx context.Context, field string, keep time.Duration, n uint64, fairWait time.Duration, queue, watchdog bool, known int) *transport.Op {
	lease, fieldArg := h.c.ms(keep), h.arg(field)
	switch h.kind {
	case KindFenced:
		return transport.NewScriptOp(ctx, fencedScript, h.acqKeys(), lease, fieldArg, n, known)
	case KindFair, KindNonReentrantFair:
		q := "0"
		if queue {
			q = "1"
		}
		return transport.NewScriptOp(ctx, fairAcquireScript, h.acqKeys(), lease, fieldArg, n, fairWait.Milliseconds(), q, reentrantArg(h.kind.reentrant()), known)
	case KindRead:
		acq := h.acqKeys()
		keys := append(acq[:len(acq):len(acq)], layout.ReadTimeoutPrefix(h.name, field))
		all := "0"
		if watchdog {
			all = "1"
		}
		return transport.NewScriptOp(ctx, readAcquireScript, keys, lease, fieldArg, n, field+":write", all, known)
	case KindWrite:
		return transport.NewScriptOp(ctx, writeAcquireScript, h.acqKeys(), lease, fieldArg, n, known)
	case KindFasterMulti:
		return transport.NewScriptOp(ctx, fasterAcquireScript, h.acqKeys(), append([]any{lease, fieldArg, n}, h.values()...)...)
	}
	return transport.NewScriptOp(ctx, acquireScript, h.acqKeys(), lease, fieldArg, n, reentrantArg(h.kind.reentrant()), known)
}

// reentrantArg is the acquire scripts' re-entry flag: "1" a holder takes
// another hold, "0" it is refused (NON_REENTRANT_REACQUIRE).
func reentrantArg(reentrant bool) string {
	if reentrant {
		return "1"
	}
	return "0"
}

// Modes of a release script (lib/settle.lua).
const (
	modeRelease       = "r" // drop one hold
	modeSettleAcquire = "a" // settle an acquire whose reply was lost
	modeSettleRelease = "u" // settle a release whose reply was lost
	modeGiveUp        = "g" // a fair waiter leaves the queue
)

// releaseCall returns the release op of this kind. Every release script
// takes KEYS = [lock, cancel floor, ...] and ARGV = [mode, field, call
// number, known holds, cancel TTL ms, ...]; lease is re-applied while holds
// remain, fairWait is a fair waiter's threadWaitTime (for a give-up).
func (h *Handle) releaseCall(ctx context.Context, mode, field string, n uint64, known int, lease, fairWait time.Duration) *transport.Op {
	o := h.releaseOp(ctx, mode, field, n, known, lease, fairWait)
	if mode == modeRelease {
		o.MarkFloor(callNumberArg)
	}
	return o
}

// releaseOp is releaseCall's op, per kind.
func (h *Handle) releaseOp(ctx context.Context, mode, field string, n uint64, known int, lease, fairWait time.Duration) *transport.Op {
	c, fieldArg := h.c, h.arg(field)
	switch h.kind {
	case KindFair, KindNonReentrantFair:
		return transport.NewScriptOp(ctx, fairReleaseScript, h.relKeys, mode, fieldArg, n, known, cancelTTLArg,
			c.ms(lease), c.pubArg, layout.UnlockMessage, fairWait.Milliseconds())
	case KindRead:
		keys := append(h.relKeys[:len(h.relKeys):len(h.relKeys)], layout.ReadTimeoutPrefix(h.name, field))
		return transport.NewScriptOp(ctx, readReleaseScript, keys, mode, fieldArg, n, known, cancelTTLArg,
			c.pubArg, layout.UnlockMessage, layout.ReadKeyPrefix(h.name))
	case KindWrite:
		return transport.NewScriptOp(ctx, writeReleaseScript, h.relKeys, mode, fieldArg, n, known, cancelTTLArg,
			c.ms(lease), c.pubArg, layout.ReadUnlockMessage)
	case KindFasterMulti:
		return transport.NewScriptOp(ctx, fasterReleaseScript, h.relKeys, append([]any{mode, fieldArg, n, known, cancelTTLArg,
			c.ms(lease), c.pubArg, layout.UnlockMessage}, h.values()...)...)
	case KindSpin: // Redisson's spin lock publishes nothing
		return transport.NewScriptOp(ctx, releaseScript, h.relKeys, mode, fieldArg, n, known, cancelTTLArg, c.ms(lease), "", layout.UnlockMessage)
	}
	return transport.NewScriptOp(ctx, releaseScript, h.relKeys, mode, fieldArg, n, known, cancelTTLArg, c.ms(lease), c.pubArg, layout.UnlockMessage)
}

// settleCall returns a maker of the settle op in mode (modeSettleAcquire
// or modeSettleRelease) of the lost call numbered n: Core.settle may send
// it more than once, a new op each time.
func (h *Handle) settleCall(ctx context.Context, mode, field string, n uint64, known int, lease, fairWait time.Duration) func() *transport.Op {
	return func() *transport.Op { return h.releaseCall(ctx, mode, field, n, known, lease, fairWait) }
}

// cancelTTLArg is cancelTTL in ms, boxed once.
var cancelTTLArg any = cancelTTL.Milliseconds()

// cancelTTL is how long a cancel floor lives: longer than any call can sit
// in a socket buffer or a hung server before it runs.
const cancelTTL = time.Minute

// ForceUnlock deletes the lock whoever holds it, waking its waiters as
// Redisson does for this kind, and reports whether there was one.
func (h *Handle) ForceUnlock(ctx context.Context) (bool, error) {
	c := h.c
	pub := c.pub
	var v any
	var err error
	switch h.kind {
	case KindSpin:
		v, err = c.command(ctx, "del", h.name)
	case KindFair, KindNonReentrantFair:
		keys := []string{h.name, layout.Channel(h.name), layout.Queue(h.Aux()), layout.Timeouts(h.Aux())}
		v, err = c.script(ctx, fairForceScript, keys, layout.UnlockMessage, pub)
	case KindRead:
		v, err = c.script(ctx, rwForceUnlockScript, []string{h.name, layout.RWChannel(h.name)}, "read", layout.UnlockMessage, pub)
	case KindWrite:
		v, err = c.script(ctx, rwForceUnlockScript, []string{h.name, layout.RWChannel(h.name)}, "write", layout.ReadUnlockMessage, pub)
	case KindFasterMulti:
		v, err = c.run(ctx, transport.NewScriptOp(ctx, fasterForceScript, []any{h.name, h.ch()}, append([]any{layout.UnlockMessage, pub}, h.values()...)...))
	default:
		v, err = c.script(ctx, forceUnlockScript, []string{h.name, layout.Channel(h.name)}, layout.UnlockMessage, pub)
	}
	if err != nil {
		return false, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, errUnexpected(v)
	}
	return n == 1, nil
}

// IsLocked reports whether anyone holds the lock; for the sides of a
// read-write lock, whether it is held in this side's way, as Redisson reads
// it: the write side when the mode is write; the read side when the mode is
// read, or write with more fields than the mode and the writer's (the
// writer also holds read holds).
func (h *Handle) IsLocked(ctx context.Context) (bool, error) {
	c := h.c
	switch h.kind {
	case KindFasterMulti:
		n, err := h.fasterRead(ctx, "locked", "")
		return n == 1, err
	case KindRead, KindWrite:
		v, err := c.command(ctx, "hget", h.name, "mode")
		if err != nil {
			return false, err
		}
		switch mode, _ := v.(string); {
		case h.kind == KindWrite:
			return mode == "write", nil
		case mode != "write":
			return mode == "read", nil
		}
		// Write mode: the read side is held when the writer also holds
		// read holds (a field besides "mode" and the writer's).
		n, err := c.commandInt(ctx, "hlen", h.name)
		return n > 2, err
	}
	n, err := c.commandInt(ctx, "exists", h.name)
	return n == 1, err
}

// holds returns the hold count of field on the lock as Redis has it (0:
// none).
func (h *Handle) holds(ctx context.Context, field string) (int64, error) {
	if h.kind == KindFasterMulti {
		return h.fasterRead(ctx, "holds", field)
	}
	return h.c.commandInt(ctx, "hget", h.name, field)
}

// PTTL returns the lock's remaining lease in ms as PTTL reports a key's:
// -2 when nobody holds it, -1 when it has no expiry. A faster multilock's
// is the longest remaining lease among the holds on its values.
func (h *Handle) PTTL(ctx context.Context) (int64, error) {
	if h.kind == KindFasterMulti {
		return h.fasterRead(ctx, "ttl", "")
	}
	return h.c.commandInt(ctx, "pttl", h.name)
}

// FencedToken returns the newest fencing token any client was issued on
// the lock (0: none) [getToken].
func (h *Handle) FencedToken(ctx context.Context) (int64, error) {
	return h.c.commandInt(ctx, "get", layout.Token(h.name))
}
