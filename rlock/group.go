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
	"github.com/goredisson/goredisson/internal/engine"
)

// group is the set of locks behind a MultiLock or a RedLock.
type group struct {
	kind  string // "multilock" or "redlock": the op prefix of errors
	locks []Locker
	// need is how many locks make the group held: all for a MultiLock, a
	// majority for a RedLock.
	need int
	// majority is the RedLock policy: the group is held, released, read and
	// lost by majority, and a lock that fails is outvoted rather than
	// failing the call.
	majority bool
}

// identified is implemented by this package's lock types: the Redis client
// and key behind a lock, so that a group can refuse the same lock twice.
type identified interface {
	identity() (rdb redis.UniversalClient, key string)
}

func (h *handle) identity() (redis.UniversalClient, string) {
	if h == nil {
		return nil, ""
	}
	return h.Core().RDB(), h.LedgerName()
}
func (l *Lock) identity() (redis.UniversalClient, string)       { return l.handle().identity() }
func (f *FencedLock) identity() (redis.UniversalClient, string) { return f.handle().identity() }

// newGroup validates the locks of a group.
func newGroup(kind string, locks []Locker) (*group, error) {
	if len(locks) == 0 {
		return nil, opErr("new"+kind, "", fmt.Errorf("%w: no locks", ErrInvalidArgument))
	}
	type id struct {
		rdb redis.UniversalClient
		key string
	}
	seen := map[id]int{}
	for i, l := range locks {
		if l == nil || reflect.ValueOf(l).Kind() == reflect.Pointer && reflect.ValueOf(l).IsNil() || l.Name() == "" {
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

// name returns the names of the locks, e.g. "multilock[a,b]".
func (g *group) name() string {
	if g == nil {
		return ""
	}
	names := make([]string, len(g.locks))
	for i, l := range g.locks {
		names[i] = l.Name()
	}
	return g.kind + "[" + strings.Join(names, ",") + "]"
}

// start validates a call on the group and pins the caller's owner, so that
// the locks act for it on whatever goroutine they are called.
func (g *group) start(ctx context.Context, op string, wait, lease time.Duration) (context.Context, error) {
	switch {
	case g == nil:
		return nil, opErr(op, "", fmt.Errorf("%w: nil lock", ErrInvalidArgument))
	case ctx == nil:
		return nil, opErr(op, g.name(), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case lease > 0 && lease < time.Millisecond:
		return nil, opErr(op, g.name(), fmt.Errorf("%w: lease %v is below 1ms", ErrInvalidArgument, lease))
	}
	return ctxowner.Pin(ctx), nil
}

// takeOne takes one lock of the group: Lock for an unbounded wait, TryLock
// otherwise (wait <= 0: one attempt).
func takeOne(ctx context.Context, l Locker, wait, lease time.Duration) (bool, error) {
	if wait == forever {
		err := l.LockLease(ctx, lease)
		return err == nil, err
	}
	return l.TryLock(ctx, wait, lease)
}

// giveBack drops one hold on each of the given locks, latest first, with a
// context that survives ctx's end (a failed acquisition must not leave
// holds), and returns what failed.
func giveBack(ctx context.Context, locks []Locker) error {
	rctx, cancel := engine.CleanupCtx(ctx)
	defer cancel()
	var errs []error
	for i := len(locks) - 1; i >= 0; i-- {
		if err := locks[i].Unlock(rctx); err != nil {
			errs = append(errs, fmt.Errorf("giving back %s: %w", locks[i].Name(), err))
		}
	}
	return errors.Join(errs...)
}

// unlock releases one hold of ctx's owner on every lock. For a MultiLock
// every release must succeed; for a RedLock one is enough (the others may
// have been missed at acquisition or sit on a master that is down). When no
// lock was held at all, the error is ErrNotHeld.
func (g *group) unlock(ctx context.Context) error {
	ctx, err := g.start(ctx, "unlock", 0, 0)
	if err != nil {
		return err
	}
	rctx, cancel := engine.CleanupCtx(ctx)
	defer cancel()
	released, notHeld := 0, 0
	var failed []error
	for i := len(g.locks) - 1; i >= 0; i-- {
		err := g.locks[i].Unlock(rctx)
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
		return opErr("unlock", g.name(), ErrNotHeld)
	case len(failed) == 0 || (g.majority && released > 0):
		return nil
	}
	return opErr("unlock", g.name(), errors.Join(failed...))
}

// forceUnlock force-unlocks every lock; it reports whether any existed.
func (g *group) forceUnlock(ctx context.Context) (bool, error) {
	if _, err := g.start(ctx, "forceunlock", 0, 0); err != nil {
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
	return existed, opErr("forceunlock", g.name(), errors.Join(errs...))
}

// count asks every lock a question and reports whether enough said yes.
func (g *group) count(ctx context.Context, op string, ask func(Locker, context.Context) (bool, error)) (bool, error) {
	ctx, err := g.start(ctx, op, 0, 0)
	if err != nil {
		return false, err
	}
	yes := 0
	for _, l := range g.locks {
		ok, err := ask(l, ctx)
		if err != nil && !g.majority {
			return false, opErr(op, g.name(), err)
		}
		if ok {
			yes++
		}
	}
	return yes >= g.need, nil
}

// nth returns the need-th largest of the values each lock reports: for a
// MultiLock the smallest, for a RedLock what a majority has at least.
func (g *group) nth(ctx context.Context, op string, get func(Locker, context.Context) (int64, error)) (int64, error) {
	ctx, err := g.start(ctx, op, 0, 0)
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
		return 0, opErr(op, g.name(), errors.Join(errs...))
	}
	slices.Sort(vals)
	slices.Reverse(vals)
	return vals[g.need-1], nil
}

func (g *group) holdCount(ctx context.Context) (int, error) {
	n, err := g.nth(ctx, "holdcount", func(l Locker, ctx context.Context) (int64, error) {
		n, err := l.HoldCount(ctx)
		return int64(n), err
	})
	return int(n), err
}

// remainTTL returns the lease the group has left; a lock without expiry
// counts as the longest.
func (g *group) remainTTL(ctx context.Context) (time.Duration, error) {
	const longest = time.Duration(1<<63 - 1)
	n, err := g.nth(ctx, "remainttl", func(l Locker, ctx context.Context) (int64, error) {
		d, err := l.RemainTTL(ctx)
		if d == NoExpiry {
			d = longest
		}
		return int64(d), err
	})
	if d := time.Duration(n); d != longest {
		return d, err
	}
	return NoExpiry, err
}

// watchLoss watches the group's holds: it is lost when the group no longer
// holds: any lock of a MultiLock, or more than a RedLock can spare, lost.
func (g *group) watchLoss(ctx context.Context) *engine.LossWatch {
	if g == nil || ctx == nil {
		return nil
	}
	ctx = ctxowner.Pin(ctx)
	var parts []*engine.LossWatch
	for _, l := range g.locks {
		if w, ok := l.(lossWatcher); ok {
			if p := w.watchLoss(ctx); p != nil {
				parts = append(parts, p)
			}
		}
	}
	if len(parts) < g.need {
		return nil
	}
	return engine.GroupLoss(parts, len(parts)-g.need)
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
