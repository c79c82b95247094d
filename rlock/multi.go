package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// MultiLock holds several locks as one, all or nothing [getMultiLock].
type MultiLock struct {
	g       *group
	ordered []Locker // the locks in the order they are taken
}

var _ Locker = (*MultiLock)(nil)

// NewMultiLock returns a MultiLock over locks [getMultiLock].
func NewMultiLock(locks ...Locker) (*MultiLock, error) {
	g, err := newGroup("multilock", locks)
	if err != nil {
		return nil, err
	}
	return &MultiLock{g: g, ordered: lockOrder(g.locks)}, nil
}

func (m *MultiLock) group() *group {
	if m == nil {
		return nil
	}
	return m.g
}

// Name returns the names of the locks, e.g. "multilock[a,b]".
func (m *MultiLock) Name() string { return m.group().name() }

// Lock waits until ctx's owner holds every lock, with watchdog leases.
func (m *MultiLock) Lock(ctx context.Context) error { return m.LockLease(ctx, 0) }

// LockLease waits until ctx's owner holds every lock (lease <= 0: watchdog).
func (m *MultiLock) LockLease(ctx context.Context, lease time.Duration) error {
	_, err := m.take(ctx, "lock", forever, lease)
	return err
}

// TryLock takes every lock within wait; on failure none stays held.
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return m.take(ctx, "trylock", max(wait, 0), lease)
}

func (m *MultiLock) take(ctx context.Context, op string, wait, lease time.Duration) (bool, error) {
	g := m.group()
	wait = waitMillis(wait)
	ctx, err := g.start(ctx, op, wait, lease)
	if err != nil {
		return false, err
	}
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	var held []Locker
	for _, l := range m.ordered {
		w := wait
		if wait > 0 {
			w = max(time.Until(deadline), time.Millisecond)
		}
		ok, err := takeOne(ctx, l, w, lease)
		if err != nil || !ok {
			if gerr := giveBack(ctx, held); gerr != nil {
				err = errors.Join(err, gerr)
			}
			return false, opErr(op, g.name(), err)
		}
		held = append(held, l)
	}
	if err := g.stillHeld(ctx, "the acquisition"); err != nil {
		// A lock taken early reached its deadline while a later one was
		// awaited: the group is lost at once; none stays held.
		if gerr := giveBack(ctx, held); gerr != nil {
			err = errors.Join(err, gerr)
		}
		return false, opErr(op, g.name(), err)
	}
	return true, nil
}

// Unlock gives back one hold of ctx's owner on every lock.
func (m *MultiLock) Unlock(ctx context.Context) error { return m.group().unlock(ctx) }

// ForceUnlock force-unlocks every lock; it reports whether any existed.
func (m *MultiLock) ForceUnlock(ctx context.Context) (bool, error) {
	return m.group().forceUnlock(ctx)
}

// IsLocked reports whether every lock is held.
func (m *MultiLock) IsLocked(ctx context.Context) (bool, error) {
	return m.group().count(ctx, "islocked", Locker.IsLocked)
}

// IsHeldByCurrent reports whether ctx's owner holds every lock.
func (m *MultiLock) IsHeldByCurrent(ctx context.Context) (bool, error) {
	return m.group().count(ctx, "isheldbycurrent", Locker.IsHeldByCurrent)
}

// HoldCount returns the smallest hold count of ctx's owner on the locks.
func (m *MultiLock) HoldCount(ctx context.Context) (int, error) { return m.group().holdCount(ctx) }

// RemainTTL returns the shortest remaining lease of the locks.
func (m *MultiLock) RemainTTL(ctx context.Context) (time.Duration, error) {
	return m.group().remainTTL(ctx)
}

func (m *MultiLock) watchLoss(ctx context.Context) *engine.LossWatch { return m.group().watchLoss(ctx) }

// NewFasterMultiLock locks values of a group [getMultiLock(group, values)].
func (c *Client) NewFasterMultiLock(group string, values ...string) *Lock {
	return &Lock{h: handle{engine.NewFasterHandle(c.core(), group, values)}}
}
