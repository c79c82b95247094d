package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
)

// PermitExpirableSemaphore is a semaphore whose permits have ids and free
// themselves at the end of their lease, shared by Java (Redisson's
// RPermitExpirableSemaphore) and Go clients of one name
// [getPermitExpirableSemaphore]: the counter under the name, the permits
// taken in the sorted set {name}:timeout (member: the id's 16 bytes, score:
// its expiry), the channel redisson_sc:{name}. A permit id is the hex of 16
// random bytes, as Redisson's, so either side can release the other's.
//
// A lease <= 0 gives a permit that never expires (Redisson's -1). An
// acquire whose caller left before its reply is settled in the background:
// the permit it may have taken is given back, and it does nothing if it
// still arrives. The settle tries for 5 s; if Redis stays unreachable that
// long it is logged, and such a permit frees itself only at its lease (never,
// for a lease <= 0).
type PermitExpirableSemaphore struct{ s syncHandle }

// NewPermitExpirableSemaphore returns the semaphore of the given name
// [getPermitExpirableSemaphore].
func (c *Client) NewPermitExpirableSemaphore(name string) *PermitExpirableSemaphore {
	return &PermitExpirableSemaphore{s: syncHandle{c: c, name: name, kind: "permitsemaphore"}}
}

func (p *PermitExpirableSemaphore) handle() *syncHandle {
	if p == nil {
		return nil
	}
	return &p.s
}

func (p *PermitExpirableSemaphore) keys() []string {
	n := p.s.name
	return []string{n, layout.PermitTimeouts(n), layout.SemaphoreChannel(n), layout.Cancel(n)}
}

// run runs one permits.lua operation.
func (p *PermitExpirableSemaphore) run(ctx context.Context, op string, args ...any) (int64, error) {
	h := &p.s
	return h.run(ctx, permitsScript, p.keys(), append([]any{op, h.c.opts.publishCommand}, args...)...)
}

// TrySetPermits sets the number of permits if none were set yet and
// reports whether it did [trySetPermits]. n < 0 is ErrInvalidArgument.
func (p *PermitExpirableSemaphore) TrySetPermits(ctx context.Context, n int) (bool, error) {
	h := p.handle()
	if err := h.check(ctx, "trysetpermits"); err != nil {
		return false, err
	}
	if n < 0 {
		return false, opErr("trysetpermits", h.name, fmt.Errorf("%w: %d permits", ErrInvalidArgument, n))
	}
	v, err := p.run(ctx, "set", n)
	return v == 1, opErr("trysetpermits", h.name, err)
}

// AvailablePermits returns the permits available now, after putting back
// those whose lease ran out [availablePermits].
func (p *PermitExpirableSemaphore) AvailablePermits(ctx context.Context) (int, error) {
	h := p.handle()
	if err := h.check(ctx, "availablepermits"); err != nil {
		return 0, err
	}
	v, err := p.run(ctx, "available")
	return int(v), opErr("availablepermits", h.name, err)
}

// Acquire takes a permit with the given lease (<= 0: never expires),
// waiting until one is available or ctx ends, and returns its id
// [acquire(leaseTime)].
func (p *PermitExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (permitID string, err error) {
	id, _, err := p.acquire(ctx, "acquire", -1, lease)
	return id, err
}

// TryAcquire takes a permit with the given lease within wait (<= 0: one
// attempt) and returns its id; ok is false when the wait ran out
// [tryAcquire(waitTime, leaseTime)]. A wait or lease below 1 ms (but above
// 0) is ErrInvalidArgument.
func (p *PermitExpirableSemaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (permitID string, ok bool, err error) {
	return p.acquire(ctx, "tryacquire", max(wait, 0), lease)
}

func (p *PermitExpirableSemaphore) acquire(ctx context.Context, op string, wait, lease time.Duration) (string, bool, error) {
	h := p.handle()
	if err := h.check(ctx, op); err != nil {
		return "", false, err
	}
	if err := checkWait(wait); err != nil {
		return "", false, opErr(op, h.name, err)
	}
	if lease > 0 && lease < time.Millisecond {
		return "", false, opErr(op, h.name, fmt.Errorf("%w: lease %v is below 1ms (use <= 0 for a permit that never expires)", ErrInvalidArgument, lease))
	}
	start, attempts, contended := time.Now(), 0, 0
	h.observe(ctx, Event{Op: "wait", Start: start})
	var id string
	ok, err := h.c.waitFor(ctx, waitSpec{
		channel:  layout.SemaphoreChannel(h.name),
		once:     wait == 0,
		deadline: waitDeadline(wait),
		try: func() (bool, time.Duration, bool, error) {
			attempts++
			var pause time.Duration
			var reached bool
			var err error
			id, pause, reached, err = p.tryOnce(ctx, lease)
			if reached && id == "" && err == nil {
				contended++
			}
			if pause < 0 || pause > h.safetyPause() {
				pause = h.safetyPause()
			}
			return id != "", pause, reached, err
		},
		retryable: func(err error) bool { return h.c.retryable(ctx, err) },
	})
	err = opErr(op, h.name, h.c.ctxOr(ctx, err))
	h.observe(ctx, Event{Op: op, Start: start, Attempts: attempts, Contended: contended, Acquired: ok, Err: err})
	if !ok {
		id = ""
	}
	return id, ok, err
}

// tryOnce makes one attempt with a fresh permit id; it returns the id when
// it took the permit, else how long until the nearest permit expires (-1:
// none will).
func (p *PermitExpirableSemaphore) tryOnce(ctx context.Context, lease time.Duration) (id string, pause time.Duration, reached bool, err error) {
	c := p.s.c
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", 0, false, err
	}
	o := newScriptOp(ctx, permitsScript, boxAll(p.keys()), "acquire", c.pubArg, string(raw), lease.Milliseconds())
	err = c.exec(ctx, o)
	reason, lost := abandoned(err)
	switch {
	case lost:
		go p.settle(o, raw)
		return "", 0, false, reason
	case err != nil:
		return "", 0, false, err
	case o.outcome() == unknown:
		go p.settle(o, raw)
		return "", 0, false, o.err
	case o.outcome() == notRun || o.replyErr() != nil:
		return "", 0, o.outcome() == replied, o.replyErr()
	}
	switch n, _ := o.v.(int64); {
	case n == 1:
		return hex.EncodeToString(raw), 0, true, nil
	case n >= 0:
		return "", time.Duration(n) * time.Millisecond, true, nil
	}
	return "", -1, true, nil
}

// settle gives back the permit of an acquire whose caller left: once its
// reply is in, or, if it never comes, by a settle that also makes the
// acquire do nothing should it still arrive.
func (p *PermitExpirableSemaphore) settle(lost *op, raw []byte) {
	c := p.s.c
	ctx, cancel := cleanupCtx(lost.ctx)
	defer cancel()
	op := "settle"
	if c.awaitLost(ctx, lost) {
		if lost.v != int64(1) {
			return // it took no permit
		}
		op = "release"
	}
	if _, err := p.run(ctx, op, string(raw)); err != nil {
		c.logger().Warn("goredisson: could not give back the permit of an acquire whose caller had left; it frees itself at its lease",
			"semaphore", p.s.name, "err", err)
	}
}

// Release gives the permit back [release(permitId)]. It is cleanup, like
// Unlock: an ended ctx does not stop it (it runs bounded by 5 s). An id
// that is unknown,
// already released or whose lease ran out is ErrNotHeld (Redisson's
// IllegalArgumentException "has already been released or doesn't exist");
// an empty or malformed id is ErrInvalidArgument.
func (p *PermitExpirableSemaphore) Release(ctx context.Context, permitID string) error {
	h := p.handle()
	if err := h.check(ctx, "release"); err != nil {
		return err
	}
	start := time.Now()
	raw, derr := hex.DecodeString(permitID)
	var err error
	switch {
	case permitID == "" || derr != nil:
		err = fmt.Errorf("%w: permit id %q is not the hex of a permit's bytes", ErrInvalidArgument, permitID)
	default:
		rctx, cancel := cleanupCall(ctx)
		defer cancel()
		var n int64
		n, err = p.run(rctx, "release", string(raw))
		reason, lost := abandoned(err)
		switch {
		case lost:
			err = fmt.Errorf("the release may not have taken effect: %w", reason)
		case err == nil && n == 0:
			err = ErrNotHeld
		}
	}
	err = opErr("release", h.name, err)
	h.observe(ctx, Event{Op: "release", Start: start, Err: err})
	return err
}
