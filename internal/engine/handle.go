package engine

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/layout"
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

// leaseData is what the watchdog keeps of a hold on this lock.
func (h *Handle) leaseData() leaseData {
	return leaseData{renew: h.kind.renewKind(), kind: h.kind, key: h.name, values: h.values()}
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

// channel is where waiters of field wait for unlock messages.
func (h *Handle) channel(field string) string {
	if h.kind.fairQueue() {
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

// KindErr reports what makes a lock of this kind unusable (nil: nothing):
// a faster multilock without values.
func (h *Handle) KindErr() error {
	if h.kind == KindFasterMulti && len(h.values()) == 0 {
		return fmt.Errorf("%w: a faster multilock needs at least one value", ErrInvalidArgument)
	}
	return nil
}
