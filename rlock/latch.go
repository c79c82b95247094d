package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
)

// CountDownLatch waits for a count to reach zero [getCountDownLatch].
type CountDownLatch struct{ s syncHandle }

// NewCountDownLatch returns the latch of the given name [getCountDownLatch].
func (c *Client) NewCountDownLatch(name string) *CountDownLatch {
	h, _ := newSyncHandle(c, name, "countdownlatch")
	return &CountDownLatch{s: h}
}

func (l *CountDownLatch) handle() *syncHandle {
	if l == nil {
		return nil
	}
	return &l.s
}

func (l *CountDownLatch) keys() []string {
	return []string{l.s.name, layout.LatchChannel(l.s.name)}
}

// TrySetCount sets the count if the key does not exist [trySetCount].
func (l *CountDownLatch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	h := l.handle()
	if err := h.check(ctx, "trysetcount"); err != nil {
		return false, err
	}
	if n < 0 {
		return false, opErr("trysetcount", h.name, fmt.Errorf("%w: count %d", ErrInvalidArgument, n))
	}
	v, err := h.run(ctx, latchScript, l.keys(), "set", h.c.opts.publishCommand, n)
	return v == 1, opErr("trysetcount", h.name, err)
}

// CountDown decrements the count; the last one opens the latch [countDown].
func (l *CountDownLatch) CountDown(ctx context.Context) error {
	h := l.handle()
	if err := h.check(ctx, "countdown"); err != nil {
		return err
	}
	cctx := cleanupCall(ctx)
	defer cctx.stop()
	_, err := h.runUnsure(cctx, latchScript, l.keys(), "countdown", h.c.opts.publishCommand)
	return opErr("countdown", h.name, err)
}

// Count returns the count now (0 when the latch is open) [getCount].
func (l *CountDownLatch) Count(ctx context.Context) (int64, error) {
	h := l.handle()
	if err := h.check(ctx, "count"); err != nil {
		return 0, err
	}
	n, err := h.c.commandInt(ctx, "get", h.name)
	return n, opErr("count", h.name, err)
}

// Await waits until the count is zero or ctx ends [await()].
func (l *CountDownLatch) Await(ctx context.Context) error {
	_, err := l.await(ctx, "await", -1)
	return err
}

// TryAwait is Await within wait (<= 0: looks once) [await(timeout, unit)].
func (l *CountDownLatch) TryAwait(ctx context.Context, wait time.Duration) (bool, error) {
	return l.await(ctx, "tryawait", max(wait, 0))
}

// await waits up to wait (negative: until ctx ends).
func (l *CountDownLatch) await(ctx context.Context, op string, wait time.Duration) (bool, error) {
	h := l.handle()
	if err := h.check(ctx, op); err != nil {
		return false, err
	}
	wait = waitMillis(wait)
	start := time.Now()
	h.observe(ctx, Event{Op: "wait", Start: start})
	deadline := waitDeadline(wait)
	ctx = boundCalls(ctx, deadline)
	ok, err := h.c.waitFor(ctx, &funcWait{waitSpec: waitSpec{
		channel:  layout.LatchChannel(h.name),
		once:     wait == 0,
		deadline: deadline},
		try: func() (bool, time.Duration, bool, error) {
			n, err := h.c.commandInt(ctx, "get", h.name)
			return err == nil && n <= 0, h.safetyPause(), err == nil, err
		},
		retryable: func(err error) bool { return h.c.retryable(ctx, err) },
	})
	err = opErr(op, h.name, h.c.ctxOr(ctx, err))
	h.observe(ctx, Event{Op: "await", Start: start, Acquired: ok, Err: err})
	return ok, err
}

// Name returns the latch's name: its Redis key unless WithNameMapper maps it.
func (l *CountDownLatch) Name() string { return l.handle().nameOr() }

// IsExists reports whether the latch's key exists [isExists()].
func (l *CountDownLatch) IsExists(ctx context.Context) (bool, error) {
	return l.handle().exists(ctx)
}

// Delete deletes (opens) the latch; true if it existed [delete()].
func (l *CountDownLatch) Delete(ctx context.Context) (bool, error) {
	h := l.handle()
	if err := h.check(ctx, "delete"); err != nil {
		return false, err
	}
	v, err := h.run(ctx, latchScript, l.keys(), "delete", h.c.opts.publishCommand)
	return v == 1, opErr("delete", h.name, err)
}
