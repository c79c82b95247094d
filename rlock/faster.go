package rlock

import (
	"context"
	"slices"
	"strings"

	"github.com/goredisson/goredisson/internal/highwayhash"
	"github.com/goredisson/goredisson/internal/layout"
)

// NewFasterMultiLock returns the lock on many values of one group, held all
// together, in one Redis hash and by one script [getMultiLock(group,
// values)] (Redisson 3.38.0's RedissonFasterMultiLock): where a MultiLock
// takes one lock per name, one call after the other, this takes every value
// in one script call on the hash named group. A value held by another
// owner, and not expired, makes the attempt fail as a whole; an owner's
// values are all taken, or none.
//
// The layout is Redisson's: the hash's key is group; each value v has the
// field F(v) = its 128-bit HighwayHash (Redisson's Hash.hash128toBase64)
// holding the holder's "<client id>:<owner>", and the holder's fields
// "F(v):<holder>:expire_time" (the hold's deadline in ms) and
// "F(v):<holder>:lock_count" (re-entries). The key's own expiry only grows
// (to the longest lease in it); a value's hold ends at its expire_time.
// Waiters sleep on redisson_lock__channel:{group}, and every unlock
// publishes "0" there, as Redisson's.
//
// A value is hashed as its UTF-8 bytes, which is how Redisson encodes a
// String with StringCodec. A Redisson client encodes values with its codec
// (Config.setCodec; Kryo5Codec by default), so a Java service shares these
// locks only when the values it passes encode to the same bytes: with
// StringCodec, pass the same strings; with another codec, pass here the
// codec's encoding of the value as a string (JsonJacksonCodec encodes a
// String as its JSON text, quotes included).
//
// Holds and leases follow Locker: the watchdog renews every value's
// expire_time; re-entry counts per value. Where Redisson differs:
// getHoldCount and remainTimeToLive throw UnsupportedOperationException;
// here HoldCount is the owner's complete holds (the smallest count over the
// values, 0 unless it holds all), RemainTTL the longest remaining lease
// among the values' holds (0 when none is held). Unlock changes nothing
// when the owner does not hold every value (Redisson decrements the values
// it still holds, then refuses); ForceUnlock reports whether any value was
// held (Redisson: whether exactly one was). Taking a value whose earlier
// hold expired starts its count afresh and removes the expired holder's
// fields (Redisson adds to a stale count and leaves them).
//
// Empty values are allowed, duplicates count once; no values at all, or an
// empty group, is ErrInvalidArgument from every method.
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
	fields := fasterFields(values)
	h.values = boxAll(fields)
	digest := highwayhash.RedissonBase64([]byte(strings.Join(fields, ",")))
	h.ledger = group + "\x00" + digest
	cancel := layout.Cancel(group) + ":" + digest
	h.acqKeys = boxAll([]string{group, cancel})
	h.relKeys = boxAll([]string{group, cancel, layout.Channel(group)})
	if len(values) == 0 {
		h.values = nil
	}
	return h
}

// fasterRead runs one of faster_read.lua's reads on the lock's values.
func (h *handle) fasterRead(ctx context.Context, op, field string) (int64, error) {
	return h.c.runInt(ctx, newScriptOp(ctx, fasterReadScript, []any{h.name}, append([]any{op, field}, h.values...)...))
}
