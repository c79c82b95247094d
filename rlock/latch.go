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
// key does not exist has count zero (it is open).
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

// TrySetCount sets the count if the latch has none (it is open) and
// reports whether it did [trySetCount]. n < 0 is ErrInvalidArgument.
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
	h := l.handle()
	if err := h.check(ctx, "await"); err != nil {
		return err
	}
	start := time.Now()
	h.observe(ctx, Event{Op: "wait", Start: start})
	_, err := h.c.waitFor(ctx, waitSpec{
		channel: layout.LatchChannel(h.name),
		try: func() (bool, time.Duration, bool, error) {
			n, err := h.c.commandInt(ctx, "get", h.name)
			return err == nil && n <= 0, h.safetyPause(), err == nil, err
		},
		retryable: func(err error) bool { return h.c.retryable(ctx, err) },
	})
	err = opErr("await", h.name, h.c.ctxOr(ctx, err))
	h.observe(ctx, Event{Op: "await", Start: start, Err: err})
	return err
}
