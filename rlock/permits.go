package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
)

// PermitExpirableSemaphore is a semaphore of permits with ids and leases
// [getPermitExpirableSemaphore].
type PermitExpirableSemaphore struct{ Object }

// NewPermitExpirableSemaphore gets one by name [getPermitExpirableSemaphore].
func (c *Client) NewPermitExpirableSemaphore(name string) *PermitExpirableSemaphore {
	h, aux := newSyncHandle(c, name, "permitsemaphore")
	return &PermitExpirableSemaphore{newObject(h, layout.PermitTimeouts(aux))}
}

func (p *PermitExpirableSemaphore) handle() *syncHandle {
	if p == nil {
		return nil
	}
	return &p.Object.s
}

func (p *PermitExpirableSemaphore) keys() []string {
	n := p.s.name
	return []string{n, p.Object.keys[1], layout.SemaphoreChannel(n), layout.Cancel(n)}
}

// run runs one permits.lua operation.
func (p *PermitExpirableSemaphore) run(ctx context.Context, op string, args ...any) (int64, error) {
	h := &p.s
	return h.run(ctx, permitsScript, p.keys(), append([]any{op, h.c.opts.publishCommand}, args...)...)
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
			if err := checkCount(n); err != nil {
				return 0, opErr(name, h.name, err)
			}
		}
	}
	v, err := p.run(ctx, op, args...)
	return v, opErr(name, h.name, countErr(err))
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

// Acquire waits for a permit with lease and returns its id
// [acquire(leaseTime)].
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

// TryAcquireN is AcquireN within wait [tryAcquire(permits, waitTime,
// leaseTime)].
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
		return nil, sent, false, opErr(op, h.name, fmt.Errorf("%w: %d permits (at least 1)", ErrInvalidArgument, n))
	case checkCount(n) != nil:
		return nil, sent, false, opErr(op, h.name, checkCount(n))
	case lease > 0 && lease < time.Millisecond:
		return nil, sent, false, opErr(op, h.name, fmt.Errorf("%w: lease %v is below 1ms (use <= 0 for a permit that never expires)", ErrInvalidArgument, lease))
	}
	wait = waitMillis(wait)
	start, attempts, contended := time.Now(), 0, 0
	h.observe(ctx, Event{Op: "wait", Start: start})
	deadline := waitDeadline(wait)
	ctx = boundCalls(ctx, deadline)
	ok, err = h.c.waitFor(ctx, &funcWait{waitSpec: waitSpec{
		channel:  layout.SemaphoreChannel(h.name),
		once:     wait == 0,
		deadline: deadline},
		try: func() (bool, time.Duration, bool, error) {
			attempts++
			var pause time.Duration
			var reached bool
			var err error
			sent = time.Now()
			ids, pause, reached, err = p.tryOnce(ctx, n, lease)
			if reached && ids == nil && err == nil {
				contended++
			}
			if pause < 0 || pause > h.safetyPause() {
				pause = h.safetyPause()
			}
			return ids != nil, pause, reached, err
		},
		retryable: func(err error) bool { return h.c.retryable(ctx, err) },
	})
	err = opErr(op, h.name, h.c.ctxOr(ctx, err))
	h.observe(ctx, Event{Op: op, Start: start, Attempts: attempts, Contended: contended, Acquired: ok, Err: err})
	if !ok {
		ids = nil
	}
	return ids, sent, ok, err
}

// tryOnce makes one attempt with n fresh permit ids; it returns the ids
// when it took the permits, else how long until the nearest permit expires
// (-1: none will).
func (p *PermitExpirableSemaphore) tryOnce(ctx context.Context, n int, lease time.Duration) (ids []string, pause time.Duration, reached bool, err error) {
	c := p.s.c
	raws := make([]any, n)
	buf := make([]byte, 16*n)
	if _, err := rand.Read(buf); err != nil {
		return nil, 0, false, err
	}
	for i := range raws {
		raws[i] = string(buf[16*i : 16*(i+1)])
	}
	o := newScriptOp(ctx, permitsScript, boxAll(p.keys()), append([]any{"acquire", c.pubArg, n, lease.Milliseconds()}, raws...)...)
	err = c.exec(ctx, o)
	reason, lost := abandoned(err)
	switch {
	case lost:
		go p.settle(o, raws)
		return nil, 0, false, reason
	case err != nil:
		return nil, 0, false, err
	case o.Outcome() == unknown:
		go p.settle(o, raws)
		return nil, 0, false, o.Err
	case o.Outcome() == notRun || o.ReplyErr() != nil:
		return nil, 0, o.Outcome() == replied, o.ReplyErr()
	}
	switch v, _ := o.V.(int64); {
	case v == 1:
		ids = make([]string, n)
		for i := range ids {
			ids[i] = hex.EncodeToString(buf[16*i : 16*(i+1)])
		}
		return ids, 0, true, nil
	case v >= 0:
		return nil, time.Duration(v) * time.Millisecond, true, nil
	}
	return nil, -1, true, nil
}

// settle gives back the permits of an acquire whose caller left: once its
// reply is in, or, if it never comes, by a settle that also makes the
// acquire do nothing should it still arrive.
func (p *PermitExpirableSemaphore) settle(lost *op, raws []any) {
	c := p.s.c
	ctx, cancel := cleanupCtx(lost.Ctx)
	defer cancel()
	op := "settle"
	if c.awaitLost(ctx, lost) {
		if lost.V != int64(1) {
			return // it took no permit
		}
		op = "releasemany"
	}
	// Both are idempotent: sent again until one is answered.
	for attempt := 0; ; attempt++ {
		_, err := p.run(ctx, op, raws...)
		if err == nil {
			return
		}
		if ctx.Err() != nil || c.sleep(ctx, min(time.Duration(attempt+1)*20*time.Millisecond, 200*time.Millisecond)) != nil {
			c.logger().Warn("goredisson: could not give back the permits of an acquire whose caller had left; they free themselves at their lease",
				"semaphore", p.s.name, "err", err)
			return
		}
	}
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
// cleanup: an ended ctx does not stop it (it runs bounded by 5 s). A release
// is idempotent, so one whose reply was lost is sent again (within that
// bound, else ErrUnknownOutcome); a single id found gone then counts as
// released (the lost call released it, or it expired and went back).
func (p *PermitExpirableSemaphore) release(ctx context.Context, name, op string, ids []string) (int64, error) {
	h := p.handle()
	if err := h.check(ctx, name); err != nil {
		return 0, err
	}
	start := time.Now()
	raws, err := decodeIDs(ids)
	var n int64
	if err == nil {
		rctx := cleanupCall(ctx)
		defer rctx.stop()
		args := append([]any{op, h.c.opts.publishCommand}, raws...)
		lost := false
		for attempt := 0; ; attempt++ {
			n, err = h.runUnsure(rctx, permitsScript, p.keys(), args...)
			var re replyError
			if errors.Is(err, ErrUnknownOutcome) || lost && err != nil && !errors.As(err, &re) {
				lost = true
				if h.c.sleep(rctx, min(time.Duration(attempt+1)*20*time.Millisecond, 200*time.Millisecond)) == nil {
					continue
				}
				if !errors.Is(err, ErrUnknownOutcome) {
					err = unknownOutcome(err)
				}
				break
			}
			if lost && err == nil && n == 0 {
				if op == "release" {
					n = 1 // gone: released by the lost call, or expired and put back
				} else {
					// All or none: released by the lost call, or refused.
					err = fmt.Errorf("%w: a release whose reply was lost was sent again and found the permits gone", ErrUnknownOutcome)
				}
			}
			break
		}
	}
	err = opErr(name, h.name, err)
	h.observe(ctx, Event{Op: "release", Start: start, Err: err})
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
		err = opErr("release", p.s.name, &permitError{ids: []string{permitID}})
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
		err = opErr("release", p.s.name, &permitError{ids: ids})
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
		return false, opErr("updateleasetime", h.name, fmt.Errorf("%w: lease %v is below 1ms (use <= 0 for a permit that never expires)", ErrInvalidArgument, lease))
	}
	raws, err := decodeIDs([]string{permitID})
	if err != nil {
		return false, opErr("updateleasetime", h.name, err)
	}
	v, err := p.run(ctx, "update", raws[0], lease.Milliseconds())
	return v == 1, opErr("updateleasetime", h.name, err)
}

// LeaseTime returns a permit's remaining lease or NoExpiry [getLeaseTime].
func (p *PermitExpirableSemaphore) LeaseTime(ctx context.Context, permitID string) (time.Duration, error) {
	h := p.handle()
	if err := h.check(ctx, "leasetime"); err != nil {
		return 0, err
	}
	raws, err := decodeIDs([]string{permitID})
	if err != nil {
		return 0, opErr("leasetime", h.name, err)
	}
	v, err := p.run(ctx, "leasetime", raws[0])
	switch {
	case err != nil:
		return 0, opErr("leasetime", h.name, err)
	case v == -2:
		return 0, opErr("leasetime", h.name, &permitError{ids: []string{permitID}})
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
