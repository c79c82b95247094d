package rlock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
)

// group is the set of locks behind a MultiLock or a RedLock. need is how
// many of them make the group held: all for a MultiLock, a majority for a
// RedLock.
type group struct {
	kind  string // "multilock" or "redlock", the op prefix of errors
	locks []Locker
	need  int
}

// identified is implemented by this package's lock types: the Redis client
// and key behind a lock, so that a group can refuse the same lock twice.
type identified interface {
	identity() (rdb any, key string)
}

func (l *Lock) identity() (any, string) { return l.c.rdb, l.name }

// newGroup validates the locks of a group.
func newGroup(kind string, locks []Locker) (*group, error) {
	if len(locks) == 0 {
		return nil, opErr("new"+kind, "", fmt.Errorf("%w: no locks", ErrInvalidArgument))
	}
	type id struct {
		rdb any
		key string
	}
	seen := map[id]int{}
	for i, l := range locks {
		if l == nil || l.Name() == "" {
			return nil, opErr("new"+kind, "", fmt.Errorf("%w: lock %d is nil or has an empty name", ErrInvalidArgument, i))
		}
		if j := slices.IndexFunc(locks[:i], func(o Locker) bool { return sameLocker(o, l) }); j >= 0 {
			return nil, opErr("new"+kind, l.Name(), fmt.Errorf("%w: locks %d and %d are the same lock", ErrInvalidArgument, j, i))
		}
		if x, ok := l.(identified); ok {
			rdb, key := x.identity()
			if j, dup := seen[id{rdb, key}]; dup {
				return nil, opErr("new"+kind, key, fmt.Errorf("%w: locks %d and %d are the same Redis key on the same client", ErrInvalidArgument, j, i))
			}
			seen[id{rdb, key}] = i
		}
	}
	return &group{kind: kind, locks: slices.Clone(locks), need: len(locks)}, nil
}

// sameLocker reports whether a and b are the same Locker value; values of
// types that cannot be compared are never the same.
func sameLocker(a, b Locker) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// Name returns the names of the locks, e.g. "multilock[a,b]".
func (g *group) Name() string {
	if g == nil {
		return ""
	}
	names := make([]string, len(g.locks))
	for i, l := range g.locks {
		names[i] = l.Name()
	}
	return g.kind + "[" + strings.Join(names, ",") + "]"
}

// Locks returns the locks of the group, in the order given.
func (g *group) Locks() []Locker { return slices.Clone(g.locks) }

// start validates a call on the group and pins the caller's owner, so that
// the locks act for it on whatever goroutine they are called.
func (g *group) start(op string, ctx context.Context, lease time.Duration) (context.Context, error) {
	if g == nil {
		return nil, opErr(op, "", fmt.Errorf("%w: nil lock", ErrInvalidArgument))
	}
	if ctx == nil {
		return nil, opErr(op, g.Name(), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	}
	if err := checkArgs(ctx, lease); err != nil {
		return nil, opErr(op, g.Name(), err)
	}
	return ctxowner.Pin(ctx), nil
}

// release drops one hold on each of the given locks, with a context that
// survives ctx's cancellation (a failed acquisition must not leave holds).
func release(ctx context.Context, locks []Locker) []error {
	rctx, cancel := settleCtx(ctx)
	defer cancel()
	errs := make([]error, len(locks))
	for i := len(locks) - 1; i >= 0; i-- {
		errs[i] = locks[i].Unlock(rctx)
	}
	return errs
}

// Unlock releases one hold of ctx's owner on every lock. For a MultiLock
// every release must succeed; for a RedLock one is enough (the others may
// have been missed at acquisition or sit on a node that is down). When no
// lock was held at all, the error is ErrNotHeld.
func (g *group) Unlock(ctx context.Context) error {
	ctx, err := g.start("unlock", ctx, 0)
	if err != nil {
		return err
	}
	errs := release(ctx, g.locks)
	released, notHeld := 0, 0
	var failed []error
	for i, err := range errs {
		switch {
		case err == nil:
			released++
		case errors.Is(err, ErrNotHeld):
			notHeld++
			failed = append(failed, err)
		default:
			failed = append(failed, fmt.Errorf("lock %d: %w", i, err))
		}
	}
	switch {
	case released == 0 && notHeld == len(g.locks):
		return opErr("unlock", g.Name(), ErrNotHeld)
	case len(failed) == 0 || (g.kind == "redlock" && released > 0):
		return nil
	}
	return opErr("unlock", g.Name(), errors.Join(failed...))
}

// ForceUnlock force-unlocks every lock; it reports whether any existed.
func (g *group) ForceUnlock(ctx context.Context) (bool, error) {
	if _, err := g.start("forceunlock", ctx, 0); err != nil {
		return false, err
	}
	existed := false
	var errs []error
	for _, l := range g.locks {
		ok, err := l.ForceUnlock(ctx)
		existed = existed || ok
		if err != nil {
			errs = append(errs, err)
		}
	}
	return existed, opErr("forceunlock", g.Name(), errors.Join(errs...))
}

// count asks every lock a question and reports how many said yes.
func (g *group) count(op string, ctx context.Context, ask func(Locker, context.Context) (bool, error)) (bool, error) {
	ctx, err := g.start(op, ctx, 0)
	if err != nil {
		return false, err
	}
	yes := 0
	for _, l := range g.locks {
		ok, err := ask(l, ctx)
		if err != nil && g.kind == "multilock" {
			return false, opErr(op, g.Name(), err)
		}
		if ok {
			yes++
		}
	}
	return yes >= g.need, nil
}

// IsLocked reports whether the group's locks are held: all of them for a
// MultiLock, a majority for a RedLock.
func (g *group) IsLocked(ctx context.Context) (bool, error) {
	return g.count("islocked", ctx, Locker.IsLocked)
}

// IsHeldByCurrent reports whether ctx's owner holds the group: all of its
// locks for a MultiLock, a majority for a RedLock.
func (g *group) IsHeldByCurrent(ctx context.Context) (bool, error) {
	return g.count("isheldbycurrent", ctx, Locker.IsHeldByCurrent)
}

// nth returns the need-th largest of the values each lock reports: for a
// MultiLock the smallest, for a RedLock what a majority has at least.
func (g *group) nth(op string, ctx context.Context, get func(Locker, context.Context) (int64, error)) (int64, error) {
	ctx, err := g.start(op, ctx, 0)
	if err != nil {
		return 0, err
	}
	var vals []int64
	var errs []error
	for _, l := range g.locks {
		v, err := get(l, ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vals = append(vals, v)
	}
	if len(vals) < g.need {
		return 0, opErr(op, g.Name(), errors.Join(errs...))
	}
	slices.Sort(vals)
	slices.Reverse(vals)
	return vals[g.need-1], nil
}

// HoldCount returns how many times ctx's owner holds the group (the hold
// count a MultiLock's every lock, or a RedLock's majority, has at least).
func (g *group) HoldCount(ctx context.Context) (int, error) {
	n, err := g.nth("holdcount", ctx, func(l Locker, ctx context.Context) (int64, error) {
		n, err := l.HoldCount(ctx)
		return int64(n), err
	})
	return int(n), err
}

// RemainTTL returns the lease the group has left: the shortest of a
// MultiLock's locks, the one a RedLock's majority has at least. A lock
// without expiry counts as the longest.
func (g *group) RemainTTL(ctx context.Context) (time.Duration, error) {
	n, err := g.nth("remainttl", ctx, func(l Locker, ctx context.Context) (int64, error) {
		d, err := l.RemainTTL(ctx)
		if d == NoExpiry {
			d = time.Duration(1<<63 - 1)
		}
		return int64(d), err
	})
	d := time.Duration(n)
	if d == time.Duration(1<<63-1) {
		d = NoExpiry
	}
	return d, err
}

// MultiLock holds several locks as one, all or nothing (Redisson's
// RedissonMultiLock [getMultiLock]); the locks may come from different
// Clients, types and Redis deployments. It is reentrant per owner as its
// locks are. Its own methods pin the caller's owner (ctxowner.Pin), so a
// goroutine owner works as with a single lock.
//
// It takes its locks one after the other in a canonical order (by name,
// then by Redis address), whatever order they were given in, so MultiLocks
// over overlapping locks never wait for each other in a cycle, in one
// process or many. (Redisson keeps the given order and instead releases and
// retries after a bounded wait.) Holding one of the locks on its own while
// waiting for the MultiLock can still deadlock, as with any two locks taken
// in different orders. If a wait runs out or fails, what was taken is
// released.
//
// A fixed lease counts from each lock's own acquisition; for waits that may
// be long, prefer a watchdog lease (lease <= 0).
type MultiLock struct {
	*group
	ordered []Locker // the locks in the order they are taken
}

var _ Locker = (*MultiLock)(nil)

// NewMultiLock returns a MultiLock over locks [getMultiLock]. An empty list,
// a nil lock, or the same lock twice is ErrInvalidArgument.
func NewMultiLock(locks ...Locker) (*MultiLock, error) {
	g, err := newGroup("multilock", locks)
	if err != nil {
		return nil, err
	}
	return &MultiLock{group: g, ordered: lockOrder(g.locks)}, nil
}

// Lock waits until ctx's owner holds every lock, with watchdog leases.
func (m *MultiLock) Lock(ctx context.Context) error { return m.LockLease(ctx, 0) }

// LockLease waits until ctx's owner holds every lock (lease <= 0: watchdog).
func (m *MultiLock) LockLease(ctx context.Context, lease time.Duration) error {
	_, err := m.tryLock("lock", ctx, -1, lease)
	return err
}

// TryLock tries to take every lock within wait (0: one attempt each; < 0:
// until held or ctx done). On failure nothing stays held.
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return m.tryLock("trylock", ctx, wait, lease)
}

func (m *MultiLock) tryLock(op string, ctx context.Context, wait, lease time.Duration) (bool, error) {
	var g *group
	if m != nil {
		g = m.group
	}
	ctx, err := g.start(op, ctx, lease)
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
		ok, err := l.TryLock(ctx, w, lease)
		if err != nil || !ok {
			release(ctx, held)
			return false, opErr(op, m.Name(), err)
		}
		held = append(held, l)
	}
	return true, nil
}

// lockOrder sorts locks into the order every MultiLock takes them in: by
// name, then by the address of their Redis deployment, so that two
// MultiLocks over the same locks, in any process, never wait for each other
// in a cycle.
func lockOrder(locks []Locker) []Locker {
	out := slices.Clone(locks)
	slices.SortStableFunc(out, func(a, b Locker) int {
		if c := strings.Compare(a.Name(), b.Name()); c != 0 {
			return c
		}
		return strings.Compare(deployment(a), deployment(b))
	})
	return out
}

// deployment names the Redis deployment behind a lock of this package, the
// same in every process: its address(es).
func deployment(l Locker) string {
	x, ok := l.(identified)
	if !ok {
		return ""
	}
	switch rdb, _ := x.identity(); r := rdb.(type) {
	case *redis.Client:
		return r.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(r.Options().Addrs, ",")
	}
	return ""
}
