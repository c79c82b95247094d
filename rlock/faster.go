package rlock

import (
	"context"
	"slices"
	"strings"

	"github.com/goredisson/goredisson/internal/highwayhash"
	"github.com/goredisson/goredisson/internal/layout"
)

// NewFasterMultiLock returns the all-or-none lock on values of a group
// [getMultiLock(group, values)].
func (c *Client) NewFasterMultiLock(group string, values ...string) *Lock {
	return &Lock{h: newFasterHandle(c, group, values)}
}

// fasterFields returns the hash fields of values: sorted, without
// duplicates.
func fasterFields(values []string) []string {
	fields := make([]string, 0, len(values))
	for _, v := range values {
		fields = append(fields, highwayhash.RedissonBase64([]byte(v)))
	}
	slices.Sort(fields)
	return slices.Compact(fields)
}

// newFasterHandle returns the handle of a faster multilock. Its holds are
// kept in the ledger, and its lost calls are cancelled, per set of values:
// two faster multilocks on one group with other values are other locks.
func newFasterHandle(c *Client, group string, values []string) handle {
	h := newHandle(c, group, kindFasterMulti)
	group = h.name // under the NameMapper
	fields := fasterFields(values)
	digest := highwayhash.RedissonBase64([]byte(strings.Join(fields, ",")))
	x := h.extra()
	x.ledger, x.values = group+"\x00"+digest, boxAll(fields)
	cancel := layout.Cancel(group) + ":" + digest
	x.acqKeys = boxAll([]string{group, cancel})
	h.relKeys = boxAll([]string{group, cancel, layout.Channel(group)})
	if len(values) == 0 {
		x.values = nil
	}
	return h
}

// fasterRead runs one of faster_read.lua's reads on the lock's values.
func (h *handle) fasterRead(ctx context.Context, op, field string) (int64, error) {
	return h.c.runInt(ctx, newScriptOp(ctx, fasterReadScript, []any{h.name}, append([]any{op, field}, h.values()...)...))
}

// perClass reports whether the attempt's waiters are woken one per class
// (see waitClass).
func (a *attempt) perClass() bool { return a.h.wakesPerClass() }

// waitClass is the class of a faster multilock waiter among the waiters of
// its Client on the group's channel (see pubsub.WakePerClass): its lock's
// values, so that an unlock wakes one waiter per value set. The waiters of
// a class must all be kept out by the same holds: an owner that holds some
// of the group's values itself (through another of its faster multilocks)
// is not kept out by them, where the others are, so it is a class of its
// own. (Holds the owner takes on the group while it waits, in another
// goroutine, are not seen.)
func (a *attempt) waitClass() string {
	h := a.h
	if h.kind != kindFasterMulti {
		return ""
	}
	if h.c.holds.holdsOn(h.name+"\x00", a.key.field) {
		return h.ledgerName() + "\x00" + a.key.field
	}
	return h.ledgerName()
}

// holdsOn reports whether field has a hold, not known lost, on a lock
// whose ledger name starts with prefix (a faster multilock's group).
func (l *ledger) holdsOn(prefix, field string) bool {
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for k, h := range s.m {
			if k.field == field && h.count > 0 && strings.HasPrefix(k.name, prefix) && !h.lost() {
				s.mu.Unlock()
				return true
			}
		}
		s.mu.Unlock()
	}
	return false
}
