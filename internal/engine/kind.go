package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/layout"
)

// kind is a lock type's layout on Redis: which scripts take and give back
// its holds and how its waiters wait. Everything that differs between the
// lock types is decided here, from the handle's kind.
type Kind uint8

const (
	KindLock             Kind = iota // Lock: RLock hash, waiters on redisson_lock__channel
	KindSpin                         // SpinLock: RLock hash, no messages, backoff
	KindFenced                       // FencedLock: RLock hash + token counter
	KindFair                         // FairLock: RLock hash + queue; each waiter on its own channel
	KindRead                         // the read side of a ReadWriteLock
	KindWrite                        // the write side of a ReadWriteLock
	KindNonReentrant                 // Lock from NewNonReentrantLock: RLock hash, re-entry refused
	KindNonReentrantFair             // Lock from NewNonReentrantFairLock: FairLock layout, re-entry refused
	KindFasterMulti                  // Lock from NewFasterMultiLock: many values in one group hash
)

// Handle is what every single-key lock holds (rlock's Lock and
// FencedLock): the Client's engine, the lock's name and kind, and the keys
// derived from them once.
type Handle struct {
	c    *Core
	name string // the Redis key: the name under the NameMapper
	kind Kind
	// relKeys are the keys of the release script that do not depend on
	// the owner, boxed once (see NewHandle); the acquire script's are
	// acqKeys(); the third is the channel (ch()).
	relKeys []any
	// x holds what only some locks need (nil for a Lock whose name is
	// not mapped): the struct then fits 96 bytes (memory per waiter). A
	// FairLock's threadWaitTime and a SpinLock's backoff are the Client's
	// (c.cfg).
	x *handleExtra
	// lastField is the hash field field built last (a string), leaseBoxed
	// leaseData boxed (see leaseBox).
	lastField, leaseBoxed atomic.Value
}

// handleExtra is what some handles have more.
type handleExtra struct {
	// acqKeys are the acquire script's keys when they are not the first
	// two release keys (fenced, fair and faster multilocks).
	acqKeys []any
	// logical is the name the lock was made with (Name) when the
	// NameMapper changed it, aux the name a fair lock's queue and timeouts
	// derive from when it is not the key (see mapName), nameErr what the
	// NameMapper made of the name.
	logical, aux string
	nameErr      error
	// ledger names a faster multilock in the Client's ledger of holds (its
	// holds on one group differ by their values, see NewFasterHandle);
	// values are its value fields, boxed as script arguments.
	ledger string
	values []any
}

// Core returns the engine of the lock's Client (nil: none).
func (h *Handle) Core() *Core { return h.c }

// Key returns the lock's Redis key: its name under the NameMapper.
func (h *Handle) Key() string { return h.name }

// Kind returns the lock's kind.
func (h *Handle) Kind() Kind { return h.kind }

// extra returns h.x, made on first use (while the handle is made).
func (h *Handle) extra() *handleExtra {
	if h.x == nil {
		h.x = new(handleExtra)
	}
	return h.x
}

// values returns a faster multilock's value fields (nil for other kinds).
func (h *Handle) values() []any {
	if h.x == nil {
		return nil
	}
	return h.x.values
}

// acqKeys returns the acquire script's keys that do not depend on the owner.
func (h *Handle) acqKeys() []any {
	if h.x != nil && h.x.acqKeys != nil {
		return h.x.acqKeys
	}
	return h.relKeys[:2:2]
}

// Logical is the name the lock was made with.
func (h *Handle) Logical() string {
	if h.x != nil && h.x.logical != "" {
		return h.x.logical
	}
	return h.name
}

// Aux is the name a fair lock's queue and timeouts derive from.
func (h *Handle) Aux() string {
	if h.x != nil && h.x.aux != "" {
		return h.x.aux
	}
	return h.name
}

// NameErr is what the NameMapper made of the name.
func (h *Handle) NameErr() error {
	if h.x == nil {
		return nil
	}
	return h.x.nameErr
}

// holdKey names the hold of field on this lock in the Client's ledger.
func (h *Handle) holdKey(field string) holdKey { return holdKey{h.LedgerName(), field} }

// LedgerName is the lock's name in the Client's ledger of holds.
func (h *Handle) LedgerName() string {
	if h.x != nil && h.x.ledger != "" {
		return h.x.ledger
	}
	return h.name
}

// OpName names the operation in errors: "lock", "trylock", "unlock", ...
func (h *Handle) OpName(op string) string {
	if h == nil {
		return op
	}
	switch h.kind {
	case KindRead:
		return "read" + op
	case KindWrite:
		return "write" + op
	}
	return op
}

// suffix follows the owner's field: the writer of a read-write lock is
// "<client id>:<owner>:write".
func (h *Handle) suffix() string {
	if h.kind == KindWrite {
		return ":write"
	}
	return ""
}

// Field returns the hash field of ctx's owner on this lock.
// The last one built is kept (lastField): an Unlock finds its Lock's.
func (h *Handle) Field(ctx context.Context) string {
	id, owner, suffix := h.c.id, ctxowner.Of(ctx), h.suffix()
	if f, ok := h.lastField.Load().(string); ok && len(f) == len(id)+1+len(owner)+len(suffix) &&
		f[len(id)+1:len(f)-len(suffix)] == owner {
		return f
	}
	f := id + ":" + owner + suffix
	h.lastField.Store(f)
	return f
}

// arg returns field boxed as a script argument: lastField as stored, with
// no allocation, when it is that field.
func (h *Handle) arg(field string) any {
	if v := h.lastField.Load(); v != nil {
		if f, _ := v.(string); f == field {
			return v
		}
	}
	return field
}

// spins reports whether waiters retry with backoff instead of waiting for
// messages (SpinLock).
func (h *Handle) spins() bool { return h.kind == KindSpin }

// fairQueue reports whether waiters queue in Redis (FairLock): a waiter's
// threadWaitTime is its wait, a waiter that gives up leaves the queue, and
// a queued waiter's attempts refresh its place.
func (h *Handle) fairQueue() bool { return h.kind == KindFair || h.kind == KindNonReentrantFair }

// reentrant reports whether the owner that holds the lock may take it
// again (a second hold), rather than be refused with ErrReentry.
func (h *Handle) reentrant() bool {
	return h.kind != KindNonReentrant && h.kind != KindNonReentrantFair
}

// extendsOnReentry reports whether a re-entry extends the lease by the new
// one instead of setting it (a write lock, as Redisson's), which is also the
// side that may be downgraded to the owner's read holds.
func (h *Handle) extendsOnReentry() bool { return h.kind == KindWrite }

// String names a lock kind in events.
func (k Kind) String() string {
	switch k {
	case KindSpin:
		return "spinlock"
	case KindFenced:
		return "fencedlock"
	case KindFair:
		return "fairlock"
	case KindRead:
		return "readlock"
	case KindWrite:
		return "writelock"
	case KindNonReentrant:
		return "nonreentrantlock"
	case KindNonReentrantFair:
		return "nonreentrantfairlock"
	case KindFasterMulti:
		return "fastermultilock"
	}
	return "lock"
}

// extendable reports whether Extend can set the kind's lease: not a
// FasterMultiLock's, whose values each carry their own expiry.
func (h *Handle) extendable() bool { return h.kind != KindFasterMulti }

// extendMode tells extend.lua how the kind keeps a holder's lease: "read"
// for the read side (timeout keys per hold), "" for the lock key alone.
func (h *Handle) extendMode() string {
	if h.kind == KindRead {
		return "read"
	}
	return ""
}

// renewKind selects the renewal script of a watchdog lease.
type renewKind uint8

const (
	renewHash   renewKind = iota // renew.lua: the hash, while the field holds it
	renewRead                    // read_renew.lua: the hash and the reader's timeout keys
	renewFaster                  // faster_renew.lua: a faster multilock's values in its group hash
	renewPermit                  // permits.lua 'update': a kept permit's lease (see KeptPermit)
)

func (h *Handle) renewKind() renewKind {
	switch h.kind {
	case KindRead:
		return renewRead
	case KindFasterMulti:
		return renewFaster
	}
	return renewHash
}

// leaseData is what the watchdog keeps of a hold on this lock.
func (h *Handle) leaseData() leaseData {
	return leaseData{renew: h.renewKind(), kind: h.kind, key: h.name, values: h.values()}
}

// leaseBox returns leaseData boxed, once per handle: a hold taken costs no
// allocation for it.
func (h *Handle) leaseBox() any {
	if v := h.leaseBoxed.Load(); v != nil {
		return v
	}
	var v any = h.leaseData()
	h.leaseBoxed.Store(v)
	return v
}

// queues reports whether a new waiter on this kind queues behind the
// Client's waiters already on the lock instead of racing them (see
// waitSpec.queue): for the exclusive locks and a read-write lock's writers,
// woken one per unlock in a Client, and a faster multilock's waiters, woken
// one per value set (they queue behind waiters on the same values only, see
// pubsub.Sub.QueueBehind). Not for its readers (a reader must not wait
// behind a writer of its own Client that Redisson would let it pass), nor
// for a fair lock, whose queue is in Redis.
func (h *Handle) queues() bool {
	return h.kind == KindLock || h.kind == KindNonReentrant || h.kind == KindFenced || h.kind == KindWrite || h.kind == KindFasterMulti
}

// channel is where waiters of field wait for unlock messages.
func (h *Handle) channel(field string) string {
	if h.fairQueue() {
		return layout.FairChannel(h.name, field)
	}
	return h.ch()
}

// ch is the channel waiters wait on, for every kind but the fair lock
// (whose waiters each have their own): every kind's third release key
// (kept there only, memory per waiter).
func (h *Handle) ch() string {
	s, _ := h.relKeys[2].(string)
	return s
}

// NewHandle returns the handle of a lock: its keys are derived once here,
// not on every call.
func NewHandle(c *Core, name string, k Kind) Handle {
	m := c.mapName(name, k, "")
	logical := name
	name = m.key
	h := Handle{c: c, name: name, kind: k}
	if logical != name {
		h.extra().logical = logical
	}
	if m.aux != name {
		h.extra().aux = m.aux
	}
	if m.err != nil {
		h.extra().nameErr = m.err
	}
	var ch any
	if k == KindRead || k == KindWrite {
		ch = layout.RWChannel(name)
	} else {
		ch = layout.Channel(name)
	}
	// Each key is made and boxed once, and shared by both lists: the
	// release keys of most kinds are the acquire keys and the channel
	// (memory per waiter, docs/benchmarks.md).
	key, cancel := any(name), any(layout.Cancel(name))
	switch k {
	case KindFenced:
		h.extra().acqKeys = []any{key, cancel, layout.Token(name)}
		h.relKeys = []any{key, cancel, ch}
	case KindFair, KindNonReentrantFair:
		queue, timeouts := any(layout.Queue(m.aux)), any(layout.Timeouts(m.aux))
		h.extra().acqKeys = []any{key, cancel, queue, timeouts}
		h.relKeys = []any{key, cancel, ch, queue, timeouts}
	default: // the read-write lock's halves too (+ the reader's timeout prefix)
		h.relKeys = []any{key, cancel, ch} // acqKeys: the first two
	}
	return h
}

func boxAll(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// acquireCall returns the acquire op of this kind. Every acquire script
// takes KEYS = [lock, cancel floor, ...] and ARGV = [lease ms, field, call
// number, ...]; fairWait is a fair lock's threadWaitTime, queue whether
// the attempt joins the queue, watchdog whether the hold is
// watchdog-managed (a reader's earlier holds then get its lease too), and
// known the holds the Client counts for the owner (lib/reenter.lua).
func (h *Handle) acquireCall(ctx context.Context, field string, keep time.Duration, n uint64, fairWait time.Duration, queue, watchdog bool, known int) *op {
	lease, fieldArg := h.c.ms(keep), h.arg(field)
	switch h.kind {
	case KindFenced:
		return newScriptOp(ctx, fencedScript, h.acqKeys(), lease, fieldArg, n, known)
	case KindFair, KindNonReentrantFair:
		q := "0"
		if queue {
			q = "1"
		}
		return newScriptOp(ctx, fairAcquireScript, h.acqKeys(), lease, fieldArg, n, fairWait.Milliseconds(), q, reentrantArg(h.reentrant()), known)
	case KindRead:
		acq := h.acqKeys()
		keys := append(acq[:len(acq):len(acq)], layout.ReadTimeoutPrefix(h.name, field))
		all := "0"
		if watchdog {
			all = "1"
		}
		return newScriptOp(ctx, readAcquireScript, keys, lease, fieldArg, n, field+":write", all, known)
	case KindWrite:
		return newScriptOp(ctx, writeAcquireScript, h.acqKeys(), lease, fieldArg, n, known)
	case KindFasterMulti:
		return newScriptOp(ctx, fasterAcquireScript, h.acqKeys(), append([]any{lease, fieldArg, n}, h.values()...)...)
	}
	return newScriptOp(ctx, acquireScript, h.acqKeys(), lease, fieldArg, n, reentrantArg(h.reentrant()), known)
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
func (h *Handle) releaseCall(ctx context.Context, mode, field string, n uint64, known int, lease, fairWait time.Duration) *op {
	c, fieldArg := h.c, h.arg(field)
	switch h.kind {
	case KindFair, KindNonReentrantFair:
		return newScriptOp(ctx, fairReleaseScript, h.relKeys, mode, fieldArg, n, known, cancelTTLArg,
			c.ms(lease), c.pubArg, layout.UnlockMessage, fairWait.Milliseconds())
	case KindRead:
		keys := append(h.relKeys[:len(h.relKeys):len(h.relKeys)], layout.ReadTimeoutPrefix(h.name, field))
		return newScriptOp(ctx, readReleaseScript, keys, mode, fieldArg, n, known, cancelTTLArg,
			c.pubArg, layout.UnlockMessage, layout.ReadKeyPrefix(h.name))
	case KindWrite:
		return newScriptOp(ctx, writeReleaseScript, h.relKeys, mode, fieldArg, n, known, cancelTTLArg,
			c.ms(lease), c.pubArg, layout.ReadUnlockMessage)
	case KindFasterMulti:
		return newScriptOp(ctx, fasterReleaseScript, h.relKeys, append([]any{mode, fieldArg, n, known, cancelTTLArg,
			c.ms(lease), c.pubArg, layout.UnlockMessage}, h.values()...)...)
	case KindSpin: // Redisson's spin lock publishes nothing
		return newScriptOp(ctx, releaseScript, h.relKeys, mode, fieldArg, n, known, cancelTTLArg, c.ms(lease), "", layout.UnlockMessage)
	}
	return newScriptOp(ctx, releaseScript, h.relKeys, mode, fieldArg, n, known, cancelTTLArg, c.ms(lease), c.pubArg, layout.UnlockMessage)
}

// settleCall returns a maker of the settle op in mode (modeSettleAcquire
// or modeSettleRelease) of the lost call numbered n: Core.settle may send
// it more than once, a new op each time.
func (h *Handle) settleCall(ctx context.Context, mode, field string, n uint64, known int, lease, fairWait time.Duration) func() *op {
	return func() *op { return h.releaseCall(ctx, mode, field, n, known, lease, fairWait) }
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
		v, err = c.run(ctx, newScriptOp(ctx, fasterForceScript, []any{h.name, h.ch()}, append([]any{layout.UnlockMessage, pub}, h.values()...)...))
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

// script runs a script whose outcome the caller may lose without harm (a
// force unlock, a read) and returns its reply.
func (c *Core) script(ctx context.Context, s *script, keys []string, args ...any) (any, error) {
	return c.run(ctx, newScriptOp(ctx, s, boxAll(keys), args...))
}

// run sends o and returns its reply; an error reply or a lost one is an
// error.
func (c *Core) run(ctx context.Context, o *op) (any, error) {
	if err := c.exec(ctx, o); err != nil {
		return nil, err
	}
	if err := o.ReplyErr(); err != nil {
		return nil, err
	}
	return o.V, nil
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

// KindErr reports what makes a lock of this kind unusable (nil: nothing):
// a faster multilock without values.
func (h *Handle) KindErr() error {
	if h.kind == KindFasterMulti && len(h.values()) == 0 {
		return fmt.Errorf("%w: a faster multilock needs at least one value", ErrInvalidArgument)
	}
	return nil
}

// Inspectable reports whether package inspect can read the lock off its
// key: not a faster multilock, whose values share a group hash with other
// value sets and are not hold counts.
func (h *Handle) Inspectable() bool { return h.kind != KindFasterMulti }

// wakesPerClass reports whether a message on the lock's channel wakes a
// waiter of the Client per class on it (see Core.wakes and
// attempt.waitClass): for a faster multilock, whose waiters on one group
// channel may wait for different values.
func (h *Handle) wakesPerClass() bool { return h.kind == KindFasterMulti }

// FencedToken returns the newest fencing token any client was issued on
// the lock (0: none) [getToken].
func (h *Handle) FencedToken(ctx context.Context) (int64, error) {
	return h.c.commandInt(ctx, "get", layout.Token(h.name))
}
