package rlock

import (
	"context"
	"fmt"

	"github.com/goredisson/goredisson/inspect"
)

// handleOf returns the handle of a *Lock or *FencedLock, else nil.
func handleOf(l Locker) *handle {
	switch x := l.(type) {
	case *Lock:
		return x.handle()
	case *FencedLock:
		return x.handle()
	}
	return nil
}

// Inspect reads a single-key lock's state off Redis (docs/api.md).
func Inspect(ctx context.Context, l Locker) (*inspect.Info, error) {
	x, ok := l.(identified)
	if !ok {
		return nil, opErr("inspect", nameOf(l), fmt.Errorf("%w: %T is not a single-key lock of this package", ErrInvalidArgument, l))
	}
	if lk, ok := l.(*Lock); ok && lk != nil && !lk.h.Kind().Inspectable() {
		return nil, opErr("inspect", lk.Name(), fmt.Errorf("%w: a faster multilock's values are not one lock key", ErrInvalidArgument))
	}
	rdb, name := x.identity()
	if rdb == nil {
		return nil, opErr("inspect", name, fmt.Errorf("%w: nil client", ErrInvalidArgument))
	}
	if name == "" {
		return nil, opErr("inspect", "", fmt.Errorf("%w: empty lock name", ErrInvalidArgument))
	}
	if h := handleOf(l); h != nil && h.Aux() != "" && h.Aux() != h.Key() {
		// The fair queue and timeouts are under another name (Redisson
		// before 3.52 under a NameMapper).
		if ctx == nil {
			return nil, opErr("inspect", name, fmt.Errorf("%w: nil context", ErrInvalidArgument))
		}
		info, err := h.Inspect(ctx)
		return info, opErr("inspect", name, err)
	}
	info, err := inspect.Lock(ctx, rdb, name)
	return info, opErr("inspect", name, err)
}

// HolderField returns the hash field of ctx's owner in l [getLockName].
func HolderField(ctx context.Context, l Locker) (string, error) {
	if ctx == nil {
		return "", opErr("holderfield", nameOf(l), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	}
	var h *handle
	switch x := l.(type) {
	case *Lock:
		h = x.handle()
	case *FencedLock:
		h = x.handle()
	}
	if h == nil || h.Core() == nil {
		return "", opErr("holderfield", nameOf(l), fmt.Errorf("%w: %T is not a single-key lock of this package", ErrInvalidArgument, l))
	}
	return h.Field(ctx), nil
}
