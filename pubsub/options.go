package pubsub

import (
	"context"
	"log/slog"
	"time"
)

// A Hub's options: how a message wakes (WithWake and the Wake values), the
// kinds of pub/sub, the logger and the linger.

// defaultLinger is how long a channel stays subscribed after its last waiter
// has left, unless withLinger says otherwise.
const defaultLinger = time.Second

// Option configures a Hub.
type Option func(*Hub)

// WakeAll is what a Wake function returns for a message that wakes every
// waiter of its channel.
const WakeAll = -1

// WakeShared is what a Wake function returns for a message that wakes every
// shared Sub of its channel (see Role.Shared) and, of the others, one: the
// one blocked longest, as a message that wakes one would.
const WakeShared = -2

// WakePerClass is what a Wake function returns for a message that wakes,
// of each class of Subs on its channel (see Role.Class; the Subs without
// a class are one), the one blocked longest; a class none of whose Subs is
// blocked gets its wake all the same, found by one of them at its next
// Wait (as a wake-one message keeps a permit). The Subs of a class wait for
// the same thing: when the one woken cannot have it, none of them can,
// so one wake per class loses none, where one per channel could wake a
// waiter for something else.
const WakePerClass = -3

// WithWake sets the function that decides how many waiters of a channel a
// message wakes: WakeAll, WakeShared, WakePerClass, 0, or up to n.
// Default: one.
func WithWake(f func(channel, payload string) int) Option {
	return func(h *Hub) { h.wake = f }
}

// withLinger sets how long a channel stays subscribed after its last waiter
// left. A busy lock is then not re-subscribed for every wait. Zero
// unsubscribes at once.
func withLinger(d time.Duration) Option {
	return func(h *Hub) {
		if d >= 0 {
			h.linger = d
		}
	}
}

// WithLogger sets the logger for subscription trouble. Default: slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(h *Hub) {
		if l != nil {
			h.log = l
		}
	}
}

// WithShardedFunc has the Hub ask f, before each subscription command,
// whether to use sharded pub/sub: for a choice made on first use (Redisson's
// shardedSubscriptionMode AUTO asks the cluster). An error from f fails the
// command as a connection error would.
func WithShardedFunc(f func(ctx context.Context) (bool, error)) Option {
	return WithKindsFunc(func(ctx context.Context) (Kinds, error) {
		sharded, err := f(ctx)
		if sharded {
			return Sharded, err
		}
		return Classic, err
	})
}

// Kinds is the pub/sub a channel is subscribed with: classic (SUBSCRIBE),
// sharded (SSUBSCRIBE), or both.
type Kinds uint8

// The kinds of pub/sub.
const (
	// Classic is SUBSCRIBE: messages sent with PUBLISH.
	Classic Kinds = 1 << iota
	// Sharded is SSUBSCRIBE: messages sent with SPUBLISH.
	Sharded
	// Both subscribes every channel with SUBSCRIBE and SSUBSCRIBE, on one
	// connection to the master of the channel's slot (on a Cluster), for
	// publishers of either kind. A message that publishers of both kinds
	// send twice, once per kind (in one script, so the two arrive next to
	// each other on that connection), wakes as one (see Hub.deliver).
	Both = Classic | Sharded
)

// WithKindsFunc has the Hub ask f, before each subscription command, which
// kinds of pub/sub to use (see WithShardedFunc). An answer other than
// Classic, Sharded or Both is taken for Classic.
func WithKindsFunc(f func(ctx context.Context) (Kinds, error)) Option {
	return func(h *Hub) { h.kindsFn = f }
}

// WithExclusive tells the Hub which messages announce something only one
// waiter can take (a lock freed): the twin of such a message (see Both)
// is dropped once the waiter its first copy woke has acted on it, even
// when that waiter took the lock and left. Other twins are dropped only
// while every waiter of the channel still holds its wake.
func WithExclusive(f func(channel, payload string) bool) Option {
	return func(h *Hub) { h.exclusive = f }
}
