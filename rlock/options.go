package rlock

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults, as in Redisson.
const (
	// DefaultWatchdogTimeout is the lease of watchdog-managed locks
	// (Redisson's lockWatchdogTimeout); they are renewed every third of it.
	DefaultWatchdogTimeout = 30 * time.Second
	// DefaultUnlockLatchTTL bounds how long an unlock request's latch lives,
	// so that a retried unlock is answered as the first one was.
	DefaultUnlockLatchTTL = 10 * time.Second
	// DefaultFairWaiterTimeout is how long a fair lock's queued waiter stays
	// in the queue without showing signs of life (Redisson's threadWaitTime,
	// 5 s in Redisson 3.x before 3.17; 5 min since).
	DefaultFairWaiterTimeout = 5 * time.Second
)

type options struct {
	watchdogTimeout time.Duration
	clientID        string
	clientIDSet     bool
	logger          *slog.Logger
	linger          time.Duration
	lingerSet       bool
	latchTTL        time.Duration
	publishCommand  string
	backoff         Backoff
	waiterTimeout   time.Duration
	syncReplicas    int
	syncTimeout     time.Duration
	errs            []error
}

// Option configures a Client. Invalid values make NewClient fail with
// ErrInvalidArgument.
type Option func(*options)

// WithWatchdogTimeout sets the lease of watchdog-managed locks (default 30 s,
// Redisson's lockWatchdogTimeout). The watchdog renews them every d/3.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < 3*time.Millisecond {
			o.errs = append(o.errs, fmt.Errorf("watchdog timeout %v: must be at least 3ms", d))
			return
		}
		o.watchdogTimeout = d
	}
}

// WithClientID fixes the client UUID, the first half of every hash field,
// instead of a random one. For tests and for interoperation; two live clients
// must never share one.
func WithClientID(id string) Option {
	return func(o *options) {
		o.clientID = id
		o.clientIDSet = true
	}
}

// WithLogger sets where the client logs lock losses and Redis trouble
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.errs = append(o.errs, fmt.Errorf("nil logger"))
			return
		}
		o.logger = l
	}
}

// WithSubscriptionLinger sets how long an unlock channel stays subscribed
// after its last waiter left (default 1 s), so that a busy lock is not
// re-subscribed for every wait. Zero unsubscribes at once.
func WithSubscriptionLinger(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.errs = append(o.errs, fmt.Errorf("subscription linger %v: must not be negative", d))
			return
		}
		o.linger = d
		o.lingerSet = true
	}
}

// WithUnlockLatchTTL sets how long an unlock request's latch key lives
// (default 10 s): a retry of the same request within it is answered from the
// latch instead of releasing a second hold.
func WithUnlockLatchTTL(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond {
			o.errs = append(o.errs, fmt.Errorf("unlock latch TTL %v: must be at least 1ms", d))
			return
		}
		o.latchTTL = d
	}
}

// WithShardedPubSub makes unlock notifications use sharded pub/sub (SPUBLISH
// and SSUBSCRIBE, Redis 7+), as Redisson does when configured for it on a
// cluster. Every client sharing a lock must agree on this setting.
func WithShardedPubSub(on bool) Option {
	return func(o *options) {
		if on {
			o.publishCommand = "spublish"
		} else {
			o.publishCommand = "publish"
		}
	}
}

// WithSpinBackoff sets the retry schedule of the Client's spin locks
// (default DefaultBackoff: 1 ms doubling up to 128 ms, full jitter).
func WithSpinBackoff(initial, max time.Duration) Option {
	return func(o *options) {
		if initial <= 0 || max < initial {
			o.errs = append(o.errs, fmt.Errorf("spin backoff %v..%v: need 0 < initial <= max", initial, max))
			return
		}
		o.backoff = Backoff{Initial: initial, Max: max}
	}
}

// WithFairWaiterTimeout sets how long a fair lock's waiter stays queued
// without a sign of life (default DefaultFairWaiterTimeout; Redisson's
// threadWaitTime). A live waiter refreshes its entry every third of it, so it
// keeps its place however long the holder holds; a waiter whose process died
// is purged from the head of the queue at most this long after its last
// refresh, and then no longer holds back those behind it.
func WithFairWaiterTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < 30*time.Millisecond {
			o.errs = append(o.errs, fmt.Errorf("fair waiter timeout %v: must be at least 30ms", d))
			return
		}
		o.waiterTimeout = d
	}
}

// WithReplicaSync makes every acquisition wait until at least replicas
// replicas of the primary confirmed it, for at most timeout (Redis's WAIT,
// sent on the same connection right after the acquire script; Redisson's
// checkLockSyncedSlaves). When fewer confirm in time, the acquisition is
// given back and the call fails with ErrReplicaSync. It narrows, without
// closing, the window in which a failover loses a lock the old primary
// granted (replication stays asynchronous: see the README).
func WithReplicaSync(replicas int, timeout time.Duration) Option {
	return func(o *options) {
		if replicas < 1 || timeout < time.Millisecond {
			o.errs = append(o.errs, fmt.Errorf("replica sync %d within %v: need at least 1 replica and 1ms", replicas, timeout))
			return
		}
		o.syncReplicas, o.syncTimeout = replicas, timeout
	}
}
