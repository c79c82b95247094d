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
