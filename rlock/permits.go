package rlock

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// PermitExpirableSemaphore is a semaphore of permits with ids and leases.
type PermitExpirableSemaphore struct{ Object }

// NewPermitExpirableSemaphore gets one by name [getPermitExpirableSemaphore].
func (c *Client) NewPermitExpirableSemaphore(name string) *PermitExpirableSemaphore {
	return &PermitExpirableSemaphore{newObject(newSyncHandle(c, name, "permitsemaphore"))}
}

func (p *PermitExpirableSemaphore) handle() *syncHandle {
	if p == nil {
		return nil
	}
	return &p.Object.s
}

// call checks the handle and runs one operation, its error wrapped with
// name.
func (p *PermitExpirableSemaphore) call(ctx context.Context, name, op string, args ...any) (int64, error) {
	h := p.handle()
	if err := h.check(ctx, name); err != nil {
		return 0, err
	}
	if len(args) > 0 {
		if n, ok := args[0].(int); ok {
			if err := engine.CheckCount(n); err != nil {
				return 0, opErr(name, h.Key(), err)
			}
		}
	}
	v, err := h.Permits(ctx, op, args...)
	return v, opErr(name, h.Key(), engine.CountErr(err))
}

// TrySetPermits sets the permits if none were set [trySetPermits].
func (p *PermitExpirableSemaphore) TrySetPermits(ctx context.Context, n int) (bool, error) {
	v, err := p.call(ctx, "trysetpermits", "set", n)
	return v == 1, err
}

// SetPermits sets the permits, available and taken, to n [setPermits].
func (p *PermitExpirableSemaphore) SetPermits(ctx context.Context, n int) error {
	_, err := p.call(ctx, "setpermits", "setpermits", n)
	return err
}

// AddPermits adds n permits (n < 0 takes away) [addPermits].
func (p *PermitExpirableSemaphore) AddPermits(ctx context.Context, n int) error {
	_, err := p.call(ctx, "addpermits", "add", n)
	return err
}

// AvailablePermits returns the permits available now [availablePermits].
func (p *PermitExpirableSemaphore) AvailablePermits(ctx context.Context) (int, error) {
	v, err := p.call(ctx, "availablepermits", "available")
	return int(v), err
}

// Permits returns the permits available and taken together [getPermits].
func (p *PermitExpirableSemaphore) Permits(ctx context.Context) (int, error) {
	v, err := p.call(ctx, "permits", "permits")
	return int(v), err
}

// AcquiredPermits returns the permits held now [acquiredPermits].
func (p *PermitExpirableSemaphore) AcquiredPermits(ctx context.Context) (int, error) {
	v, err := p.call(ctx, "acquiredpermits", "acquired")
	return int(v), err
}

// Acquire waits for a permit with lease, returns its id [acquire(leaseTime)].
func (p *PermitExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (permitID string, err error) {
	ids, _, _, err := p.acquire(ctx, "acquire", 1, -1, lease)
	if len(ids) == 0 {
		return "", err
	}
	return ids[0], err
}

// TryAcquire is Acquire within wait [tryAcquire(waitTime, leaseTime)].
func (p *PermitExpirableSemaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (permitID string, ok bool, err error) {
	ids, _, ok, err := p.acquire(ctx, "tryacquire", 1, max(wait, 0), lease)
	if len(ids) == 0 {
		return "", ok, err
	}
	return ids[0], ok, err
}

// AcquireN takes n permits at once [acquire(permits, leaseTime)].
func (p *PermitExpirableSemaphore) AcquireN(ctx context.Context, n int, lease time.Duration) ([]string, error) {
	ids, _, _, err := p.acquire(ctx, "acquire", n, -1, lease)
	return ids, err
}

// TryAcquireN is AcquireN within wait [tryAcquire(permits, wait, lease)].
func (p *PermitExpirableSemaphore) TryAcquireN(ctx context.Context, n int, wait, lease time.Duration) ([]string, bool, error) {
	ids, _, ok, err := p.acquire(ctx, "tryacquire", n, max(wait, 0), lease)
	return ids, ok, err
}

// acquire takes n permits within wait (negative: until ctx ends). sent is
// when the attempt that took them was sent: their lease runs from no
// earlier.
func (p *PermitExpirableSemaphore) acquire(ctx context.Context, op string, n int, wait, lease time.Duration) (ids []string, sent time.Time, ok bool, err error) {
	h := p.handle()
	if err := h.check(ctx, op); err != nil {
		return nil, sent, false, err
	}
	switch {
	case n < 1:
		return nil, sent, false, opErr(op, h.Key(), fmt.Errorf("%w: %d permits (at least 1)", ErrInvalidArgument, n))
	case engine.CheckCount(n) != nil:
		return nil, sent, false, opErr(op, h.Key(), engine.CheckCount(n))
	case lease > 0 && lease < time.Millisecond:
		return nil, sent, false, opErr(op, h.Key(), fmt.Errorf("%w: lease %v is below 1ms (use <= 0 for a permit that never expires)", ErrInvalidArgument, lease))
	}
	wait = waitMillis(wait)
	start := time.Now()
	h.observe(ctx, engine.Event{Op: "wait", Start: start})
	ids, sent, a, err := h.AcquirePermits(ctx, n, wait, lease)
	err = opErr(op, h.Key(), err)
	h.observe(ctx, engine.Event{Op: op, Start: start, Attempts: a.Attempts, Contended: a.Contended, Acquired: a.Held, Err: err})
	return ids, sent, a.Held, err
}

// permitError is the ErrNotHeld of permit ids that were released already,
// whose lease ran out, or that never existed, worded as Redisson's
// IllegalArgumentException.
type permitError struct{ ids []string }

func (e *permitError) Error() string {
	if len(e.ids) == 1 {
		return "permit with id " + e.ids[0] + " has already been released or does not exist"
	}
	return "permits with ids [" + strings.Join(e.ids, ", ") + "] have already been released or do not exist"
}

// Is makes the error ErrNotHeld for errors.Is.
func (e *permitError) Is(target error) bool { return target == ErrNotHeld }

// decodeIDs returns the bytes of the distinct permit ids, or
// ErrInvalidArgument for none at all or one that is not hex.
func decodeIDs(ids []string) ([]any, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: no permit ids", ErrInvalidArgument)
	}
	raws := make([]any, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		raw, err := hex.DecodeString(id)
		if id == "" || err != nil {
			return nil, fmt.Errorf("%w: permit id %q is not the hex of a permit's bytes", ErrInvalidArgument, id)
		}
		if !seen[string(raw)] {
			seen[string(raw)] = true
			raws = append(raws, string(raw))
		}
	}
	return raws, nil
}

// release runs a release of ids (op "release" or "releasemany") as
// cleanup: an ended ctx does not stop it (see
// engine.SyncHandle.ReleasePermits).
func (p *PermitExpirableSemaphore) release(ctx context.Context, name, op string, ids []string) (int64, error) {
	h := p.handle()
	if err := h.check(ctx, name); err != nil {
		return 0, err
	}
	start := time.Now()
	raws, err := decodeIDs(ids)
	var n int64
	if err == nil {
		n, err = h.ReleasePermits(ctx, op, raws)
	}
	err = opErr(name, h.Key(), err)
	h.observe(ctx, engine.Event{Op: "release", Start: start, Err: err})
	return n, err
}

// TryRelease is Release, reporting whether it did [tryRelease(permitId)].
func (p *PermitExpirableSemaphore) TryRelease(ctx context.Context, permitID string) (bool, error) {
	n, err := p.release(ctx, "tryrelease", "release", []string{permitID})
	return n == 1, err
}

// Release gives the permit back [release(permitId)].
func (p *PermitExpirableSemaphore) Release(ctx context.Context, permitID string) error {
	n, err := p.release(ctx, "release", "release", []string{permitID})
	if err == nil && n != 1 {
		err = opErr("release", p.s.Key(), &permitError{ids: []string{permitID}})
	}
	return err
}

// TryReleaseN is ReleaseN, returning how many [tryRelease(List)].
func (p *PermitExpirableSemaphore) TryReleaseN(ctx context.Context, ids []string) (int, error) {
	n, err := p.release(ctx, "tryrelease", "releasemany", ids)
	return int(n), err
}

// ReleaseN gives the permits back, all or none [release(List)].
func (p *PermitExpirableSemaphore) ReleaseN(ctx context.Context, ids []string) error {
	n, err := p.release(ctx, "release", "releasemany", ids)
	if err == nil && int(n) != distinct(ids) {
		err = opErr("release", p.s.Key(), &permitError{ids: ids})
	}
	return err
}

// UpdateLeaseTime sets a held permit's lease from now [updateLeaseTime].
func (p *PermitExpirableSemaphore) UpdateLeaseTime(ctx context.Context, permitID string, lease time.Duration) (bool, error) {
	h := p.handle()
	if err := h.check(ctx, "updateleasetime"); err != nil {
		return false, err
	}
	if lease > 0 && lease < time.Millisecond {
		return false, opErr("updateleasetime", h.Key(), fmt.Errorf("%w: lease %v is below 1ms (use <= 0 for a permit that never expires)", ErrInvalidArgument, lease))
	}
	raws, err := decodeIDs([]string{permitID})
	if err != nil {
		return false, opErr("updateleasetime", h.Key(), err)
	}
	v, err := h.Permits(ctx, "update", raws[0], lease.Milliseconds())
	return v == 1, opErr("updateleasetime", h.Key(), err)
}

// LeaseTime returns a permit's remaining lease or NoExpiry [getLeaseTime].
func (p *PermitExpirableSemaphore) LeaseTime(ctx context.Context, permitID string) (time.Duration, error) {
	h := p.handle()
	if err := h.check(ctx, "leasetime"); err != nil {
		return 0, err
	}
	raws, err := decodeIDs([]string{permitID})
	if err != nil {
		return 0, opErr("leasetime", h.Key(), err)
	}
	v, err := h.Permits(ctx, "leasetime", raws[0])
	switch {
	case err != nil:
		return 0, opErr("leasetime", h.Key(), err)
	case v == -2:
		return 0, opErr("leasetime", h.Key(), &permitError{ids: []string{permitID}})
	case v == -1:
		return NoExpiry, nil
	}
	return time.Duration(v) * time.Millisecond, nil
}

// distinct returns how many different ids there are.
func distinct(ids []string) int {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[strings.ToLower(id)] = true
	}
	return len(seen)
}
