package rlock

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/goredisson/goredisson/internal/engine"
)

// minWatchdogTimeout is the shortest watchdog lease a client on a busy
// host can keep: it is renewed every third, and a renewal may be late by
// the scheduling and network delay of a loaded machine.
const minWatchdogTimeout = time.Second

// options are the engine's settings (engine.Config), what the Client keeps
// for itself and the options' errors.
type options struct {
	engine.Config
	observer Observer
	errs     []error
}

var errNilObserver = errors.New("nil observer")

// newOptions applies opts over the defaults; invalid values make it fail
// with ErrInvalidArgument.
func newOptions(opts []Option) (options, error) {
	o := options{Config: engine.DefaultConfig()}
	for _, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%w: nil option", ErrInvalidArgument)
		}
		opt(&o)
	}
	switch {
	case classicPubSubOnly(o.Version) && o.Sharded == engine.ShardedAuto:
		o.Sharded = engine.ShardedOff
	case classicPubSubOnly(o.Version) && o.Sharded == engine.ShardedOn:
		o.errs = append(o.errs, fmt.Errorf("%w: Redisson before 3.22.0 never uses sharded pub/sub; WithShardedPubSub(true) would miss its messages", errVersion))
	case probesSharding(o.Version) && o.Sharded == engine.ShardedAuto:
		// Each client of these releases decides sharded or classic at its
		// start on a Cluster: hear and speak both (docs/redisson.md#releases).
		o.Sharded = engine.ShardedBothCluster
	}
	if len(o.errs) > 0 {
		return o, fmt.Errorf("%w: %w", ErrInvalidArgument, errors.Join(o.errs...))
	}
	if o.ClientID == "" {
		o.ClientID = uuid.NewString()
	}
	if o.observer != nil {
		o.Observer = observer{o.observer}
	}
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
		o.WatchdogTimeout = d
	}
}

// WithClientID fixes the client UUID; two live clients must never share one.
func WithClientID(id string) Option {
	return func(o *options) {
		if id == "" {
			o.errs = append(o.errs, errors.New("empty client id"))
			return
		}
		o.ClientID = id
	}
}

// WithLogger sets where lock losses and Redis trouble are logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.errs = append(o.errs, errors.New("nil logger"))
			return
		}
		o.Logger = l
	}
}

// WithShardedPubSub is WithPubSubMode(PubSubSharded or PubSubClassic).
func WithShardedPubSub(on bool) Option {
	return func(o *options) {
		o.Sharded = engine.ShardedOff
		if on {
			o.Sharded = engine.ShardedOn
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
		o.Spin = engine.Backoff{Initial: initial, Max: max}
	}
}

// WithFairLockWaitTimeout sets fair waiters' default [fairLockWaitTimeout].
func WithFairLockWaitTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < time.Second {
			o.errs = append(o.errs, fmt.Errorf("fair lock wait timeout %v: must be at least 1s", d))
			return
		}
		o.FairWait = d
	}
}

// WithReplicaSync sets the WAIT after scripts [checkLockSyncedSlaves, ...].
func WithReplicaSync(replicas int, timeout time.Duration) Option {
	return func(o *options) {
		o.SyncSet = true
		switch {
		case replicas == 0 && timeout == 0:
			o.SyncReplicas = 0 // off
			return
		case replicas < 1 || timeout < time.Millisecond:
			o.errs = append(o.errs, fmt.Errorf("replica sync %d within %v: need at least 1 replica and 1ms, or 0 and 0 for off", replicas, timeout))
			return
		}
		o.SyncReplicas, o.SyncTimeout = replicas, timeout
	}
}

// WithRetry sets how a wait rides out a failing Redis [retryAttempts, ...].
func WithRetry(attempts int, delay time.Duration) Option {
	return func(o *options) {
		if attempts > 0 && delay < time.Millisecond {
			o.errs = append(o.errs, fmt.Errorf("retry %d times with delay %v: need a delay of at least 1ms", attempts, delay))
			return
		}
		o.Retry = engine.RetryPolicy{Attempts: attempts, Delay: delay}
	}
}

// maxClientName bounds WithClientName.
const maxClientName = 256

// WithClientName names the Client in its registration (1 to 256 bytes).
func WithClientName(name string) Option {
	return func(o *options) {
		if name == "" || len(name) > maxClientName {
			o.errs = append(o.errs, fmt.Errorf("client name of %d bytes: want 1 to %d", len(name), maxClientName))
			return
		}
		o.ClientName = name
	}
}

// WithClientRegistry turns the Client's registration on or off (default on).
func WithClientRegistry(on bool) Option {
	return func(o *options) { o.Register = on }
}

// WithObserver reports every lock operation to o (nil: ErrInvalidArgument).
func WithObserver(o Observer) Option {
	return func(opts *options) {
		if o == nil {
			opts.errs = append(opts.errs, errNilObserver)
			return
		}
		opts.observer = o
	}
}

// WithRedissonVersion names the Java side's Redisson, e.g. "3.20.1".
func WithRedissonVersion(v string) Option {
	return func(o *options) {
		rv, err := parseRedissonVersion(v)
		if err != nil {
			o.errs = append(o.errs, err)
			return
		}
		o.Version = rv
	}
}

// WithNameMapper applies Redisson's NameMapper (docs/redisson.md).
func WithNameMapper(mapName, unmapName func(string) string) Option {
	return func(o *options) {
		if mapName == nil || unmapName == nil {
			o.errs = append(o.errs, errors.New("name mapper: nil map or unmap function"))
			return
		}
		o.MapName, o.UnmapName = mapName, unmapName
	}
}
