package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/pubsub"
)

// waitSpec is one wait for something that messages on a channel announce:
// a lock freed, permits released, a latch opened.
type waitSpec struct {
	channel  string
	once     bool      // one attempt, no waiting
	deadline time.Time // end of the wait; zero: until ctx ends
	// try makes one attempt. ok ends the wait; otherwise pause bounds the
	// sleep before the next attempt (negative: until a message), and
	// reached reports that Redis answered it (a wake that prompted the
	// attempt was acted on).
	try func() (ok bool, pause time.Duration, reached bool, err error)
	// retryable reports whether a failed attempt may be tried again.
	retryable func(err error) bool
	// queue makes a waiter that finds waiters of this Client already on
	// the channel wait behind them before its first attempt, rather than
	// race them for the lock (see Client.waitFor).
	queue bool
	// shared marks a read-write lock's reader: a write unlock wakes every
	// reader of this Client and one writer (see Client.wakes).
	shared bool
}

// queuePause is the default of Client.queuePause: it bounds the first wait
// of a waiter that queued behind this Client's waiters without an attempt
// of its own. If no wake reaches it within it (the waiters ahead left
// without acquiring, or the lease ran out without an unlock message), it
// makes the attempt it skipped, and then waits as any waiter does.
const queuePause = 100 * time.Millisecond

// waitFor runs a wait. It tries once; if that fails and the wait allows, it
// subscribes to the channel (confirmed by Redis, so that nothing published
// after the next attempt is missed), then alternates attempts and waits for
// a message, each wait bounded by the attempt's pause, the rest of the wait
// and ctx. A message is only a reason to try again; a wake taken by a
// waiter that leaves without trying is handed on (see pubsub.Sub.Used).
// While Redis fails, attempts go on with a growing pause (up to a second)
// and the last error is reported if the wait runs out. It returns (false,
// nil) when the wait ran out.
//
// With w.queue, a waiter that finds other waiters of this Client on the
// channel (ones that have tried, see pubsub.Sub.QueueBehind) does not try
// first: it queues behind them (an unlock message wakes the waiter blocked
// longest) for at most Client.queuePause, and then tries (a TryLock whose
// wait is shorter tries when its wait ends). So a goroutine that unlocks
// and locks again at once does not take the lock from under the waiter
// its unlock woke: the goroutines of one process take the lock in turn,
// and the attempt that would fail is spared.
func (c *Client) waitFor(ctx context.Context, w waitSpec) (bool, error) {
	// When the channel is already subscribed (contended here), join it
	// before the first attempt: then one failed attempt is enough.
	var sub *pubsub.Sub
	if !w.once {
		sub = c.hub.SubscribeIfReady(w.channel)
		w.share(sub)
	}
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	f := &failures{policy: c.opts.retry}
	if sub != nil && w.queue && sub.QueueBehind() {
		return c.waitOn(ctx, w, sub, queued, c.queuePause, nil, f)
	}
	ok, pause, _, err := w.try()
	if ok || w.once || (err != nil && !w.retryable(err)) {
		return ok, err
	}
	if err != nil && !f.policy.untilCtx() {
		// Redis is failing: retry within the budget before subscribing,
		// as Redisson's commands do before its lock loop subscribes.
		var done bool
		if ok, pause, err, done = c.rideOut(ctx, w, f, err); done {
			return ok, err
		}
	}
	start := tried
	if sub == nil {
		var serr error
		if sub, serr = c.subscribe(ctx, w.channel, w.deadline); sub == nil {
			return false, waitEnded(serr, err)
		}
		w.share(sub)
		start = retry
	}
	return c.waitOn(ctx, w, sub, start, pause, err, f)
}

// share marks a shared waiter's Sub (nil: none) as such.
func (w *waitSpec) share(sub *pubsub.Sub) {
	if sub != nil && w.shared {
		sub.Share()
	}
}

// rideOut retries an attempt that failed with err, within the retry
// budget, the wait and ctx, until Redis answers. done reports that the wait
// is over (held, or failed for good: err); otherwise the last attempt was
// answered, not held, and pause bounds the sleep before the next.
func (c *Client) rideOut(ctx context.Context, w waitSpec, f *failures, err error) (ok bool, pause time.Duration, _ error, done bool) {
	for err != nil {
		p, more, gaveUp := f.failed(err)
		if !more {
			return false, 0, gaveUp, true
		}
		remain, left := remaining(w.deadline)
		if !left {
			return false, 0, waitEnded(nil, err), true
		}
		if remain >= 0 {
			p = min(p, remain)
		}
		if serr := c.sleep(ctx, p); serr != nil {
			return false, 0, waitEnded(serr, err), true
		}
		ok, pause, _, err = w.try()
		if ok || (err != nil && !w.retryable(err)) {
			return ok, 0, err, true
		}
	}
	f.reset()
	return false, pause, nil, false
}

// How waitOn begins.
type waitStart uint8

const (
	tried  waitStart = iota // the last attempt (pause, err) was made with sub confirmed: wait first
	retry                   // an attempt was made before sub was confirmed: try again first
	queued                  // no attempt made: wait (pause) first, and try at least once
)

// waitOn is the loop of waitFor once subscribed.
func (c *Client) waitOn(ctx context.Context, w waitSpec, sub *pubsub.Sub, start waitStart, pause time.Duration, err error, f *failures) (bool, error) {
	lastErr := err
	tried := start != retry
	untried := start == queued // no attempt made yet: one is due before the wait may run out
	for {
		if !tried {
			var ok bool
			if ok, pause, err = c.tryOn(w, sub, &untried); ok {
				return true, nil
			}
		}
		tried = false
		var final error
		if pause, lastErr, final = c.afterAttempt(w, f, pause, err); final != nil {
			return false, final
		}
		remain, ok := remaining(w.deadline)
		if !ok && untried {
			continue // the wait ran out in the queue: make the one attempt it owes
		}
		if !ok {
			return false, waitEnded(nil, lastErr)
		}
		if remain >= 0 && (pause < 0 || remain < pause) {
			pause = remain
		}
		if _, err := sub.Wait(ctx, pause); err != nil {
			return false, waitEnded(err, lastErr)
		}
	}
}

// tryOn makes one attempt of a subscribed waiter: the first marks it as a
// waiter that tries (others may queue behind it), and one that reached
// Redis uses up the wake that prompted it.
func (c *Client) tryOn(w waitSpec, sub *pubsub.Sub, untried *bool) (ok bool, pause time.Duration, err error) {
	if *untried {
		*untried = false
		sub.Tried()
	}
	ok, pause, reached, err := w.try()
	if reached {
		sub.Used()
	}
	return ok, pause, err
}

// afterAttempt classifies a failed attempt's error: a refusal ends the
// wait (final); a Redis failure is retried within the budget (WithRetry),
// after the budget's pause (lastErr is then err); a reply resets the
// budget and keeps the attempt's pause.
func (c *Client) afterAttempt(w waitSpec, f *failures, pause time.Duration, err error) (next time.Duration, lastErr, final error) {
	switch {
	case err != nil && !w.retryable(err):
		return 0, err, err
	case err != nil:
		next, more, gaveUp := f.failed(err)
		if !more {
			return 0, err, gaveUp
		}
		c.logger().Debug("goredisson: attempt failed, retrying", "channel", w.channel, "err", err)
		return next, err, nil
	}
	f.reset()
	return pause, nil, nil
}

// subscribe subscribes to channel within the rest of the wait; a nil Sub
// comes with the reason (nil: the wait ran out).
func (c *Client) subscribe(ctx context.Context, channel string, deadline time.Time) (*pubsub.Sub, error) {
	sctx := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	sub, err := c.hub.Subscribe(sctx, channel)
	switch {
	case err == nil:
		return sub, nil
	case ctx.Err() != nil || errors.Is(err, pubsub.ErrClosed):
		return nil, err
	}
	return nil, nil // the wait ran out while subscribing
}

// remaining returns how much of a wait is left (ok false when it ran out);
// a wait without deadline has all the time in the world (-1).
func remaining(deadline time.Time) (time.Duration, bool) {
	if deadline.IsZero() {
		return -1, true
	}
	d := time.Until(deadline)
	return d, d > 0
}

// waitEnded is the error of a wait that ended without success: err (ctx's
// end, Close, nil when the wait ran out) with the last Redis error, if any.
func waitEnded(err, lastErr error) error {
	switch {
	case errors.Is(err, pubsub.ErrClosed):
		return ErrClosed
	case err != nil && lastErr != nil:
		return fmt.Errorf("%w (last Redis error: %w)", err, lastErr)
	case err != nil:
		return err
	case lastErr != nil:
		return fmt.Errorf("wait ran out: %w", lastErr)
	}
	return nil
}

// retryable reports whether a failed attempt may be tried again: not when
// ctx is done, the Client closed, or the failure is a refusal (an error
// reply that is not a redirection or a transient state, a refused
// re-entry, a hold found lost).
func (c *Client) retryable(ctx context.Context, err error) bool {
	var re replyError
	if ctx.Err() != nil || c.closed.Load() {
		return false
	}
	// ErrReplicaSync is retried, within WithRetry's budget, as Redisson's
	// ServiceManager.execute retries a NoSyncedSlavesException.
	for _, final := range []error{ErrReentry, ErrInvalidArgument, ErrLockLost} {
		if errors.Is(err, final) {
			return false
		}
	}
	return !(errors.As(err, &re) && !re.NotRun())
}
