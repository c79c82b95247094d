package rlock

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/goredisson/goredisson/internal/engine"
	"github.com/goredisson/goredisson/internal/transport"
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
	case o.classicPubSubOnly() && o.Sharded == engine.ShardedAuto:
		o.Sharded = engine.ShardedOff
	case o.classicPubSubOnly() && o.Sharded == engine.ShardedOn:
		o.errs = append(o.errs, fmt.Errorf("%w: Redisson before 3.22.0 never uses sharded pub/sub; WithShardedPubSub(true) would miss its messages", errVersion))
	case o.probesSharding() && o.Sharded == engine.ShardedAuto:
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

// WithShardedPubSub forces sharded pub/sub on or off
// [shardedSubscriptionMode]: WithPubSubMode(PubSubSharded) or
// WithPubSubMode(PubSubClassic).
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

// WithReplicaSync sets the WAIT after scripts [checkLockSyncedSlaves,
// slavesSyncTimeout].
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

// WithRetry sets how long a wait rides out a failing Redis [retryAttempts,
// retryDelay].
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

// LostCallFence says how a Client keeps a call whose reply was lost (the
// caller's context ended, the connection broke) from taking effect after it
// was settled: see WithLostCallFence.
type LostCallFence int

const (
	// FenceAuto (the default): an acquire or release that goes out on one
	// of the Client's own connections whose server-side id it learned when
	// the connection was set up (CLIENT INFO, and a CLIENT KILL that
	// matches nothing, to see that the ACL allows it) runs only Redisson's
	// commands; should its reply be lost, the Client closes that
	// connection on the server (CLIENT KILL ID <id> ADDR <addr> SKIPME
	// yes), after which Redis runs nothing more from it, then settles the
	// call. Every other call (the ACL refuses CLIENT, a proxy or NAT
	// between the Client and Redis, a connection still being set up, a
	// pipelined batch through the go-redis pool) reads the cancel floor
	// as with FenceFloor.
	FenceAuto LostCallFence = iota
	// FenceFloor: every acquire and release script first reads the
	// lock's cancel floor (goredisson_cancel:{name}), which the settle of
	// a lost call raises; no CLIENT command is sent.
	FenceFloor
	// FenceByID is FenceAuto also for connections the server sees from
	// another address than the Client's own: through a NAT, or a TCP
	// proxy that relays each connection on one upstream connection of its
	// own and never replays bytes onto another (HAProxy in TCP mode,
	// stunnel, toxiproxy), where closing the upstream connection stops
	// the call. Never use it behind a proxy that pools or multiplexes
	// upstream connections (twemproxy, Envoy's Redis proxy, a Redis-aware
	// cloud proxy): there FenceAuto finds the address differs and falls
	// back to the floor.
	FenceByID
)

// WithLostCallFence chooses how lost calls are fenced (default FenceAuto).
// Either way a call whose reply was lost never takes effect after it was
// settled, and Redisson sees the same commands on the lock's hash and
// channel; FenceAuto saves Redis one HGET per uncontended acquire and
// release (docs/internals.md, "Fencing a lost call").
func WithLostCallFence(f LostCallFence) Option {
	return func(o *options) {
		switch f {
		case FenceAuto:
			o.Fence = transport.FenceOwnAddr
		case FenceFloor:
			o.Fence = transport.FenceOff
		case FenceByID:
			o.Fence = transport.FenceAnyAddr
		default:
			o.errs = append(o.errs, fmt.Errorf("lost call fence %d: want FenceAuto, FenceFloor or FenceByID", int(f)))
		}
	}
}
