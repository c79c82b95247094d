package rlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// RedLock is Redlock over independent masters, deprecated by Redisson.
type RedLock struct {
	g              *group
	attemptTimeout time.Duration
	drift          float64
	retryWait      time.Duration
	retry          engine.RetryPolicy // rounds in a row without a possible quorum
}

var _ Locker = (*RedLock)(nil)

// RedLockOption configures a RedLock (see RedLock.With).
type RedLockOption func(*RedLock) error

// RedLockAttemptTimeout bounds one master's part of a round (default 200 ms).
func RedLockAttemptTimeout(d time.Duration) RedLockOption {
	return func(r *RedLock) error {
		if d <= 0 {
			return fmt.Errorf("%w: attempt timeout %v must be positive", ErrInvalidArgument, d)
		}
		r.attemptTimeout = d
		return nil
	}
}

// RedLockDriftFactor sets the drift allowance per lease unit (default 0.01).
func RedLockDriftFactor(f float64) RedLockOption {
	return func(r *RedLock) error {
		if f < 0 || f >= 0.5 {
			return fmt.Errorf("%w: drift factor %v must be in [0, 0.5)", ErrInvalidArgument, f)
		}
		r.drift = f
		return nil
	}
}

// NewRedLock returns a RedLock over locks, one per master [RedissonRedLock].
func NewRedLock(locks ...Locker) (*RedLock, error) {
	g, err := newGroup("redlock", locks)
	if err != nil {
		return nil, err
	}
	g.need, g.majority = len(locks)/2+1, true
	retry := engine.DefaultRetry
	var c *engine.Core
	if h, ok := locks[0].(interface{ handle() *handle }); ok && h.handle() != nil && h.handle().Core() != nil {
		c = h.handle().Core()
		retry = c.Retry()
	}
	if len(locks) < 3 {
		warnSmallRedLock(c, g.name(), len(locks))
	}
	return &RedLock{g: g, attemptTimeout: 200 * time.Millisecond, drift: 0.01, retryWait: 200 * time.Millisecond, retry: retry}, nil
}

// With returns a copy of the RedLock with the options applied.
func (r *RedLock) With(opts ...RedLockOption) (*RedLock, error) {
	if r == nil {
		return nil, opErr("redlock", "", fmt.Errorf("%w: nil lock", ErrInvalidArgument))
	}
	c := *r
	for _, o := range opts {
		if o == nil {
			return nil, opErr("redlock", r.Name(), fmt.Errorf("%w: nil option", ErrInvalidArgument))
		}
		if err := o(&c); err != nil {
			return nil, opErr("redlock", r.Name(), err)
		}
	}
	return &c, nil
}

// smallRedLockWarned records that a RedLock with no default Client warned.
var smallRedLockWarned atomic.Bool

// warnSmallRedLock logs, once per Client (the first lock's, c), that a
// RedLock over fewer than 3 masters is no safer than a single lock.
func warnSmallRedLock(c *engine.Core, name string, n int) {
	log, once := slog.Default(), &smallRedLockWarned
	if c != nil {
		log, once = c.Logger(), c.SmallRedLockWarned()
	}
	if once.CompareAndSwap(false, true) {
		log.Warn("goredisson: a RedLock over fewer than 3 masters gives no more safety than a single lock (logged once per Client)",
			"lock", name, "masters", n)
	}
}

func (r *RedLock) group() *group {
	if r == nil {
		return nil
	}
	return r.g
}

// Name returns the names of the locks, e.g. "redlock[a,b,c]".
func (r *RedLock) Name() string { return r.group().name() }

// Quorum returns how many masters must grant the lock: N/2+1.
func (r *RedLock) Quorum() int { return r.group().need }

// Lock waits until a majority granted the lock, with watchdog leases.
func (r *RedLock) Lock(ctx context.Context) error { return r.LockLease(ctx, 0) }

// LockLease waits until a majority granted the lock (lease <= 0: watchdog).
func (r *RedLock) LockLease(ctx context.Context, lease time.Duration) error {
	_, _, err := r.try(ctx, "lock", forever, lease)
	return err
}

// TryLock tries to take the lock within wait (<= 0: one round).
func (r *RedLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	_, ok, err := r.try(ctx, "trylock", max(wait, 0), lease)
	return ok, err
}

// TryLockValidity is TryLock that also returns how long the lock is valid.
func (r *RedLock) TryLockValidity(ctx context.Context, wait, lease time.Duration) (time.Duration, bool, error) {
	return r.try(ctx, "trylock", max(wait, 0), lease)
}

// Unlock gives back one hold of ctx's owner on every master.
func (r *RedLock) Unlock(ctx context.Context) error { return r.group().unlock(ctx) }

// ForceUnlock force-unlocks every master; true if any had the lock.
func (r *RedLock) ForceUnlock(ctx context.Context) (bool, error) {
	return r.group().forceUnlock(ctx)
}

// IsLocked reports whether a majority of masters have the lock held.
func (r *RedLock) IsLocked(ctx context.Context) (bool, error) {
	return r.group().count(ctx, "islocked", Locker.IsLocked)
}

// IsHeldByCurrent reports whether ctx's owner holds it on a majority.
func (r *RedLock) IsHeldByCurrent(ctx context.Context) (bool, error) {
	return r.group().count(ctx, "isheldbycurrent", Locker.IsHeldByCurrent)
}

// HoldCount returns the hold count a majority of masters has at least.
func (r *RedLock) HoldCount(ctx context.Context) (int, error) { return r.group().holdCount(ctx) }

// RemainTTL returns the remaining lease a majority of masters has at least.
func (r *RedLock) RemainTTL(ctx context.Context) (time.Duration, error) {
	return r.group().remainTTL(ctx)
}

func (r *RedLock) watchLoss(ctx context.Context) *engine.LossWatch { return r.group().watchLoss(ctx) }

// watchdogLeased is implemented by this package's lock types: the lease a
// watchdog hold is given.
type watchdogLeased interface {
	watchdogLease() time.Duration
}

func (h *handle) watchdogLease() time.Duration {
	if h == nil || h.Core() == nil {
		return engine.DefaultWatchdogTimeout
	}
	return h.Core().WatchdogTimeout()
}
func (l *Lock) watchdogLease() time.Duration       { return l.handle().watchdogLease() }
func (f *FencedLock) watchdogLease() time.Duration { return f.handle().watchdogLease() }

// keep returns the lease the masters give a hold: lease, or for a watchdog
// lease the shortest watchdog timeout of the masters' Clients.
func (r *RedLock) keep(lease time.Duration) time.Duration {
	if lease > 0 {
		return lease
	}
	keep := engine.DefaultWatchdogTimeout
	for i, l := range r.g.locks {
		if w, ok := l.(watchdogLeased); ok && (i == 0 || w.watchdogLease() < keep) {
			keep = w.watchdogLease()
		}
	}
	return keep
}

func (r *RedLock) try(ctx context.Context, op string, wait, lease time.Duration) (time.Duration, bool, error) {
	g := r.group()
	wait = waitMillis(wait)
	ctx, err := g.start(ctx, op, wait, lease)
	if err != nil {
		return 0, false, err
	}
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	keep := r.keep(lease)
	var giveBackErr error
	allowance := time.Duration(float64(keep)*r.drift) + 2*time.Millisecond
	pace := engine.NewPace(&r.retry, deadline)
	for round := 0; ; round++ {
		start := time.Now()
		granted, failed := r.round(ctx, r.roundWait(round, wait, deadline), lease)
		validity := keep - time.Since(start) - allowance
		if len(granted) >= g.need && validity > 0 {
			return validity, true, nil
		}
		// A hold that cannot be given back expires with its lease; the
		// failure is reported with the call's result.
		giveBackErr = errors.Join(giveBackErr, giveBack(ctx, granted))
		if err := r.afterRound(&pace, failed, wait); err != nil {
			return 0, false, opErr(op, g.name(), errors.Join(err, giveBackErr))
		}
		if err := ctx.Err(); err != nil {
			return 0, false, opErr(op, g.name(), errors.Join(err, giveBackErr))
		}
		pause, ok := pace.Bound()
		if wait == 0 || !ok {
			return 0, false, opErr(op, g.name(), giveBackErr)
		}
		if err := sleepCtx(ctx, pause); err != nil {
			return 0, false, opErr(op, g.name(), errors.Join(err, giveBackErr))
		}
	}
}

// roundWait is how long the masters' attempts of a round wait for unlock
// messages: not in the first round, which only asks; a little in the later
// ones (after contention), within the call's wait.
func (r *RedLock) roundWait(round int, wait time.Duration, deadline time.Time) time.Duration {
	if round == 0 {
		return 0
	}
	d := r.retryWait/2 + rand.N(r.retryWait/2)
	if wait > 0 {
		d = min(d, time.Until(deadline))
	}
	if d < time.Millisecond {
		return 0
	}
	return d
}

// afterRound judges a round that did not win, as the waiters of single
// locks judge an attempt (engine.Pace): when the masters that failed leave
// no quorum possible, the next round comes after the retry pause, or, with
// the budget spent (or after a single round), the call fails with
// ErrNoQuorum; otherwise the next round comes at once.
func (r *RedLock) afterRound(pace *engine.Pace, failed []error, wait time.Duration) error {
	g := r.group()
	var err error
	if len(failed) > len(g.locks)-g.need {
		err = fmt.Errorf("%w: %d of %d masters failed, %d must grant: %w", ErrNoQuorum, len(failed), len(g.locks), g.need, errors.Join(failed...))
		if wait == 0 {
			return err
		}
	}
	return pace.After(0, err, false)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// round asks every master for the lock at once, each within roundWait plus
// the attempt timeout, and returns the locks that granted it and the errors
// of the masters that failed.
func (r *RedLock) round(ctx context.Context, roundWait, lease time.Duration) (granted []Locker, failures []error) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i, l := range r.g.locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, roundWait+r.attemptTimeout)
			defer cancel()
			ok, err := l.TryLock(actx, roundWait, lease)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ok:
				granted = append(granted, l)
			case err != nil && ctx.Err() == nil:
				failures = append(failures, fmt.Errorf("master %d (%s): %w", i, l.Name(), err))
			}
		}()
	}
	wg.Wait()
	return granted, failures
}
