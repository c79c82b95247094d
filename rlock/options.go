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
	switch {
	case o.classicPubSubOnly() && o.sharded == shardedAuto:
		o.sharded = shardedOff
	case o.classicPubSubOnly() && o.sharded == shardedOn:
		o.errs = append(o.errs, fmt.Errorf("%w: Redisson before 3.22.0 never uses sharded pub/sub; WithShardedPubSub(true) would miss its messages", errVersion))
	case o.probesSharding() && o.sharded == shardedAuto:
		// Each client of these releases decides sharded or classic at its
		// start on a Cluster: hear and speak both (docs/redisson.md#releases).
		o.sharded = shardedBothCluster
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

// Option configures a Client; an invalid one fails NewClient.
type Option func(*options)

// WithWatchdogTimeout sets watchdog leases [lockWatchdogTimeout] (30 s).
func WithWatchdogTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < minWatchdogTimeout {
			o.errs = append(o.errs, fmt.Errorf("watchdog timeout %v: must be at least %v", d, minWatchdogTimeout))
			return
		}
		o.watchdogTimeout = d
	}
}

// WithClientID fixes the client UUID; two live clients must never share one.
func WithClientID(id string) Option {
	return func(o *options) {
		if id == "" {
			o.errs = append(o.errs, errors.New("empty client id"))
			return
		}
		o.clientID = id
	}
}

// WithLogger sets where lock losses and Redis trouble are logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.errs = append(o.errs, errors.New("nil logger"))
			return
		}
		o.logger = l
	}
}

// WithShardedPubSub forces sharded pub/sub on or off
// [shardedSubscriptionMode]: WithPubSubMode(PubSubSharded) or
// WithPubSubMode(PubSubClassic).
func WithShardedPubSub(on bool) Option {
	return func(o *options) {
		o.sharded = shardedOff
		if on {
			o.sharded = shardedOn
		}
	}
}

// WithSpinBackoff sets the spin locks' retry schedule (default 1 to 128 ms).
func WithSpinBackoff(initial, max time.Duration) Option {
	return func(o *options) {
		if initial <= 0 || max < initial {
			o.errs = append(o.errs, fmt.Errorf("spin backoff %v..%v: need 0 < initial <= max", initial, max))
			return
		}
		o.spin = backoff{initial: initial, max: max}
	}
}

// WithFairLockWaitTimeout sets fair waiters' default [fairLockWaitTimeout].
func WithFairLockWaitTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < time.Second {
			o.errs = append(o.errs, fmt.Errorf("fair lock wait timeout %v: must be at least 1s", d))
			return
		}
		o.fairWait = d
	}
}

// WithReplicaSync sets the WAIT after scripts [checkLockSyncedSlaves,
// slavesSyncTimeout].
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

// WithRetry sets how long a wait rides out a failing Redis [retryAttempts,
// retryDelay].
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

// WithClientName names the Client in its registration (1 to 256 bytes).
func WithClientName(name string) Option {
	return func(o *options) {
		if name == "" || len(name) > maxClientName {
			o.errs = append(o.errs, fmt.Errorf("client name of %d bytes: want 1 to %d", len(name), maxClientName))
			return
		}
		o.clientName = name
	}
}

// WithClientRegistry turns the Client's registration on or off (default on).
func WithClientRegistry(on bool) Option {
	return func(o *options) { o.register = on }
}
