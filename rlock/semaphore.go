package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// Semaphore is a count of permits shared by all clients [getSemaphore].
type Semaphore struct{ Object }

// NewSemaphore returns the semaphore of the given name [getSemaphore].
func (c *Client) NewSemaphore(name string) *Semaphore {
	return &Semaphore{newObject(newSyncHandle(c, name, "semaphore"))}
}

func (s *Semaphore) handle() *syncHandle {
	if s == nil {
		return nil
	}
	return &s.Object.s
}

// op runs one semaphore.lua operation.
func (s *Semaphore) op(ctx context.Context, name, op string, n int, more ...any) (int64, error) {
	h := s.handle()
	if err := h.check(ctx, name); err != nil {
		return 0, err
	}
	if err := engine.CheckCount(n); err != nil {
		return 0, opErr(name, h.Key(), err)
	}
	v, err := h.Semaphore(ctx, op, n, more...)
	return v, opErr(name, h.Key(), engine.CountErr(err))
}

// TrySetPermits sets the permits if the key does not exist [trySetPermits].
func (s *Semaphore) TrySetPermits(ctx context.Context, n int) (bool, error) {
	v, err := s.op(ctx, "trysetpermits", "set", n)
	return v == 1, err
}

// TrySetPermitsTTL is TrySetPermits with a key ttl [trySetPermits(n, ttl)].
func (s *Semaphore) TrySetPermitsTTL(ctx context.Context, n int, ttl time.Duration) (bool, error) {
	if ttl < time.Millisecond {
		return false, opErr("trysetpermits", s.handle().nameOr(), fmt.Errorf("%w: time to live %v is below 1ms", ErrInvalidArgument, ttl))
	}
	v, err := s.op(ctx, "trysetpermits", "setttl", n, ttl.Milliseconds())
	return v == 1, err
}

// ReleaseIfExists is Release if the key exists [releaseIfExists(permits)].
func (s *Semaphore) ReleaseIfExists(ctx context.Context, n int) (bool, error) {
	h := s.handle()
	if err := h.check(ctx, "releaseifexists"); err != nil {
		return false, err
	}
	start := time.Now()
	var err error
	var v int64
	switch {
	case n < 0:
		err = opErr("releaseifexists", h.Key(), fmt.Errorf("%w: %d permits", ErrInvalidArgument, n))
	case engine.CheckCount(n) != nil:
		err = opErr("releaseifexists", h.Key(), engine.CheckCount(n))
	case n > 0:
		v, err = h.ReleaseSemaphore(ctx, "releaseifexists", n)
		err = opErr("releaseifexists", h.Key(), engine.CountErr(err))
	}
	h.observe(ctx, engine.Event{Op: "release", Start: start, Err: err})
	return v == 1, err
}

// AddPermits adds n permits (n < 0 takes away) [addPermits].
func (s *Semaphore) AddPermits(ctx context.Context, n int) error {
	_, err := s.op(ctx, "addpermits", "add", n)
	return err
}

// AvailablePermits returns the permits available now [availablePermits].
func (s *Semaphore) AvailablePermits(ctx context.Context) (int, error) {
	h := s.handle()
	if err := h.check(ctx, "availablepermits"); err != nil {
		return 0, err
	}
	n, err := h.Get(ctx)
	return int(n), opErr("availablepermits", h.Key(), err)
}

// DrainPermits zeroes the count and returns what it was [drainPermits].
func (s *Semaphore) DrainPermits(ctx context.Context) (int, error) {
	v, err := s.op(ctx, "drainpermits", "drain", 0)
	return int(v), err
}

// Release gives n permits back and wakes waiters [release(n)].
func (s *Semaphore) Release(ctx context.Context, n int) error {
	h := s.handle()
	if err := h.check(ctx, "release"); err != nil {
		return err
	}
	start := time.Now()
	var err error
	switch {
	case n < 0:
		err = opErr("release", h.nameOr(), fmt.Errorf("%w: %d permits", ErrInvalidArgument, n))
	case engine.CheckCount(n) != nil:
		err = opErr("release", h.Key(), engine.CheckCount(n))
	case n > 0:
		_, err = h.ReleaseSemaphore(ctx, "release", n)
		err = opErr("release", h.Key(), engine.CountErr(err))
	}
	h.observe(ctx, engine.Event{Op: "release", Start: start, Err: err})
	return err
}

// Acquire waits until n permits are available and takes them [acquire(n)].
func (s *Semaphore) Acquire(ctx context.Context, n int) error {
	_, err := s.acquire(ctx, "acquire", n, -1)
	return err
}

// TryAcquire takes n permits within wait (<= 0: once) [tryAcquire(n, wait)].
func (s *Semaphore) TryAcquire(ctx context.Context, n int, wait time.Duration) (bool, error) {
	return s.acquire(ctx, "tryacquire", n, max(wait, 0))
}

// acquire waits up to wait (negative: until ctx ends).
func (s *Semaphore) acquire(ctx context.Context, op string, n int, wait time.Duration) (bool, error) {
	h := s.handle()
	if err := h.check(ctx, op); err != nil {
		return false, err
	}
	if n < 0 {
		return false, opErr(op, h.Key(), fmt.Errorf("%w: %d permits", ErrInvalidArgument, n))
	}
	if err := engine.CheckCount(n); err != nil {
		return false, opErr(op, h.Key(), err)
	}
	wait = waitMillis(wait)
	if n == 0 {
		return true, nil
	}
	start := time.Now()
	h.observe(ctx, engine.Event{Op: "wait", Start: start})
	a, err := h.AcquireSemaphore(ctx, n, wait)
	err = opErr(op, h.Key(), err)
	h.observe(ctx, engine.Event{Op: op, Start: start, Attempts: a.Attempts, Contended: a.Contended, Acquired: a.Held, Err: err})
	return a.Held, err
}
