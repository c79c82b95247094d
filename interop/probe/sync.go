package probe

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/goredisson/goredisson/rlock"
)

// synchronizer is the name and thread of a Java synchronizer.
type synchronizer struct {
	t      *Thread
	family string // sem, psem, latch
	name   string
}

func (s *synchronizer) do(ctx context.Context, verb string, more ...string) (string, error) {
	if err := checkName(s.name); err != nil {
		return "", err
	}
	return s.t.call(ctx, fmt.Sprintf("%s.%s %q", s.family, verb, s.name), s.family+"."+verb, append([]string{escape(s.name)}, more...)...)
}

func (s *synchronizer) cleanup(ctx context.Context, verb string, more ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBound)
	defer cancel()
	return s.do(ctx, verb, more...)
}

func (s *synchronizer) number(ctx context.Context, verb string) (int, error) {
	v, err := s.do(ctx, verb)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

func (s *synchronizer) flag(ctx context.Context, verb string, more ...string) (bool, error) {
	v, err := s.do(ctx, verb, more...)
	return v == "true", err
}

func count(n int) string { return strconv.Itoa(n) }

// Semaphore is redisson.getSemaphore(name) on a Thread, with goredisson's
// method names.
type Semaphore struct{ s synchronizer }

// NewSemaphore returns redisson.getSemaphore(name) on this thread.
func (t *Thread) NewSemaphore(name string) *Semaphore {
	return &Semaphore{synchronizer{t: t, family: "sem", name: name}}
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.s.name }

// Thread returns the Java thread the semaphore's calls run on.
func (s *Semaphore) Thread() *Thread { return s.s.t }

// TrySetPermits is trySetPermits(n).
func (s *Semaphore) TrySetPermits(ctx context.Context, n int) (bool, error) {
	return s.s.flag(ctx, "trysetpermits", count(n))
}

// AddPermits is addPermits(n).
func (s *Semaphore) AddPermits(ctx context.Context, n int) error {
	_, err := s.s.do(ctx, "addpermits", count(n))
	return err
}

// AvailablePermits is availablePermits().
func (s *Semaphore) AvailablePermits(ctx context.Context) (int, error) {
	return s.s.number(ctx, "available")
}

// DrainPermits is drainPermits().
func (s *Semaphore) DrainPermits(ctx context.Context) (int, error) {
	return s.s.number(ctx, "drain")
}

// Acquire waits for n permits [acquire(n)]; ctx's end interrupts it.
func (s *Semaphore) Acquire(ctx context.Context, n int) error {
	_, err := s.s.do(ctx, "acquire", count(n))
	return err
}

// TryAcquire is tryAcquire(n, waitTime) (wait <= 0: one attempt).
func (s *Semaphore) TryAcquire(ctx context.Context, n int, wait time.Duration) (bool, error) {
	w, err := waitMillis(wait)
	if err != nil {
		return false, err
	}
	return s.s.flag(ctx, "tryacquire", count(n), w)
}

// Release is release(n); an ended ctx does not stop it.
func (s *Semaphore) Release(ctx context.Context, n int) error {
	_, err := s.s.cleanup(ctx, "release", count(n))
	return err
}

// PermitExpirableSemaphore is redisson.getPermitExpirableSemaphore(name) on
// a Thread, with goredisson's method names. A lease <= 0 is a permit that
// never expires.
type PermitExpirableSemaphore struct{ s synchronizer }

// NewPermitExpirableSemaphore returns
// redisson.getPermitExpirableSemaphore(name) on this thread.
func (t *Thread) NewPermitExpirableSemaphore(name string) *PermitExpirableSemaphore {
	return &PermitExpirableSemaphore{synchronizer{t: t, family: "psem", name: name}}
}

// Name returns the semaphore's name.
func (p *PermitExpirableSemaphore) Name() string { return p.s.name }

// Thread returns the Java thread the semaphore's calls run on.
func (p *PermitExpirableSemaphore) Thread() *Thread { return p.s.t }

// TrySetPermits is trySetPermits(n).
func (p *PermitExpirableSemaphore) TrySetPermits(ctx context.Context, n int) (bool, error) {
	return p.s.flag(ctx, "trysetpermits", count(n))
}

// SetPermits is setPermits(n) (Redisson 3.20 and later; before, errors.ErrUnsupported).
func (p *PermitExpirableSemaphore) SetPermits(ctx context.Context, n int) error {
	_, err := p.s.do(ctx, "setpermits", count(n))
	return err
}

// AddPermits is addPermits(n).
func (p *PermitExpirableSemaphore) AddPermits(ctx context.Context, n int) error {
	_, err := p.s.do(ctx, "addpermits", count(n))
	return err
}

// AvailablePermits is availablePermits().
func (p *PermitExpirableSemaphore) AvailablePermits(ctx context.Context) (int, error) {
	return p.s.number(ctx, "available")
}

// Permits is getPermits(): the permits set, held or not (Redisson 3.20
// and later).
func (p *PermitExpirableSemaphore) Permits(ctx context.Context) (int, error) {
	return p.s.number(ctx, "permits")
}

// AcquiredPermits is acquiredPermits() (Redisson 3.20 and later).
func (p *PermitExpirableSemaphore) AcquiredPermits(ctx context.Context) (int, error) {
	return p.s.number(ctx, "acquired")
}

// Acquire waits for a permit with lease and returns its id
// [acquire(leaseTime)]; ctx's end interrupts it.
func (p *PermitExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (permitID string, err error) {
	ms, err := millis("lease", lease)
	if err != nil {
		return "", err
	}
	return p.s.do(ctx, "acquire", ms)
}

// TryAcquire is tryAcquire(waitTime, leaseTime): ok false when the wait
// ran out.
func (p *PermitExpirableSemaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (permitID string, ok bool, err error) {
	w, err := waitMillis(wait)
	if err != nil {
		return "", false, err
	}
	ms, err := millis("lease", lease)
	if err != nil {
		return "", false, err
	}
	id, err := p.s.do(ctx, "tryacquire", w, ms)
	if err != nil || id == "false" {
		return "", false, err
	}
	return id, true, nil
}

// Release is release(permitId): a permit any client took, by id. An id
// not held is an IllegalArgumentException (ErrIllegalArgument). An ended
// ctx does not stop it.
func (p *PermitExpirableSemaphore) Release(ctx context.Context, permitID string) error {
	_, err := p.s.cleanup(ctx, "release", escape(permitID))
	return err
}

// TryRelease is tryRelease(permitId).
func (p *PermitExpirableSemaphore) TryRelease(ctx context.Context, permitID string) (bool, error) {
	v, err := p.s.cleanup(ctx, "tryrelease", escape(permitID))
	return v == "true", err
}

// UpdateLeaseTime is updateLeaseTime(permitId, leaseTime).
func (p *PermitExpirableSemaphore) UpdateLeaseTime(ctx context.Context, permitID string, lease time.Duration) (bool, error) {
	ms, err := millis("lease", lease)
	if err != nil {
		return false, err
	}
	return p.s.flag(ctx, "updatelease", escape(permitID), ms)
}

// LeaseTime is getLeaseTime(permitId) (Redisson 3.41 and later):
// rlock.NoExpiry for a permit that never expires.
func (p *PermitExpirableSemaphore) LeaseTime(ctx context.Context, permitID string) (time.Duration, error) {
	v, err := p.s.do(ctx, "leasetime", escape(permitID))
	if err != nil {
		return 0, err
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, err
	}
	if ms == -1 {
		return rlock.NoExpiry, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// CountDownLatch is redisson.getCountDownLatch(name) on a Thread.
type CountDownLatch struct{ s synchronizer }

// NewCountDownLatch returns redisson.getCountDownLatch(name) on this
// thread.
func (t *Thread) NewCountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{synchronizer{t: t, family: "latch", name: name}}
}

// Name returns the latch's name.
func (l *CountDownLatch) Name() string { return l.s.name }

// Thread returns the Java thread the latch's calls run on.
func (l *CountDownLatch) Thread() *Thread { return l.s.t }

// TrySetCount is trySetCount(n).
func (l *CountDownLatch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	return l.s.flag(ctx, "trysetcount", strconv.FormatInt(n, 10))
}

// CountDown is countDown(); an ended ctx does not stop it.
func (l *CountDownLatch) CountDown(ctx context.Context) error {
	_, err := l.s.cleanup(ctx, "countdown")
	return err
}

// Count is getCount().
func (l *CountDownLatch) Count(ctx context.Context) (int64, error) {
	v, err := l.s.do(ctx, "count")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// Await waits until the count is 0 [await()]; ctx's end interrupts it.
func (l *CountDownLatch) Await(ctx context.Context) error {
	_, err := l.s.do(ctx, "await")
	return err
}

// TryAwait is await(waitTime): false when the wait ran out.
func (l *CountDownLatch) TryAwait(ctx context.Context, wait time.Duration) (bool, error) {
	w, err := waitMillis(wait)
	if err != nil {
		return false, err
	}
	return l.s.flag(ctx, "tryawait", w)
}
