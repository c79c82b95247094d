package rlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// RedLock is the Redlock algorithm over independent Redis masters
// (Redisson's RedissonRedLock): one lock per master, each usually from its
// own Client; the RedLock is held when a majority (N/2+1) granted it within
// the lease, less the time the attempt took and an allowance for clock
// drift.
//
// Each round asks every master at once, each attempt bounded by the attempt
// timeout (SetAttemptTimeout, default DefaultRedLockAttemptTimeout), so a
// master that is down or hung costs at most that. If the quorum or the
// validity is missed, every master that granted the lock releases it; when
// too many masters failed (errors, not contention) for a quorum to be
// possible, the call fails at once with ErrNoQuorum instead of waiting.
//
// What it does not promise: Redisson deprecated RedissonRedLock because its
// safety rests on timing assumptions (bounded pauses, network delays and
// clock drift; see Kleppmann's critique and the README). A master that
// restarts without persistence forgets the locks it granted, and a holder
// paused past the validity still believes it holds the lock. Use a
// FencedLock on a single deployment, or fencing tokens of your own, when
// correctness depends on exclusion.
type RedLock struct {
	*group
	attemptTimeout time.Duration
	drift          float64
	retryWait      time.Duration
}

var _ Locker = (*RedLock)(nil)

// Defaults of a RedLock.
const (
	// DefaultRedLockAttemptTimeout bounds one master's part of a round.
	DefaultRedLockAttemptTimeout = 200 * time.Millisecond
	// DefaultRedLockDriftFactor is the clock-drift allowance per unit of
	// lease (plus 2 ms), as in the Redlock description.
	DefaultRedLockDriftFactor = 0.01
	// DefaultRedLockRetryWait bounds how long a round after a contended one
	// waits for unlock messages before it gives up the round (jittered
	// between half and all of it).
	DefaultRedLockRetryWait = 200 * time.Millisecond
)

// NewRedLock returns a RedLock over locks, one per independent master
// [RedissonRedLock]. Fewer than 3 locks, a nil lock or the same lock twice
// is ErrInvalidArgument.
func NewRedLock(locks ...Locker) (*RedLock, error) {
	g, err := newGroup("redlock", locks)
	if err != nil {
		return nil, err
	}
	if len(locks) < 3 {
		return nil, opErr("newredlock", g.Name(), fmt.Errorf("%w: a RedLock needs at least 3 independent masters, got %d", ErrInvalidArgument, len(locks)))
	}
	g.need = len(locks)/2 + 1
	return &RedLock{group: g, attemptTimeout: DefaultRedLockAttemptTimeout, drift: DefaultRedLockDriftFactor, retryWait: DefaultRedLockRetryWait}, nil
}

// SetAttemptTimeout sets how long one master's attempt may take in a round
// (> 0). Call it before the RedLock is used.
func (r *RedLock) SetAttemptTimeout(d time.Duration) error {
	if r == nil || d <= 0 {
		return opErr("setattempttimeout", "", fmt.Errorf("%w: attempt timeout %v must be positive", ErrInvalidArgument, d))
	}
	r.attemptTimeout = d
	return nil
}

// SetDriftFactor sets the clock-drift allowance per unit of lease (0 <= f <
// 0.5). Call it before the RedLock is used.
func (r *RedLock) SetDriftFactor(f float64) error {
	if r == nil || f < 0 || f >= 0.5 {
		return opErr("setdriftfactor", "", fmt.Errorf("%w: drift factor %v must be in [0, 0.5)", ErrInvalidArgument, f))
	}
	r.drift = f
	return nil
}

// Quorum returns how many masters must grant the lock: N/2+1.
func (r *RedLock) Quorum() int { return r.need }

// Lock waits until a majority of masters granted the lock to ctx's owner,
// with watchdog leases.
func (r *RedLock) Lock(ctx context.Context) error { return r.LockLease(ctx, 0) }

// LockLease waits until a majority granted the lock (lease <= 0: watchdog).
func (r *RedLock) LockLease(ctx context.Context, lease time.Duration) error {
	_, _, err := r.try("lock", ctx, -1, lease)
	return err
}

// TryLock tries to take the lock within wait (0: one round; < 0: until
// held, ctx done or no quorum possible).
func (r *RedLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	_, ok, err := r.try("trylock", ctx, wait, lease)
	return ok, err
}

// TryLockValidity is TryLock that also returns the validity: how long from
// the start of the winning round the lock may be relied on (lease, less the
// round's duration, less the drift allowance). For a watchdog lease the
// validity is that of one watchdog period, renewed while held.
func (r *RedLock) TryLockValidity(ctx context.Context, wait, lease time.Duration) (time.Duration, bool, error) {
	return r.try("trylock", ctx, wait, lease)
}

// ErrNoQuorum: too many masters of a RedLock failed (unreachable, erroring)
// for a majority to grant the lock.
var ErrNoQuorum = errors.New("no quorum of masters reachable")

// watchdogLeased is implemented by this package's lock types: the lease a
// watchdog hold is given.
type watchdogLeased interface {
	watchdogLease() time.Duration
}

func (l *Lock) watchdogLease() time.Duration { return l.c.opts.watchdogTimeout }

// keep returns the lease the masters give a hold: lease, or for a watchdog
// lease the shortest watchdog timeout of the masters' Clients.
func (r *RedLock) keep(lease time.Duration) time.Duration {
	if lease > 0 {
		return lease
	}
	keep := DefaultWatchdogTimeout
	for i, l := range r.locks {
		if w, ok := l.(watchdogLeased); ok && (i == 0 || w.watchdogLease() < keep) {
			keep = w.watchdogLease()
		}
	}
	return keep
}

func (r *RedLock) try(op string, ctx context.Context, wait, lease time.Duration) (time.Duration, bool, error) {
	var g *group
	if r != nil {
		g = r.group
	}
	ctx, err := g.start(op, ctx, lease)
	if err != nil {
		return 0, false, err
	}
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	keep := r.keep(lease)
	allowance := time.Duration(float64(keep)*r.drift) + 2*time.Millisecond
	for round := 0; ; round++ {
		// The first round only asks; later ones (after contention) also
		// wait a little for unlock messages on each master.
		var roundWait time.Duration
		if round > 0 {
			roundWait = r.retryWait/2 + rand.N(r.retryWait/2)
			if wait > 0 {
				roundWait = min(roundWait, time.Until(deadline))
			}
		}
		start := time.Now()
		granted, failures := r.round(ctx, roundWait, lease)
		validity := keep - time.Since(start) - allowance
		if len(granted) >= r.need && validity > 0 {
			return validity, true, nil
		}
		release(ctx, granted)
		if len(failures) > len(r.locks)-r.need {
			return 0, false, opErr(op, r.Name(), fmt.Errorf("%w: %d of %d masters failed, %d must grant: %w",
				ErrNoQuorum, len(failures), len(r.locks), r.need, errors.Join(failures...)))
		}
		if err := ctx.Err(); err != nil {
			return 0, false, opErr(op, r.Name(), err)
		}
		if wait == 0 || (wait > 0 && !time.Now().Before(deadline)) {
			return 0, false, nil
		}
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
	for i, l := range r.locks {
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
