package probe

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goredisson/goredisson/rlock"
)

// cleanupBound bounds Unlock, Release and CountDown, which an ended
// context does not stop (they are cleanup, as goredisson's are).
const cleanupBound = 30 * time.Second

// Thread is one Java thread of the probe: an owner, as a thread is in
// Redisson. Every call of the objects it returns runs on it, in order, so
// a call blocked in Lock holds up the thread's later calls (use another
// Thread to act meanwhile, as Java code would).
type Thread struct {
	p    *Probe
	name string
	wire string // "t." + the escaped name
}

// Thread returns the Java thread of the given name, started on first use;
// the same name is the same thread.
func (p *Probe) Thread(name string) *Thread {
	return &Thread{p: p, name: name, wire: "t." + escape(name)}
}

// Name returns the thread's name in the probe.
func (t *Thread) Name() string { return t.name }

// ID returns the Java thread's id (Thread.getId): the second half of its
// holds' hash field.
func (t *Thread) ID(ctx context.Context) (int64, error) {
	s, err := t.p.call(ctx, "-", "jtid "+strconv.Quote(t.name), "jtid", t.wire)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// Field returns the hash field of the thread's lock holds: "<client
// id>:<thread id>", as rlock.Inspect and ctxowner.Of spell holders.
func (t *Thread) Field(ctx context.Context) (string, error) {
	id, err := t.ID(ctx)
	if err != nil {
		return "", err
	}
	return t.p.id + ":" + strconv.FormatInt(id, 10), nil
}

// Parked reports whether the thread runs a call and is parked in it
// (Thread.State WAITING or TIMED_WAITING): a Redisson waiter asleep on its
// subscription, or between the request and reply of an attempt. The
// probetest helpers wait until it stays so before they release.
func (t *Thread) Parked(ctx context.Context) (bool, error) {
	s, err := t.p.call(ctx, "-", "state "+strconv.Quote(t.name), "state", t.wire)
	if err != nil {
		return false, err
	}
	busy, state, _ := strings.Cut(s, " ")
	return busy == "true" && (state == "WAITING" || state == "TIMED_WAITING"), nil
}

func (t *Thread) call(ctx context.Context, op, verb string, args ...string) (string, error) {
	return t.p.call(ctx, t.wire, op, verb, args...)
}

// cleanup runs a release-like call that an ended ctx does not stop.
func (t *Thread) cleanup(ctx context.Context, op, verb string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBound)
	defer cancel()
	return t.call(ctx, op, verb, args...)
}

// millis is a duration in Redisson's milliseconds: <= 0 is -1 (a lock's
// watchdog, a permit that never expires), below 1ms an error.
func millis(what string, d time.Duration) (string, error) {
	switch {
	case d <= 0:
		return "-1", nil
	case d < time.Millisecond:
		return "", fmt.Errorf("probe: %s %v is below 1ms (Redisson's milliseconds would make it 0)", what, d)
	}
	return strconv.FormatInt(d.Milliseconds(), 10), nil
}

// waitMillis is a wait in whole milliseconds, truncated as Redisson's
// TimeUnit conversion does: <= 0, or below 1ms, is one attempt.
func waitMillis(d time.Duration) (string, error) {
	if d <= 0 {
		return "0", nil
	}
	return strconv.FormatInt(d.Milliseconds(), 10), nil
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("probe: %w", errEmptyName)
	}
	return nil
}

var errEmptyName = fmt.Errorf("empty name")

// Lock is a Java RLock on its Thread: getLock, getFairLock, a side of
// getReadWriteLock, getSpinLock, getNonReentrantLock,
// getNonReentrantFairLock, getMultiLock or a RedissonRedLock. Its methods
// are goredisson's (it is an rlock.Locker).
type Lock struct {
	t     *Thread
	kind  string // the probe's: lock, fair, read, write, spin, fenced, multi, red, nonreentrant, nonreentrantfair
	names []string
}

var _ rlock.Locker = (*Lock)(nil)

func (t *Thread) newLock(kind string, names ...string) *Lock {
	return &Lock{t: t, kind: kind, names: names}
}

// NewLock returns redisson.getLock(name) on this thread.
func (t *Thread) NewLock(name string) *Lock { return t.newLock("lock", name) }

// NewFairLock returns redisson.getFairLock(name) on this thread.
func (t *Thread) NewFairLock(name string) *Lock { return t.newLock("fair", name) }

// NewSpinLock returns redisson.getSpinLock(name) on this thread.
func (t *Thread) NewSpinLock(name string) *Lock { return t.newLock("spin", name) }

// NewNonReentrantLock returns redisson.getNonReentrantLock(name) on this
// thread (Redisson 4.4 and later; before, its calls fail with
// errors.ErrUnsupported).
func (t *Thread) NewNonReentrantLock(name string) *Lock { return t.newLock("nonreentrant", name) }

// NewNonReentrantFairLock returns redisson.getNonReentrantFairLock(name)
// (Redisson 4.4 and later).
func (t *Thread) NewNonReentrantFairLock(name string) *Lock {
	return t.newLock("nonreentrantfair", name)
}

// NewMultiLock returns redisson.getMultiLock(getLock(name)...) on this
// thread, taking the locks in the given order, as Redisson does.
func (t *Thread) NewMultiLock(names ...string) *Lock { return t.newLock("multi", names...) }

// NewRedLock returns new RedissonRedLock(getLock(name)...) on this thread.
func (t *Thread) NewRedLock(names ...string) *Lock { return t.newLock("red", names...) }

// ReadWriteLock is redisson.getReadWriteLock(name) on a Thread.
type ReadWriteLock struct {
	t    *Thread
	name string
}

// NewReadWriteLock returns redisson.getReadWriteLock(name) on this thread.
func (t *Thread) NewReadWriteLock(name string) *ReadWriteLock {
	return &ReadWriteLock{t: t, name: name}
}

// ReadLock returns the read side (readLock()).
func (rw *ReadWriteLock) ReadLock() *Lock { return rw.t.newLock("read", rw.name) }

// WriteLock returns the write side (writeLock()).
func (rw *ReadWriteLock) WriteLock() *Lock { return rw.t.newLock("write", rw.name) }

// Thread returns the Java thread the lock's calls run on.
func (l *Lock) Thread() *Thread { return l.t }

// Name returns the lock's name (a group's names joined with commas).
func (l *Lock) Name() string { return strings.Join(l.names, ",") }

func (l *Lock) op(verb string) string { return fmt.Sprintf("%s %s %q", verb, l.kind, l.Name()) }

// args are the kind and the escaped names, checked.
func (l *Lock) args() ([]string, error) {
	if len(l.names) == 0 {
		return nil, fmt.Errorf("probe: %s lock: %w", l.kind, errEmptyName)
	}
	enc := make([]string, len(l.names))
	for i, n := range l.names {
		if err := checkName(n); err != nil {
			return nil, err
		}
		enc[i] = escape(n)
	}
	return []string{l.kind, strings.Join(enc, ",")}, nil
}

func (l *Lock) do(ctx context.Context, verb string, more ...string) (string, error) {
	a, err := l.args()
	if err != nil {
		return "", err
	}
	return l.t.call(ctx, l.op(verb), verb, append(a, more...)...)
}

// Lock waits until held, with the watchdog [lockInterruptibly()]; ctx's
// end interrupts the Java thread.
func (l *Lock) Lock(ctx context.Context) error { return l.LockLease(ctx, 0) }

// LockLease waits until held with lease (<= 0: the watchdog)
// [lockInterruptibly(leaseTime)].
func (l *Lock) LockLease(ctx context.Context, lease time.Duration) error {
	ms, err := millis("lease", lease)
	if err != nil {
		return err
	}
	_, err = l.do(ctx, "lock", ms)
	return err
}

// TryLock is tryLock(waitTime, leaseTime): false, nil when the wait ran
// out (wait <= 0: one attempt; lease <= 0: the watchdog).
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	w, err := waitMillis(wait)
	if err != nil {
		return false, err
	}
	ms, err := millis("lease", lease)
	if err != nil {
		return false, err
	}
	s, err := l.do(ctx, "trylock", w, ms)
	return s == "true", err
}

// Unlock is unlock(); an IllegalMonitorStateException matches
// rlock.ErrNotHeld. An ended ctx does not stop it.
func (l *Lock) Unlock(ctx context.Context) error {
	a, err := l.args()
	if err != nil {
		return err
	}
	_, err = l.t.cleanup(ctx, l.op("unlock"), "unlock", a...)
	return err
}

// ForceUnlock is forceUnlock().
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	s, err := l.do(ctx, "forceunlock")
	return s == "true", err
}

// IsLocked is isLocked().
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	s, err := l.do(ctx, "islocked")
	return s == "true", err
}

// IsHeldByCurrent is isHeldByCurrentThread() on the lock's thread.
func (l *Lock) IsHeldByCurrent(ctx context.Context) (bool, error) {
	s, err := l.do(ctx, "held")
	return s == "true", err
}

// HoldCount is getHoldCount() on the lock's thread.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	s, err := l.do(ctx, "holdcount")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(s)
}

// RemainTTL is remainTimeToLive() in goredisson's terms: 0 for Redisson's
// -2 (no lock), rlock.NoExpiry for -1.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) {
	s, err := l.do(ctx, "remain")
	if err != nil {
		return 0, err
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return 0, err
	case ms == -2:
		return 0, nil
	case ms == -1:
		return rlock.NoExpiry, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// FencedLock is redisson.getFencedLock(name) on a Thread (Redisson 3.19
// and later): a Lock with tokens.
type FencedLock struct {
	*lockBase // every Lock method
}

// lockBase names the Lock a FencedLock embeds (an embedded *Lock would be
// a field named Lock, hiding the method).
type lockBase = Lock

var _ rlock.Locker = (*FencedLock)(nil)

// NewFencedLock returns redisson.getFencedLock(name) on this thread.
func (t *Thread) NewFencedLock(name string) *FencedLock {
	return &FencedLock{lockBase: t.newLock("fenced", name)}
}

func (f *FencedLock) token(ctx context.Context, verb string, more ...string) (int64, bool, error) {
	if err := checkName(f.names[0]); err != nil {
		return 0, false, err
	}
	s, err := f.t.call(ctx, fmt.Sprintf("%s %q", verb, f.Name()), verb, append([]string{escape(f.names[0])}, more...)...)
	if err != nil || s == "false" {
		return 0, false, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil, err
}

// LockToken waits until held, with the watchdog, and returns the token
// [lockAndGetToken()].
func (f *FencedLock) LockToken(ctx context.Context) (int64, error) {
	return f.LockTokenLease(ctx, 0)
}

// LockTokenLease is lockAndGetToken(leaseTime, unit). (Redisson's blocking
// form ignores the lease: see docs/redisson.md.)
func (f *FencedLock) LockTokenLease(ctx context.Context, lease time.Duration) (int64, error) {
	ms, err := millis("lease", lease)
	if err != nil {
		return 0, err
	}
	t, _, err := f.token(ctx, "locktoken", ms)
	return t, err
}

// TryLockToken is tryLockAndGetToken(waitTime, leaseTime): ok false when
// the wait ran out.
func (f *FencedLock) TryLockToken(ctx context.Context, wait, lease time.Duration) (token int64, ok bool, err error) {
	w, err := waitMillis(wait)
	if err != nil {
		return 0, false, err
	}
	ms, err := millis("lease", lease)
	if err != nil {
		return 0, false, err
	}
	return f.token(ctx, "trylocktoken", w, ms)
}

// Token is getToken(): the last token handed out.
func (f *FencedLock) Token(ctx context.Context) (int64, error) {
	t, _, err := f.token(ctx, "token")
	return t, err
}
