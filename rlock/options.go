package rlock

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// Defaults and floors of the options.
const (
	defaultWatchdogTimeout = 30 * time.Second // Redisson's lockWatchdogTimeout
	// minWatchdogTimeout is the shortest watchdog lease a client on a busy
	// host can keep: it is renewed every third, and a renewal may be late
	// by the scheduling and network delay of a loaded machine.
	minWatchdogTimeout = time.Second
	// defaultFairLockWaitTimeout is Redisson's fairLockWaitTimeout.
	defaultFairLockWaitTimeout = 5 * time.Minute
)

type options struct {
	watchdogTimeout time.Duration
	clientID        string
	logger          *slog.Logger
	publishCommand  string
	spin            backoff
	fairWait        time.Duration
	syncReplicas    int
	syncTimeout     time.Duration
	observer        Observer
	retry           retryPolicy
	errs            []error
}

var errNilObserver = errors.New("nil observer")

// newOptions applies opts over the defaults; invalid values make it fail
// with ErrInvalidArgument.
func newOptions(opts []Option) (options, error) {
	o := options{
		watchdogTimeout: defaultWatchdogTimeout,
		logger:          slog.Default(),
		publishCommand:  "publish",
		spin:            defaultBackoff,
		fairWait:        defaultFairLockWaitTimeout,
		retry:           defaultRetry,
	}
	for _, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%w: nil option", ErrInvalidArgument)
		}
		opt(&o)
	}
	if len(o.errs) > 0 {
		return o, fmt.Errorf("%w: %w", ErrInvalidArgument, errors.Join(o.errs...))
	}
	if o.clientID == "" {
		o.clientID = uuid.NewString()
	}
	return o, nil
}

// Option configures a Client. Invalid values make NewClient fail with
// ErrInvalidArgument.
type Option func(*options)

// WithWatchdogTimeout sets the lease of watchdog-managed locks (default
// 30 s, Redisson's lockWatchdogTimeout); the watchdog renews them every d/3.
// It must be at least 1 s: a shorter lease cannot be kept by a client whose
// renewals may be late by the scheduling and network delays of a busy host.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < minWatchdogTimeout {
			o.errs = append(o.errs, fmt.Errorf("watchdog timeout %v: must be at least %v", d, minWatchdogTimeout))
			return
		}
		o.watchdogTimeout = d
	}
}

// WithClientID fixes the client UUID, the first half of every hash field,
// instead of a random one. For tests and for interoperation; two live
// clients must never share one. An empty id is ErrInvalidArgument.
func WithClientID(id string) Option {
	return func(o *options) {
		if id == "" {
			o.errs = append(o.errs, errors.New("empty client id"))
			return
		}
		o.clientID = id
	}
}

// WithLogger sets where the client logs lock losses and Redis trouble
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.errs = append(o.errs, errors.New("nil logger"))
			return
		}
		o.logger = l
	}
}

// WithShardedPubSub makes unlock notifications use sharded pub/sub
// (SPUBLISH and SSUBSCRIBE, Redis 7+), as Redisson does on a cluster whose
// shardedSubscriptionMode is on. Every client sharing a lock, Java or Go,
// must agree on it. Default off.
func WithShardedPubSub(on bool) Option {
	return func(o *options) {
		o.publishCommand = "publish"
		if on {
			o.publishCommand = "spublish"
		}
	}
}

// WithSpinBackoff sets the retry schedule of the Client's spin locks:
// exponential with full jitter, attempt n waiting a random time up to
// min(max, initial*2^n). Default 1 ms doubling up to 128 ms, as Redisson's
// spin lock. It needs 0 < initial <= max.
func WithSpinBackoff(initial, max time.Duration) Option {
	return func(o *options) {
		if initial <= 0 || max < initial {
			o.errs = append(o.errs, fmt.Errorf("spin backoff %v..%v: need 0 < initial <= max", initial, max))
			return
		}
		o.spin = backoff{initial: initial, max: max}
	}
}

// WithFairLockWaitTimeout sets a fair lock waiter's threadWaitTime when its
// call has no wait of its own (Lock, LockLease): how long past its turn a
// waiter that stopped showing signs of life keeps its place before it is
// purged (Redisson's fairLockWaitTimeout, default 5 minutes). It must be at
// least 1 s. Redisson's waiters and goredisson's share the queue's
// arithmetic; a live goredisson waiter brings its own timeout up to the
// chain with every attempt, so it is never purged however long the holders
// ahead of it hold (see FairLock).
func WithFairLockWaitTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < time.Second {
			o.errs = append(o.errs, fmt.Errorf("fair lock wait timeout %v: must be at least 1s", d))
			return
		}
		o.fairWait = d
	}
}

// WithReplicaSync makes every acquisition wait until at least replicas
// replicas of the primary confirmed it, for at most timeout (Redis's WAIT,
// sent on the same connection right after the acquire script; Redisson's
// checkLockSyncedSlaves). When fewer confirm in time, the acquisition is
// given back and the call fails with ErrReplicaSync. It narrows, without
// closing, the window in which a failover loses a lock the old primary
// granted (replication stays asynchronous: see the README). It needs
// replicas >= 1 and timeout >= 1 ms.
func WithReplicaSync(replicas int, timeout time.Duration) Option {
	return func(o *options) {
		if replicas < 1 || timeout < time.Millisecond {
			o.errs = append(o.errs, fmt.Errorf("replica sync %d within %v: need at least 1 replica and 1ms", replicas, timeout))
			return
		}
		o.syncReplicas, o.syncTimeout = replicas, timeout
	}
}

// WithRetry sets how long a wait (Lock, LockLease, TryLock's wait, and the
// synchronizers' Acquire, TryAcquire and Await) rides out a Redis that fails
// before it returns the Redis error [retryAttempts, retryDelay]: up to
// attempts failed attempts in a row are retried, each after Redisson's
// EqualJitterDelay(delay, 2*delay) pause; a reply resets the count. The
// default, Redisson's (4, 1 s), gives up after 3.5 to 7 s of pauses. attempts
// = 0 returns the first failure, attempts < 0 retries until ctx ends. A
// single attempt (wait <= 0) returns its error at once. It needs delay >= 1 ms
// when attempts > 0.
func WithRetry(attempts int, delay time.Duration) Option {
	return func(o *options) {
		if attempts > 0 && delay < time.Millisecond {
			o.errs = append(o.errs, fmt.Errorf("retry %d times with delay %v: need a delay of at least 1ms", attempts, delay))
			return
		}
		o.retry = retryPolicy{attempts: attempts, delay: delay}
	}
}

// backoff is a spin lock's retry schedule.
type backoff struct{ initial, max time.Duration }

var defaultBackoff = backoff{initial: time.Millisecond, max: 128 * time.Millisecond}
