package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
)

// Semaphore is a count of permits shared by all clients [getSemaphore].
type Semaphore struct{ Object }

// NewSemaphore returns the semaphore of the given name [getSemaphore].
func (c *Client) NewSemaphore(name string) *Semaphore {
	h, _ := newSyncHandle(c, name, "semaphore")
	return &Semaphore{newObject(h)}
}

func (s *Semaphore) handle() *syncHandle {
	if s == nil {
		return nil
	}
	return &s.Object.s
}

func (s *Semaphore) keys() []string {
	return []string{s.s.name, layout.SemaphoreChannel(s.s.name)}
}

// op runs one semaphore.lua operation.
func (s *Semaphore) op(ctx context.Context, name, op string, n int, more ...any) (int64, error) {
	h := s.handle()
	if err := h.check(ctx, name); err != nil {
		return 0, err
	}
	if err := checkCount(n); err != nil {
		return 0, opErr(name, h.name, err)
	}
	v, err := h.run(ctx, semaphoreScript, s.keys(), append([]any{op, n, h.c.opts.publishCommand}, more...)...)
	return v, opErr(name, h.name, countErr(err))
}

// TrySetPermits sets the permits if the key does not exist [trySetPermits].
func (s *Semaphore) TrySetPermits(ctx context.Context, n int) (bool, error) {
	v, err := s.op(ctx, "trysetpermits", "set", n)
	return v == 1, err
}

// TrySetPermitsTTL is TrySetPermits whose key lives ttl
// [trySetPermits(permits, timeToLive)].
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
		err = opErr("releaseifexists", h.name, fmt.Errorf("%w: %d permits", ErrInvalidArgument, n))
	case checkCount(n) != nil:
		err = opErr("releaseifexists", h.name, checkCount(n))
	case n > 0:
		rctx := cleanupCall(ctx)
		defer rctx.stop()
		v, err = h.runUnsure(rctx, semaphoreScript, s.keys(), "releaseifexists", n, h.c.opts.publishCommand)
		err = opErr("releaseifexists", h.name, countErr(err))
	}
	h.observe(ctx, Event{Op: "release", Start: start, Err: err})
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
	n, err := h.c.commandInt(ctx, "get", h.name)
	return int(n), opErr("availablepermits", h.name, err)
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
	case checkCount(n) != nil:
		err = opErr("release", h.name, checkCount(n))
	case n > 0:
		rctx := cleanupCall(ctx)
		defer rctx.stop()
		_, err = h.runUnsure(rctx, semaphoreScript, s.keys(), "release", n, h.c.opts.publishCommand)
		err = opErr("release", h.name, countErr(err))
	}
	h.observe(ctx, Event{Op: "release", Start: start, Err: err})
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
		return false, opErr(op, h.name, fmt.Errorf("%w: %d permits", ErrInvalidArgument, n))
	}
	if err := checkCount(n); err != nil {
		return false, opErr(op, h.name, err)
	}
	wait = waitMillis(wait)
	if n == 0 {
		return true, nil
	}
	start, attempts, contended := time.Now(), 0, 0
	h.observe(ctx, Event{Op: "wait", Start: start})
	deadline := waitDeadline(wait)
	ctx = boundCalls(ctx, deadline)
	ok, err := h.c.waitFor(ctx, &funcWait{waitSpec: waitSpec{
		channel:  layout.SemaphoreChannel(h.name),
		once:     wait == 0,
		deadline: deadline},
		try: func() (bool, time.Duration, bool, error) {
			attempts++
			ok, reached, err := s.tryOnce(ctx, n)
			if reached && !ok && err == nil {
				contended++
			}
			return ok, h.safetyPause(), reached, err
		},
		retryable: func(err error) bool { return h.c.retryable(ctx, err) },
	})
	err = opErr(op, h.name, h.c.ctxOr(ctx, err))
	h.observe(ctx, Event{Op: op, Start: start, Attempts: attempts, Contended: contended, Acquired: ok, Err: err})
	return ok, err
}

// tryOnce runs the acquire once. A call its caller stopped waiting for is
// given back in the background once its reply comes.
func (s *Semaphore) tryOnce(ctx context.Context, n int) (ok, reached bool, err error) {
	c := s.s.c
	o := newScriptOp(ctx, semaphoreScript, boxAll(s.keys()), "acquire", n, c.pubArg)
	err = c.exec(ctx, o)
	switch {
	case err != nil:
		if reason, ok := abandoned(err); ok {
			go s.giveBackLost(o, n)
			return false, false, reason
		}
		return false, false, err
	case o.Outcome() == unknown:
		go s.giveBackLost(o, n)
		return false, false, o.Err
	case o.Outcome() == notRun:
		return false, false, o.ReplyErr()
	}
	if err := o.ReplyErr(); err != nil {
		return false, true, err
	}
	return o.V == int64(1), true, nil
}

// giveBackLost waits for an acquire whose caller left and gives back the
// permits it took.
func (s *Semaphore) giveBackLost(lost *op, n int) {
	c := s.s.c
	ctx, cancel := cleanupCtx(lost.Ctx)
	defer cancel()
	if !c.awaitLost(ctx, lost) {
		c.logger().Warn("goredisson: an acquire of a semaphore lost its reply; its permits may have been taken and cannot be given back",
			"semaphore", s.s.name, "permits", n)
		return
	}
	if lost.V != int64(1) {
		return
	}
	if _, err := s.s.run(ctx, semaphoreScript, s.keys(), "release", n, c.opts.publishCommand); err != nil {
		c.logger().Warn("goredisson: could not give back the permits of an acquire whose caller had left",
			"semaphore", s.s.name, "permits", n, "err", err)
	}
}

func (s *syncHandle) nameOr() string {
	if s == nil {
		return ""
	}
	return s.logical
}

// observe reports a synchronizer's operation (Kind, Lock and Duration
// filled in here) to the Client's Observer.
func (s *syncHandle) observe(ctx context.Context, e Event) {
	if s == nil || s.c == nil || s.c.opts.observer == nil {
		return
	}
	e.Kind, e.Lock, e.Duration = s.kind, s.name, time.Since(e.Start)
	s.c.opts.observer.Observe(ctx, e)
}
