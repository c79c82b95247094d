package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
)

// CountDownLatch lets callers wait until a count reaches zero, shared by
// Java (Redisson's RCountDownLatch) and Go clients of one name
// [getCountDownLatch]: a counter under the name, and the channel
// redisson_countdownlatch__channel__{name}, on which the last CountDown
// publishes "0", which wakes every waiter of every client. A latch whose
// key does not exist has count zero (it is open). Its key has no time to
// live, as with Redisson (RCountDownLatch is not an RExpirable).
type CountDownLatch struct{ s syncHandle }

// NewCountDownLatch returns the latch of the given name [getCountDownLatch].
func (c *Client) NewCountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{s: syncHandle{c: c, name: name, kind: "countdownlatch"}}
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

// TrySetCount sets the count if the latch's key does not exist and reports
// whether it did [trySetCount]. The key goes when a CountDown reaches zero
// (or Delete removes it); until then a new count cannot be set. As with
// Redisson, TrySetCount(0) sets a count of zero that keeps its key: the
// latch is open (Count is 0, Await returns at once), but a later
// TrySetCount fails until a CountDown or Delete removes the key. n < 0 is
// ErrInvalidArgument (Redisson stores it; java.util.concurrent's
// CountDownLatch refuses it too).
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

// CountDown decrements the count; the last one opens the latch and wakes
// every waiter [countDown]. It is cleanup, like Unlock: an ended ctx does
// not stop it (it runs bounded by 5 s). A count-down whose reply was lost
// is not sent
// again (it could count twice): the error says it may not have taken
// effect.
func (l *CountDownLatch) CountDown(ctx context.Context) error {
	h := l.handle()
	if err := h.check(ctx, "countdown"); err != nil {
		return err
	}
	cctx, cancel := cleanupCall(ctx)
	defer cancel()
	_, err := h.run(cctx, latchScript, l.keys(), "countdown", h.c.opts.publishCommand)
	if reason, ok := abandoned(err); ok {
		err = fmt.Errorf("the count-down may not have taken effect: %w", reason)
	}
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

// Await waits until the count is zero or ctx ends [await()]. It sleeps on
// the latch's channel (and, as a safety bound, looks again after one
// watchdog timeout).
func (l *CountDownLatch) Await(ctx context.Context) error {
	_, err := l.await(ctx, "await", -1)
	return err
}

// TryAwait waits up to wait until the count is zero and reports whether it
// is; false with a nil error when the wait ran out [await(timeout, unit)].
// wait <= 0 looks once; a wait between 0 and 1 ms is ErrInvalidArgument.
func (l *CountDownLatch) TryAwait(ctx context.Context, wait time.Duration) (bool, error) {
	return l.await(ctx, "tryawait", max(wait, 0))
}

// await waits up to wait (negative: until ctx ends).
func (l *CountDownLatch) await(ctx context.Context, op string, wait time.Duration) (bool, error) {
	h := l.handle()
	if err := h.check(ctx, op); err != nil {
		return false, err
	}
	if err := checkWait(wait); err != nil {
		return false, opErr(op, h.name, err)
	}
	start := time.Now()
	h.observe(ctx, Event{Op: "wait", Start: start})
	ok, err := h.c.waitFor(ctx, waitSpec{
		channel:  layout.LatchChannel(h.name),
		once:     wait == 0,
		deadline: waitDeadline(wait),
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

// Name returns the latch's name, which is also its Redis key.
func (l *CountDownLatch) Name() string { return l.handle().nameOr() }

// IsExists reports whether the latch's key exists [isExists()].
func (l *CountDownLatch) IsExists(ctx context.Context) (bool, error) {
	return l.handle().exists(ctx)
}

// Delete deletes the latch, which opens it, and reports whether it existed
// [delete()]. As Redisson's, it publishes "1" (the new-count message) on
// the latch's channel: goredisson's waiters of every client look at the
// count again and go on, but Redisson's waiters do not wake for it (they
// see the latch open at their next message, or at the end of their
// timeout).
func (l *CountDownLatch) Delete(ctx context.Context) (bool, error) {
	h := l.handle()
	if err := h.check(ctx, "delete"); err != nil {
		return false, err
	}
	v, err := h.run(ctx, latchScript, l.keys(), "delete", h.c.opts.publishCommand)
	return v == 1, opErr("delete", h.name, err)
}
