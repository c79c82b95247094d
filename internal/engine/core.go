package engine

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/internal/transport"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/watchdog"
)

// Core is the engine of one rlock.Client: what every call on its locks and
// synchronizers needs (the go-redis client, the Client's id and settings,
// the transport, the pub/sub hub, the watchdog, the ledger of holds). It is
// safe for concurrent use; Close it.
type Core struct {
	rdb  redis.UniversalClient
	id   string
	cfg  Config
	sync transport.SyncMode // replica sync (see replica.go), from cfg and the deployment
	pub  *pubCommand        // PUBLISH, SPUBLISH or both (see sharded.go)

	hub   *pubsub.Hub
	wd    *watchdog.Scheduler
	send  *transport.Sender
	holds *ledger

	seq    atomic.Uint64 // call numbers (see lib/cancel.lua)
	closed atomic.Bool
	done   chan struct{} // closed by Close
	// cluster is set for a Redis Cluster client: lock names must then be
	// slot-safe.
	cluster bool
	// pubArg and watchdogMs are script arguments of every call, boxed once.
	pubArg, watchdogMs any
	// renewLoaded is set once a renewal has sent SCRIPT LOAD ahead of its
	// scripts (see Core.renew).
	renewLoaded atomic.Bool
	// pubRefused is set once a refused publish was logged (see acl.go).
	pubRefused atomic.Bool
	// queuePause bounds a queued waiter's first wait (see waitSpec.queue):
	// queuePause, except in specs that need a lost wake to show.
	queuePause time.Duration
	// perClass counts, per channel, the waiters on it that a message wakes
	// one per class of (see Core.wakes).
	perClassMu sync.Mutex
	perClass   map[string]int
	// reg keeps the Client's registration (nil: WithClientRegistry(false)).
	reg *registry
	// smallRedLockWarned is set once a RedLock over fewer than 3 masters
	// logged its warning (rlock's warnSmallRedLock).
	smallRedLockWarned atomic.Bool
}

// wakes is the Hub's wake function: Redisson's (layout.Wakes), except that
// a message on a channel with waiters that wait for different things
// (faster multilocks on one group, for other values) wakes one waiter of
// this Client per class (pubsub.WakePerClass: the waiters on the same
// values), so that the one the unlock freed is not left asleep while a
// waiter for values still held took the wake, and a hand-off costs a try
// per value set waited on, not per waiter; and that a read-write lock's "1"
// (a write unlock), which wakes every waiter in Redisson, wakes every
// reader of this Client but one writer only, as "0" does: one writer can
// take the lock, and waking them all cost a script per waiting writer per
// hand-off (docs/locks.md).
func (c *Core) wakes(channel, payload string) int {
	c.perClassMu.Lock()
	perClass := c.perClass[channel] > 0
	c.perClassMu.Unlock()
	switch {
	case perClass:
		return pubsub.WakePerClass
	case payload == layout.ReadUnlockMessage && layout.IsRWChannel(channel):
		return pubsub.WakeShared
	}
	return layout.Wakes(channel, payload)
}

// perClassOn makes messages on channel wake one of this Client's waiters
// per class (see Core.wakes) until the returned func is called.
func (c *Core) perClassOn(channel string) func() {
	c.perClassMu.Lock()
	defer c.perClassMu.Unlock()
	if c.perClass == nil {
		c.perClass = map[string]int{}
	}
	c.perClass[channel]++
	return func() {
		c.perClassMu.Lock()
		defer c.perClassMu.Unlock()
		if c.perClass[channel]--; c.perClass[channel] <= 0 {
			delete(c.perClass, channel)
		}
	}
}

// ms is a duration in milliseconds as a script argument (the watchdog
// timeout boxed once).
func (c *Core) ms(d time.Duration) any {
	if d == c.cfg.WatchdogTimeout {
		return c.watchdogMs
	}
	return d.Milliseconds()
}

// New returns the engine of a Client on rdb (a *redis.Client, failover or
// cluster client), with the settings of cfg (rlock's options).
func New(rdb redis.UniversalClient, cfg Config) *Core {
	_, isCluster := rdb.(*redis.ClusterClient)
	mode := transport.SyncOff
	switch {
	case cfg.SyncSet && cfg.SyncReplicas > 0:
		mode = transport.SyncExplicit
	case !cfg.SyncSet && (isCluster || isFailover(rdb)):
		// Redisson checks replicas on every deployment but a single server.
		mode = transport.SyncAuto
	}
	pub := &pubCommand{mode: cfg.Sharded}
	pub.decideLocally(rdb)
	c := &Core{rdb: rdb, id: cfg.ClientID, cfg: cfg, sync: mode, pub: pub, holds: newLedger(), done: make(chan struct{}),
		pubArg: pub, watchdogMs: cfg.WatchdogTimeout.Milliseconds(), queuePause: cfg.QueuePause, cluster: isCluster}
	if c.queuePause <= 0 {
		c.queuePause = queuePause
	}
	c.send = newSender(c)
	c.hub = pubsub.New(rdb,
		pubsub.WithLogger(cfg.Logger),
		pubsub.WithWake(c.wakes),
		pubsub.WithKindsFunc(func(ctx context.Context) (pubsub.Kinds, error) {
			if err := c.resolveMode(ctx); err != nil {
				return pubsub.Classic, err
			}
			return c.pub.kinds(), nil
		}),
		pubsub.WithExclusive(exclusive),
	)
	c.wd = watchdog.New(c.renew, cfg.WatchdogTimeout, watchdog.WithLogger(cfg.Logger), watchdog.WithOnLost(c.lost))
	go c.checkEviction()
	c.startRegistry()
	return c
}

// isFailover reports whether rdb is a Sentinel client made by
// redis.NewFailoverClient (go-redis names its address "FailoverClient").
func isFailover(rdb redis.UniversalClient) bool {
	c, ok := rdb.(*redis.Client)
	return ok && c.Options().Addr == "FailoverClient"
}

// ID returns the client UUID, the first half of every hash field it writes.
func (c *Core) ID() string { return c.id }

// RDB returns the go-redis client the Client was made with (nil-safe).
func (c *Core) RDB() redis.UniversalClient {
	if c == nil {
		return nil
	}
	return c.rdb
}

// Closed reports whether Close was called.
func (c *Core) Closed() bool { return c.closed.Load() }

// Cluster reports whether the Client is on a Redis Cluster: lock names
// must then be slot-safe.
func (c *Core) Cluster() bool { return c.cluster }

// Logger returns where the Client logs (WithLogger).
func (c *Core) Logger() *slog.Logger { return c.cfg.Logger }

// WatchdogTimeout returns the lease of a watchdog-managed hold.
func (c *Core) WatchdogTimeout() time.Duration { return c.cfg.WatchdogTimeout }

// Retry returns how the Client's waits ride out a failing Redis.
func (c *Core) Retry() RetryPolicy { return c.cfg.Retry }

// Waiters returns how many waiters of the Client block on channel now (for
// specs and benchmarks).
func (c *Core) Waiters(channel string) int { return c.hub.Waiters(channel) }

// SmallRedLockWarned is set once a RedLock whose first lock is on this
// Client logged that it spans fewer than 3 masters (it does so once per
// Client).
func (c *Core) SmallRedLockWarned() *atomic.Bool { return &c.smallRedLockWarned }

// Close stops the watchdog, the transport and the subscriptions; calls
// then fail with ErrClosed. It returns once the Client's registration is
// deleted, within closeDeleteTimeout whatever Redis does; a second Close
// does nothing.
func (c *Core) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil // closed already: Close is idempotent
	}
	close(c.done)
	c.send.Shut()
	c.wd.Close()
	deleted := c.reg.close()
	err := c.hub.Close()
	deleted() // the registration's delete, bounded by closeDeleteTimeout
	if err != nil && !errors.Is(err, pubsub.ErrClosed) {
		return err
	}
	return nil
}

// Field returns the hash field of ctx's owner.
func (c *Core) Field(ctx context.Context) string {
	return c.id + ":" + ctxowner.Of(ctx)
}

// checkEviction warns, once, when Redis may evict keys under memory
// pressure: every lock key has a TTL, so every policy but noeviction
// (volatile-* included) can drop a held lock and let a second owner in. A
// server that refuses CONFIG (managed Redis often does) is not checked.
//
// It runs once, on its own connection from the pool (not in a batch, where
// a server that cannot be reached would hold up lock calls behind it).
func (c *Core) checkEviction() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	got, err := c.rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return
	}
	policy := strings.TrimSpace(got["maxmemory-policy"])
	if policy == "" || policy == "noeviction" {
		return
	}
	c.Logger().Warn("goredisson: Redis may evict lock keys: maxmemory-policy is "+policy+
		"; under memory pressure a held lock can vanish and a second owner enter. Set maxmemory-policy noeviction on servers that hold locks",
		"maxmemory-policy", policy)
}
