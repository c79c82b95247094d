package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/goredisson/goredisson/internal/transport"
	"github.com/goredisson/goredisson/pubsub"
)

// waitSpec is one wait for something that messages on a channel announce:
// a lock freed, permits released, a latch opened.
type waitSpec struct {
	channel string
	once    bool // one attempt, no waiting
	// queue makes a waiter that finds waiters of this Client already on
	// the channel wait behind them before its first attempt, rather than
	// race them for the lock (see waiter.run).
	queue bool
	// shared marks a read-write lock's reader: a write unlock wakes every
	// reader of this Client and one writer (see Core.wakes).
	shared bool
	// spins marks a spin lock's wait: no messages, attempts at a growing
	// backoff (see waiter.spin).
	spins bool
}

// tried is what one attempt of a wait tells the waiter.
type tried struct {
	ok bool // the wait is over: held, taken, open
	// pause bounds the sleep before the next attempt (negative: the lock
	// has no expiry; see attempt.tryOnce).
	pause time.Duration
	// reached reports that Redis answered the attempt (a wake that
	// prompted it was acted on).
	reached bool
	err     error
}

// trier makes a wait's attempts. An acquisition's attempt is one (so the
// attempt, its spec and its waiter are one object); funcWait adapts funcs.
type trier interface {
	tryOnce() tried          // one attempt
	canRetry(err error) bool // whether a failed attempt may be tried again
}

// funcWait is a wait whose attempts are funcs (latch, semaphores).
type funcWait struct {
	waitSpec
	deadline  time.Time // end of the wait; zero: until ctx ends
	try       func() tried
	retryable func(err error) bool
}

func (f *funcWait) tryOnce() tried          { return f.try() }
func (f *funcWait) canRetry(err error) bool { return f.retryable(err) }

// queuePause is the default of Core.queuePause: it bounds the first wait
// of a waiter that queued behind this Client's waiters without an attempt
// of its own. If no wake reaches it within it (the waiters ahead left
// without acquiring, or the lease ran out without an unlock message), it
// makes the attempt it skipped, and then waits as any waiter does.
const queuePause = 100 * time.Millisecond

// waiter is one wait in progress: the spec, and what the loop learns as it
// goes (its pace: the end of the wait, the failures in a row, the pause
// and the last Redis error). Every step of the wait is a method that reads
// and updates it.
type waiter struct {
	waitSpec
	t    trier
	c    *Core
	ctx  context.Context
	pace Pace
	// sub is the subscription to the channel (nil: none yet). The wait
	// closes it when it ends.
	sub *pubsub.Sub
	// err is the last attempt's error, until judge reads it.
	err error
	// untried: no attempt made since the waiter queued (see waitSpec.queue);
	// one is due before the wait may run out.
	untried bool
}

// waitFor runs the wait fw (see waiter.run).
func (c *Core) waitFor(ctx context.Context, fw *funcWait) (bool, error) {
	w := c.newWaiter(ctx, fw)
	defer w.close()
	return w.run()
}

// newWaiter returns a waiter for fw. It is not inlined, so that the waiter
// lives on the heap, not on the waiting goroutine's stack: a parked
// waiter's stack stays small enough for the runtime to shrink it (see
// docs/benchmarks.md, memory per waiter).
//
//go:noinline
func (c *Core) newWaiter(ctx context.Context, fw *funcWait) *waiter {
	w := &waiter{}
	w.init(c, ctx, fw.waitSpec, fw.deadline, fw)
	return w
}

// init readies w for a wait of spec until deadline (zero: until ctx ends)
// whose attempts t makes.
func (w *waiter) init(c *Core, ctx context.Context, spec waitSpec, deadline time.Time, t trier) {
	w.waitSpec, w.t, w.c, w.ctx = spec, t, c, ctx
	w.pace = NewPace(&c.cfg.Retry, deadline)
}

// close ends the wait's subscription, if any.
func (w *waiter) close() {
	if w.sub != nil {
		w.sub.Close()
	}
}

// run is a wait: it returns (true, nil) once an attempt succeeds, (false,
// nil) when the wait ran out, and the error of a wait that failed.
//
// It tries once; if that fails and the wait allows, it subscribes to the
// channel (confirmed by Redis, so that nothing published after the next
// attempt is missed), then alternates attempts and waits for a message
// (loop), each wait bounded by the attempt's pause, the rest of the wait
// and ctx. A message is only a reason to try again; a wake taken by a
// waiter that leaves without trying is handed on (see pubsub.Sub.Used).
// While Redis fails, attempts go on within the retry budget (WithRetry):
// before subscribing, the failed attempt is retried until Redis answers
// (rideOut, as Redisson's commands retry before its lock loop subscribes),
// and the last error is reported if the wait runs out.
//
// With queue, a waiter that finds other waiters of this Client on the
// channel (ones that have tried, see pubsub.Sub.QueueBehind) does not try
// first: it queues behind them (an unlock message wakes the waiter blocked
// longest) for at most Core.queuePause, and then tries (a TryLock whose
// wait is shorter tries when its wait ends). So a goroutine that unlocks
// and locks again at once does not take the lock from under the waiter
// its unlock woke: the goroutines of one process take the lock in turn,
// and the attempt that would fail is spared.
//
// A spin lock's wait subscribes to nothing: see spin, which attempt.wait
// runs instead.
func (w *waiter) run() (bool, error) {
	if !w.once {
		w.sub = w.joinIfReady()
		if w.sub != nil && w.queue && w.sub.QueueBehind() {
			w.pace.pause, w.untried = w.c.queuePause, true
			return w.loop(false)
		}
	}
	if ok, _ := w.attempt(); ok {
		return true, nil
	}
	if w.once || (w.err != nil && !w.t.canRetry(w.err)) {
		return false, w.err
	}
	if w.err != nil && !w.pace.f.policy.untilCtx() {
		// Redis is failing: retry within the budget before subscribing,
		// as Redisson's commands do before its lock loop subscribes.
		if ok, err := w.rideOut(); ok || err != nil {
			return ok, err
		}
	}
	if w.sub != nil {
		return w.loop(false)
	}
	sub, serr := w.c.subscribe(w.ctx, w.channel, w.pace.deadline, w.role())
	if sub == nil {
		return false, waitEnded(serr, w.err)
	}
	w.sub = sub
	// The attempt came before the subscription was confirmed: a message
	// sent in between is lost, so try again before waiting.
	return w.loop(true)
}

// joinIfReady joins the channel when it is already subscribed (contended
// here), before the first attempt: then one failed attempt is enough. It
// returns nil when the channel is not ready.
//
// The Sub joins with its role (pubsub.Role): a message delivered while it
// joins finds it as it will wait. (Joined first and classed after, a faster
// multilock's owner that locks again at once after its unlock was, for a
// moment, a class of its own: the unlock's message marked it woken, and
// it took the values from under the waiter that message woke.) A class
// reads the holds ledger, so it is looked for only once the channel is
// ready.
func (w *waiter) joinIfReady() *pubsub.Sub {
	if c, ok := w.t.(classed); ok && c.perClass() && !w.c.hub.Ready(w.channel) {
		return nil
	}
	return w.c.hub.SubscribeIfReadyAs(w.channel, w.role())
}

// role is how an unlock message wakes the wait's Sub among its Client's
// waiters on the channel: shared (a read-write lock's reader), or in a
// class (a faster multilock's waiters on the same values).
func (w *waiter) role() pubsub.Role {
	r := pubsub.Role{Shared: w.shared}
	if c, ok := w.t.(classed); ok && c.perClass() {
		r.Class = c.waitClass()
	}
	return r
}

// classed is a trier whose waiters may be woken one per class (see
// pubsub.WakePerClass): an acquisition's attempt.
type classed interface {
	// perClass reports whether the waiter is woken one per class (a
	// faster multilock's).
	perClass() bool
	// waitClass returns the waiter's class ("": none).
	waitClass() string
}

// attempt makes one attempt: it reports success, or records the attempt's
// pause and error. It returns whether Redis answered, too.
//
// It is not inlined: the attempt's result (tried) would sit in the frame of
// run, which stays on a parked waiter's stack (see newWaiter).
//
//go:noinline
func (w *waiter) attempt() (ok, reached bool) {
	t := w.t.tryOnce()
	w.pace.pause, w.err = t.pause, t.err
	return t.ok, t.reached
}

// tryOn makes one attempt of a subscribed waiter: the first marks it as a
// waiter that tries (others may queue behind it), and one that reached
// Redis uses up the wake that prompted it.
func (w *waiter) tryOn() bool {
	if w.untried {
		w.untried = false
		w.sub.Tried()
	}
	ok, reached := w.attempt()
	if reached {
		w.sub.Used()
	}
	return ok
}

// judge reads the last attempt's error into the pace (see Pace.judge): a
// refusal (an error canRetry refuses) ends the wait, a Redis failure is
// retried within the budget, a reply resets it.
func (w *waiter) judge() error {
	err := w.err
	w.err = nil
	return w.pace.judge(err, err != nil && !w.t.canRetry(err))
}

// sleep sleeps the pace's next pause within the rest of the wait. It
// reports whether the wait is over instead, and its error: nil when the
// wait ran out, else ctx's end or Close (with the last Redis error).
func (w *waiter) sleep() (over bool, err error) {
	pause, ok := w.pace.Bound()
	if !ok {
		return true, waitEnded(nil, w.pace.lastErr)
	}
	if err := w.c.sleep(w.ctx, pause); err != nil {
		return true, waitEnded(err, w.pace.lastErr)
	}
	return false, nil
}

// rideOut retries the failed attempt, within the retry budget, the wait
// and ctx, until Redis answers. It returns (false, nil) when the last
// attempt was answered and not held (its pause bounds the next sleep);
// otherwise the wait is over: held, or failed for good.
func (w *waiter) rideOut() (bool, error) {
	for w.err != nil {
		if err := w.judge(); err != nil {
			return false, err
		}
		if over, err := w.sleep(); over {
			return false, err
		}
		if ok, _ := w.attempt(); ok {
			return true, nil
		}
	}
	return false, nil
}

// loop is the wait once subscribed: it sleeps until a message, the pause
// or the end of the wait, and tries again, until an attempt succeeds or
// the wait ends. With tryFirst it makes an attempt before its first sleep.
func (w *waiter) loop(tryFirst bool) (bool, error) {
	for {
		if tryFirst && w.tryOn() {
			w.sub.Took() // a twin of the wake it used is not handed on
			return true, nil
		}
		tryFirst = true
		if err := w.judge(); err != nil {
			return false, err
		}
		if w.pace.lastErr != nil {
			w.logRetry()
		}
		pause, ok := w.pace.Bound()
		if !ok && w.untried {
			continue // the wait ran out in the queue: make the one attempt it owes
		}
		if !ok {
			return false, waitEnded(nil, w.pace.lastErr)
		}
		if _, err := w.sub.Wait(w.ctx, pause); err != nil {
			return false, waitEnded(err, w.pace.lastErr)
		}
	}
}

// logRetry logs at Debug that an attempt failed and is retried. It is not
// inlined: its arguments would sit in the frame of loop, which stays on a
// parked waiter's stack.
//
//go:noinline
func (w *waiter) logRetry() {
	w.c.Logger().Debug("goredisson: attempt failed, retrying", "channel", w.channel, "err", w.pace.lastErr)
}

// spin is the wait of a spin lock, which no message announces: it retries
// with exponential backoff and full jitter (WithSpinBackoff) until it
// holds, the wait runs out or ctx ends. A pause never outlasts the TTL the
// last attempt saw; while Redis fails, it is at least the retry budget's.
func (w *waiter) spin() (bool, error) {
	b := w.c.cfg.Spin
	bound := b.Initial
	for {
		if ok, _ := w.attempt(); ok {
			return true, nil
		}
		if w.once {
			return false, w.err
		}
		jitter := rand.N(bound + 1)
		bound = min(2*bound, b.Max)
		failed, ttl := w.err != nil, w.pace.pause
		if err := w.judge(); err != nil {
			return false, err
		}
		switch {
		case failed:
			w.pace.pause = max(jitter, w.pace.pause)
		case ttl >= 0:
			w.pace.pause = min(jitter, ttl)
		default:
			w.pace.pause = jitter
		}
		if over, err := w.sleep(); over {
			return false, err
		}
	}
}

// subscribe subscribes to channel, for a Sub with role, within the rest of
// the wait; a nil Sub comes with the reason (nil: the wait ran out).
func (c *Core) subscribe(ctx context.Context, channel string, deadline time.Time, role pubsub.Role) (*pubsub.Sub, error) {
	sctx := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	sub, err := c.hub.SubscribeAs(sctx, channel, role)
	switch {
	case err == nil:
		return sub, nil
	case ctx.Err() != nil || errors.Is(err, pubsub.ErrClosed):
		return nil, err
	}
	return nil, nil // the wait ran out while subscribing
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
func (c *Core) retryable(ctx context.Context, err error) bool {
	var re transport.ReplyError
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
