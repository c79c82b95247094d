package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// CountDownLatch waits for a count to reach zero [getCountDownLatch].
type CountDownLatch struct{ s syncHandle }

// NewCountDownLatch returns the latch of the given name [getCountDownLatch].
func (c *Client) NewCountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{s: newSyncHandle(c, name, "countdownlatch")}
}

func (l *CountDownLatch) handle() *syncHandle {
	if l == nil {
		return nil
	}
	return &l.s
}

// TrySetCount sets the count if the key does not exist [trySetCount].
func (l *CountDownLatch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	h := l.handle()
	if err := h.check(ctx, "trysetcount"); err != nil {
		return false, err
	}
	if n < 0 {
		return false, opErr("trysetcount", h.Key(), fmt.Errorf("%w: count %d", ErrInvalidArgument, n))
	}
	v, err := h.Latch(ctx, "set", n)
	return v == 1, opErr("trysetcount", h.Key(), err)
}

// CountDown decrements the count; the last one opens the latch [countDown].
func (l *CountDownLatch) CountDown(ctx context.Context) error {
	h := l.handle()
	if err := h.check(ctx, "countdown"); err != nil {
		return err
	}
	_, err := h.CountDown(ctx)
	return opErr("countdown", h.Key(), err)
}

// Count returns the count now (0 when the latch is open) [getCount].
func (l *CountDownLatch) Count(ctx context.Context) (int64, error) {
	h := l.handle()
	if err := h.check(ctx, "count"); err != nil {
		return 0, err
	}
	n, err := h.Get(ctx)
	return n, opErr("count", h.Key(), err)
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
	h.observe(ctx, engine.Event{Op: "wait", Start: start})
	ok, err := h.Await(ctx, wait)
	err = opErr(op, h.Key(), err)
	h.observe(ctx, engine.Event{Op: "await", Start: start, Acquired: ok, Err: err})
	return ok, err
}

// Name returns the latch's name: its Redis key unless WithNameMapper maps it.
func (l *CountDownLatch) Name() string { return l.handle().nameOr() }

// IsExists reports whether the latch's key exists [isExists()].
func (l *CountDownLatch) IsExists(ctx context.Context) (bool, error) {
	h := l.handle()
	if err := h.check(ctx, "isexists"); err != nil {
		return false, err
	}
	ok, err := h.Exists(ctx)
	return ok, opErr("isexists", h.Key(), err)
}

// Delete deletes (opens) the latch; true if it existed [delete()].
func (l *CountDownLatch) Delete(ctx context.Context) (bool, error) {
	h := l.handle()
	if err := h.check(ctx, "delete"); err != nil {
		return false, err
	}
	v, err := h.Latch(ctx, "delete")
	return v == 1, opErr("delete", h.Key(), err)
}
