package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/pubsub"
)

// attemptFunc runs one acquire attempt for field. held reports success;
// otherwise ttl bounds how long to wait before the next attempt (negative:
// the holder set no expiry).
type attemptFunc func(ctx context.Context, field string, lease time.Duration) (held bool, ttl time.Duration, err error)

// maxBackoff caps the pause between attempts while Redis fails.
const maxBackoff = time.Second

// checkArgs validates what every acquisition takes from the user.
func checkArgs(ctx context.Context, lease time.Duration) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	if lease > 0 && lease < time.Millisecond {
		return fmt.Errorf("%w: lease %v is below Redis's 1ms resolution (use <= 0 for a watchdog lease)", ErrInvalidArgument, lease)
	}
	return nil
}

// acquire is the waiting loop shared by every pub/sub lock type. It tries
// once; if the lock is taken and wait allows, it subscribes to channel
// (confirmed by Redis), then alternates attempts and waits for an unlock
// message, bounded by the TTL the last attempt returned, the remaining wait
// and ctx. A message is only a reason to try again.
//
// wait == 0: one attempt. wait > 0: up to wait. wait < 0: until held or ctx
// is done. It returns (false, nil) when the wait ran out.
func (c *Client) acquire(ctx context.Context, name, channel, field string, wait, lease time.Duration, try attemptFunc) (bool, error) {
	deadline, err := c.startWait(ctx, wait)
	if err != nil {
		return false, err
	}
	// When the channel is already subscribed (the lock is contended here),
	// join it before the first attempt: then one failed attempt is enough
	// before waiting.
	var sub *pubsub.Sub
	if wait != 0 {
		sub = c.hub.SubscribeIfReady(channel)
	}
	held, ttl, err := try(ctx, field, lease)
	// A failing first attempt (a connection reset, Redis restarting) is
	// retried by the loop below like a failing later one when the caller is
	// willing to wait.
	if held || wait == 0 || (err != nil && !retryable(ctx, c, err)) {
		if sub != nil {
			sub.Close()
		}
		return held, c.ctxOr(ctx, err)
	}
	firstErr := err
	tryFirst := sub == nil
	if sub == nil {
		sctx := ctx
		if wait > 0 {
			var cancel context.CancelFunc
			sctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		var serr error
		sub, serr = c.hub.Subscribe(sctx, channel)
		switch {
		case serr == nil:
		case errors.Is(serr, pubsub.ErrClosed):
			return false, ErrClosed
		case ctx.Err() != nil && firstErr != nil:
			return false, fmt.Errorf("%w (last Redis error: %w)", ctx.Err(), firstErr)
		case ctx.Err() != nil:
			return false, ctx.Err()
		case firstErr != nil: // the wait ran out while subscribing
			return false, fmt.Errorf("wait of %v ran out: %w", wait, firstErr)
		default:
			return false, nil
		}
	}
	defer sub.Close()

	var lastErr error
	backoff := 10 * time.Millisecond
	for {
		if tryFirst {
			held, ttl, err = try(ctx, field, lease)
		}
		tryFirst = true
		var pause time.Duration
		switch {
		case held:
			return true, nil
		case err != nil:
			if !retryable(ctx, c, err) {
				return false, c.ctxOr(ctx, err)
			}
			// Redis is failing (down, restarting, failing over): keep
			// waiting, with a growing pause, and report the error if the
			// wait runs out.
			lastErr = err
			c.logger().Debug("goredisson: acquire attempt failed, retrying", "lock", name, "err", err)
			pause = backoff
			backoff = min(2*backoff, maxBackoff)
		default:
			lastErr = nil
			backoff = 10 * time.Millisecond
			pause = ttl
			if pause < 0 {
				// No expiry on the key: only an unlock message (or a
				// reconnect) will tell; look again after a watchdog lease.
				pause = c.opts.watchdogTimeout
			}
		}
		if wait > 0 {
			remain := time.Until(deadline)
			if remain <= 0 {
				if lastErr != nil {
					return false, fmt.Errorf("wait of %v ran out: %w", wait, lastErr)
				}
				return false, nil
			}
			pause = min(pause, remain)
		}
		if _, err := sub.Wait(ctx, pause); err != nil {
			if errors.Is(err, pubsub.ErrClosed) {
				return false, ErrClosed
			}
			if lastErr != nil {
				return false, fmt.Errorf("%w (last Redis error: %w)", err, lastErr)
			}
			return false, err
		}
	}
}

// retryable reports whether a failed attempt may be tried again: not when
// ctx is done, the Client closed, or replicas did not confirm (a refusal).
func retryable(ctx context.Context, c *Client, err error) bool {
	return ctx.Err() == nil && !c.closed.Load() && !errors.Is(err, ErrReplicaSync) && !errors.Is(err, ErrInvalidArgument)
}

// startWait checks that an acquisition may start and returns the end of
// its wait (zero for wait <= 0).
func (c *Client) startWait(ctx context.Context, wait time.Duration) (deadline time.Time, err error) {
	if c.closed.Load() {
		return deadline, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return deadline, err
	}
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	return deadline, nil
}

// ctxOr returns err, preferring ErrClosed or ctx's error (joined with err)
// when they explain it.
func (c *Client) ctxOr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if c.closed.Load() {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// lockAcquire runs acquire for an API call and wraps its error.
func (c *Client) lockAcquire(ctx context.Context, op, name, channel, field string, wait, lease time.Duration, try attemptFunc) (bool, error) {
	held, err := c.acquire(ctx, name, channel, field, wait, lease, try)
	return held, opErr(op, name, err)
}
