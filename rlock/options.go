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
	// publishCommand is the publish command of every script: PUBLISH or
	// SPUBLISH, decided by sharded (see pubCommand).
	publishCommand *pubCommand
	sharded        shardedMode
	spin           backoff
	fairWait       time.Duration
	// sync, syncReplicas and syncTimeout are the replica sync (see
	// replica.go); syncSet records that WithReplicaSync chose it.
	sync         syncMode
	syncSet      bool
	syncReplicas int
	syncTimeout  time.Duration
	observer     Observer
	retry        retryPolicy
	// register and clientName are the Client's registration (registry.go).
	register   bool
	clientName string
	// version is the Java side's Redisson release (zero: the newest);
	// mapName and unmapName its NameMapper (nil: none). See redisson.go.
	version            redissonVersion
	mapName, unmapName func(string) string
	errs               []error
}

var errNilObserver = errors.New("nil observer")

// newOptions applies opts over the defaults; invalid values make it fail
// with ErrInvalidArgument.
func newOptions(opts []Option) (options, error) {
	o := options{
		watchdogTimeout: defaultWatchdogTimeout,
		logger:          slog.Default(),
		spin:            defaultBackoff,
		fairWait:        defaultFairLockWaitTimeout,
		syncTimeout:     defaultSyncTimeout,
		retry:           defaultRetry,
		register:        true,
	}
	for _, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%w: nil option", ErrInvalidArgument)
		}
		opt(&o)
	}
	if o.classicPubSubOnly() {
		switch o.sharded {
		case shardedAuto:
			o.sharded = shardedOff
		case shardedOn:
			o.errs = append(o.errs, fmt.Errorf("%w: Redisson before 3.22.0 never uses sharded pub/sub; WithShardedPubSub(true) would miss its messages", errVersion))
		}
	}
	if len(o.errs) > 0 {
		return o, fmt.Errorf("%w: %w", ErrInvalidArgument, errors.Join(o.errs...))
	}
	if o.clientID == "" {
		o.clientID = uuid.NewString()
	}
	o.publishCommand = &pubCommand{mode: o.sharded}
	return o, nil
}

// Option configures a Client. Invalid values make NewClient fail with
// ErrInvalidArgument.
type Option func(*options)

// WithWatchdogTimeout sets the lease of watchdog-managed locks
// [lockWatchdogTimeout, default 30 s], renewed every d/3; at least 1 s.
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
// for tests and interop; two live clients must never share one.
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

// WithShardedPubSub forces how unlock messages travel: true, SPUBLISH and
// SSUBSCRIBE (Redisson's shardedSubscriptionMode ON); false, PUBLISH and
// SUBSCRIBE (OFF). The default is Redisson's AUTO: sharded on a
// *redis.ClusterClient whose servers have it (Redis and Valkey 7+). Java and
// Go clients of a lock must agree.
func WithShardedPubSub(on bool) Option {
	return func(o *options) {
		o.sharded = shardedOff
		if on {
			o.sharded = shardedOn
		}
	}
}

// WithSpinBackoff sets the spin locks' retry schedule: a random pause up to
// min(max, initial*2^n) before attempt n (default 1 ms to 128 ms, Redisson's).
func WithSpinBackoff(initial, max time.Duration) Option {
	return func(o *options) {
		if initial <= 0 || max < initial {
			o.errs = append(o.errs, fmt.Errorf("spin backoff %v..%v: need 0 < initial <= max", initial, max))
			return
		}
		o.spin = backoff{initial: initial, max: max}
	}
}

// WithFairLockWaitTimeout sets a fair waiter's threadWaitTime when its call
// has no wait of its own (Lock, LockLease): how long past its turn a waiter
// that went silent keeps its place [fairLockWaitTimeout, default 5 minutes;
// at least 1 s].
func WithFairLockWaitTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < time.Second {
			o.errs = append(o.errs, fmt.Errorf("fair lock wait timeout %v: must be at least 1s", d))
			return
		}
		o.fairWait = d
	}
}

// WithReplicaSync sets how acquisitions and releases are confirmed on
// replicas (WAIT right after the scripts) [checkLockSyncedSlaves,
// slavesSyncTimeout]. The default is Redisson's: on Cluster and Sentinel,
// every replica the master reports within 1 s, failing with ErrReplicaSync
// when none confirmed; nothing on a single server. WithReplicaSync(n,
// timeout) waits for n replicas everywhere, (0, 0) turns it off; an
// acquisition that fails this way is given back first (docs/cluster.md).
func WithReplicaSync(replicas int, timeout time.Duration) Option {
	return func(o *options) {
		o.syncSet = true
		switch {
		case replicas == 0 && timeout == 0:
			o.sync = syncOff
			return
		case replicas < 1 || timeout < time.Millisecond:
			o.errs = append(o.errs, fmt.Errorf("replica sync %d within %v: need at least 1 replica and 1ms, or 0 and 0 for off", replicas, timeout))
			return
		}
		o.sync, o.syncReplicas, o.syncTimeout = syncExplicit, replicas, timeout
	}
}

// WithRetry sets how long a wait rides out a failing Redis before it returns
// the Redis error [retryAttempts, retryDelay]: attempts failures in a row
// are retried, paused as Redisson's EqualJitterDelay(delay, 2*delay); a reply
// resets the count. Default (4, 1 s), Redisson's: 3.5 to 7 s of pauses.
// attempts < 0 retries until ctx ends; a single attempt never retries.
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

// maxClientName bounds WithClientName.
const maxClientName = 256

// WithClientName names the Client in its registration, which rlockctl shows
// beside its holder fields (docs/layout.md); 1 to 256 bytes.
func WithClientName(name string) Option {
	return func(o *options) {
		if name == "" || len(name) > maxClientName {
			o.errs = append(o.errs, fmt.Errorf("client name of %d bytes: want 1 to %d", len(name), maxClientName))
			return
		}
		o.clientName = name
	}
}

// WithClientRegistry turns the Client's registration (its id, host, pid,
// start time and name in a key with a TTL, for rlockctl) on or off
// (default on; docs/layout.md).
func WithClientRegistry(on bool) Option {
	return func(o *options) { o.register = on }
}
