package scenario

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// Mutex is one lock of the naive ladder, or goredisson, as the ladder
// scenarios use it: one acquire attempt, and a release.
type Mutex interface {
	// TryAcquire makes one attempt.
	TryAcquire(ctx context.Context) (bool, error)
	// Release gives the lock back.
	Release(ctx context.Context) error
}

// The rungs of the naive ladder (seeds, scenario 1).
const (
	SetnxDel      = "SETNX + DEL"           // no expiry at all
	SetnxExpire   = "SETNX, then EXPIRE"    // expiry set by a second command
	SetPxDel      = "SET NX PX + DEL"       // atomic expiry, blind delete
	GetCompareDel = "SET NX PX + GET/DEL"   // owner check and delete are two commands
	LuaCompareDel = "SET NX PX + Lua DEL"   // atomic release, but no renewal
	Goredisson    = "goredisson rlock.Lock" // for the tables
)

// NaiveLock is a rung of the ladder on one key.
type NaiveLock struct {
	Rdb  redis.UniversalClient
	Key  string
	Kind string        // one of the rung constants
	TTL  time.Duration // expiry of the rungs that set one
	// CrashBetween makes TryAcquire of SetnxExpire stop after SETNX, as a
	// process dying between the two commands would.
	CrashBetween bool
	// Between runs between GET and DEL of GetCompareDel's release.
	Between func()
	value   string
}

var luaRelease = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

// TryAcquire makes one attempt.
func (l *NaiveLock) TryAcquire(ctx context.Context) (bool, error) {
	switch l.Kind {
	case SetnxDel, SetnxExpire:
		ok, err := l.Rdb.SetNX(ctx, l.Key, "1", 0).Result()
		if err != nil || !ok || l.Kind == SetnxDel || l.CrashBetween {
			return ok, err
		}
		return true, l.Rdb.Expire(ctx, l.Key, l.TTL).Err()
	case SetPxDel, GetCompareDel, LuaCompareDel:
		l.value = uuid.NewString()
		return l.Rdb.SetNX(ctx, l.Key, l.value, l.TTL).Result()
	}
	return false, fmt.Errorf("scenario: unknown naive lock %q", l.Kind)
}

// Release gives the lock back the rung's way.
func (l *NaiveLock) Release(ctx context.Context) error {
	switch l.Kind {
	case GetCompareDel:
		v, err := l.Rdb.Get(ctx, l.Key).Result()
		if errors.Is(err, redis.Nil) || (err == nil && v != l.value) {
			return nil // not ours (any more): nothing to delete
		}
		if err != nil {
			return err
		}
		if l.Between != nil {
			l.Between()
		}
		return l.Rdb.Del(ctx, l.Key).Err()
	case LuaCompareDel:
		return luaRelease.Run(ctx, l.Rdb, []string{l.Key}, l.value).Err()
	}
	return l.Rdb.Del(ctx, l.Key).Err()
}

// RMutex is a goredisson lock used as a ladder Mutex, for one owner.
type RMutex struct {
	Lock  rlock.Locker
	Lease time.Duration // 0: watchdog
	owner string
}

// NewRMutex returns lock as a ladder Mutex with an owner of its own.
func NewRMutex(lock rlock.Locker, lease time.Duration) *RMutex {
	return &RMutex{Lock: lock, Lease: lease, owner: uuid.NewString()}
}

// TryAcquire makes one attempt.
func (m *RMutex) TryAcquire(ctx context.Context) (bool, error) {
	return m.Lock.TryLock(ctxowner.WithID(ctx, m.owner), 0, m.Lease)
}

// Release unlocks; ErrNotHeld when the lease ran out and the lock is gone
// or someone else's.
func (m *RMutex) Release(ctx context.Context) error {
	return m.Lock.Unlock(ctxowner.WithID(ctx, m.owner))
}

// acquireWithin retries every 5 ms until m is acquired or d has passed.
func acquireWithin(ctx context.Context, m Mutex, d time.Duration) (bool, time.Duration, error) {
	start := time.Now()
	for {
		ok, err := m.TryAcquire(ctx)
		if err != nil || ok {
			return ok, time.Since(start), err
		}
		if time.Since(start) >= d {
			return false, time.Since(start), nil
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return false, time.Since(start), ctx.Err()
		}
	}
}

// CrashResult is what happened after a holder crashed.
type CrashResult struct {
	NextAcquired bool          // the next worker got the lock within the wait
	After        time.Duration // how long it tried
}

// Crash: holder acquires and its process dies (crash runs: it closes the
// holder's connection or client) without releasing; next then tries for up
// to wait.
func Crash(ctx context.Context, holder, next Mutex, crash func(), wait time.Duration) (CrashResult, error) {
	ok, err := holder.TryAcquire(ctx)
	if err != nil || !ok {
		return CrashResult{}, fmt.Errorf("scenario: holder could not acquire: %v, %w", ok, err)
	}
	crash()
	got, after, err := acquireWithin(ctx, next, wait)
	if got {
		err = errors.Join(err, next.Release(ctx))
	}
	return CrashResult{NextAcquired: got, After: after}, err
}

// ReleaseResult is what happened around a late release.
type ReleaseResult struct {
	// LeaseRanOut: b got the lock while a was still working (a's lease
	// expired under it: the job outlasted a fixed TTL).
	LeaseRanOut bool
	// StaleDelete: c got the lock while b was still working, because a's
	// release deleted b's lock.
	StaleDelete bool
	// StaleRelease is what a's release returned.
	StaleRelease error
}

// LateRelease: a takes the lock and works 5/3 of ttl; b tries at once and
// works 5/6 of ttl once it has the lock; when a releases, c starts trying.
// With early set, a works only 4/5 of ttl and releases before its lease
// ends; a non-nil between then receives a function, which a GetCompareDel
// lock's Between hook must call, that holds a's delete back until b has
// the lock.
func LateRelease(ctx context.Context, a, b, c Mutex, ttl time.Duration, early bool, between *func()) (ReleaseResult, error) {
	var aInside, bInside, leaseRanOut, staleDelete atomic.Bool
	if ok, err := a.TryAcquire(ctx); err != nil || !ok {
		return ReleaseResult{}, fmt.Errorf("scenario: a could not acquire: %v, %w", ok, err)
	}
	aInside.Store(true)
	bHolds := make(chan struct{})
	bDone := make(chan error, 1)
	go func() {
		ok, _, err := acquireWithin(ctx, b, 4*ttl)
		if err != nil || !ok {
			close(bHolds)
			bDone <- fmt.Errorf("scenario: b could not acquire: %v, %w", ok, err)
			return
		}
		bInside.Store(true)
		leaseRanOut.Store(aInside.Load())
		close(bHolds)
		time.Sleep(ttl * 5 / 6)
		bInside.Store(false)
		bDone <- b.Release(ctx)
	}()
	aWork := ttl * 5 / 3
	if early {
		aWork = ttl * 4 / 5
	}
	if between != nil {
		*between = func() { <-bHolds }
	}
	time.Sleep(aWork)
	aInside.Store(false)
	res := ReleaseResult{StaleRelease: a.Release(ctx)}
	ok, _, err := acquireWithin(ctx, c, 4*ttl)
	if err == nil && ok {
		staleDelete.Store(bInside.Load())
		err = c.Release(ctx)
	}
	err = errors.Join(err, <-bDone)
	res.LeaseRanOut, res.StaleDelete = leaseRanOut.Load(), staleDelete.Load()
	return res, err
}
