package rlock

import (
	"context"
	"errors"
	"fmt"
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

// Client makes and serves locks; it is safe for concurrent use. Close it.
type Client struct {
	rdb  redis.UniversalClient
	id   string
	opts options

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
	// scripts (see Client.renew).
	renewLoaded atomic.Bool
	// pubRefused is set once a refused publish was logged (see acl.go).
	pubRefused atomic.Bool
	// queuePause bounds a queued waiter's first wait (see waitSpec.queue):
	// queuePause, except in specs that need a lost wake to show.
	queuePause time.Duration
	// perClass counts, per channel, the waiters on it that a message wakes
	// one per class of (see Client.wakes).
	perClassMu sync.Mutex
	perClass   map[string]int
	// reg keeps the Client's registration (nil: WithClientRegistry(false)).
	reg *registry
	// smallRedLockWarned is set once a RedLock over fewer than 3 masters
	// logged its warning (see warnSmallRedLock).
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
func (c *Client) wakes(channel, payload string) int {
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
// per class (see Client.wakes) until the returned func is called.
func (c *Client) perClassOn(channel string) func() {
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
func (c *Client) ms(d time.Duration) any {
	if d == c.opts.watchdogTimeout {
		return c.watchdogMs
	}
	return d.Milliseconds()
}

// NewClient returns a Client for a *redis.Client, failover or cluster client.
func NewClient(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	switch rdb.(type) {
	case nil:
		return nil, opErr("newclient", "", fmt.Errorf("%w: nil redis client", ErrInvalidArgument))
	case *redis.Ring:
		return nil, opErr("newclient", "", fmt.Errorf("%w: redis.Ring is not supported: it moves keys to another shard when one is marked down, and a lock must not move; use a Client per server with RedLock, or a Redis Cluster", ErrInvalidArgument))
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, opErr("newclient", "", err)
	}
	_, isCluster := rdb.(*redis.ClusterClient)
	if !o.syncSet {
		// Redisson checks replicas on every deployment but a single server.
		o.sync = syncOff
		if isCluster || isFailover(rdb) {
			o.sync = syncAuto
		}
	}
	o.publishCommand.decideLocally(rdb)
	c := &Client{rdb: rdb, id: o.clientID, opts: o, holds: newLedger(), done: make(chan struct{}),
		pubArg: o.publishCommand, watchdogMs: o.watchdogTimeout.Milliseconds(), queuePause: queuePause, cluster: isCluster}
	c.send = newSender(c)
	c.hub = pubsub.New(rdb,
		pubsub.WithLogger(o.logger),
		pubsub.WithWake(c.wakes),
		pubsub.WithKindsFunc(func(ctx context.Context) (pubsub.Kinds, error) {
			if err := c.resolveMode(ctx); err != nil {
				return pubsub.Classic, err
			}
			return c.opts.publishCommand.kinds(), nil
		}),
		pubsub.WithExclusive(exclusive),
	)
	c.wd = watchdog.New(c.renew, o.watchdogTimeout, watchdog.WithLogger(o.logger), watchdog.WithOnLost(c.lost))
	go c.checkEviction()
	c.startRegistry()
	return c, nil
}

// isFailover reports whether rdb is a Sentinel client made by
// redis.NewFailoverClient (go-redis names its address "FailoverClient").
func isFailover(rdb redis.UniversalClient) bool {
	c, ok := rdb.(*redis.Client)
	return ok && c.Options().Addr == "FailoverClient"
}

// ID returns the client UUID, the first half of every hash field it writes.
func (c *Client) ID() string { return c.id }

// Close stops the watchdog and subscriptions; calls then return ErrClosed.
// It returns once the Client's registration is deleted, within 1 s
// whatever Redis does.
func (c *Client) Close() error {
	if c == nil {
		return opErr("close", "", fmt.Errorf("%w: nil client", ErrInvalidArgument))
	}
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
		return opErr("close", "", err)
	}
	return nil
}

// field returns the hash field of ctx's owner.
func (c *Client) field(ctx context.Context) string {
	return c.id + ":" + ctxowner.Of(ctx)
}

// check validates a handle for an operation.
func (h *handle) check(ctx context.Context, op string) error {
	switch {
	case h == nil || h.c == nil:
		return opErr(op, h.nameOrEmpty(), fmt.Errorf("%w: nil client", ErrInvalidArgument))
	case h.name == "":
		return opErr(h.opName(op), "", fmt.Errorf("%w: empty lock name", ErrInvalidArgument))
	case ctx == nil:
		return opErr(h.opName(op), h.name, fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case h.kindErr() != nil:
		return opErr(h.opName(op), h.name, h.kindErr())
	case h.nameErr() != nil:
		return opErr(h.opName(op), h.logical(), h.nameErr())
	case h.c.cluster && !layout.SlotSafe(h.name):
		return opErr(h.opName(op), h.name, fmt.Errorf("%w: on Redis Cluster a lock name with a stray '{' or '}' puts its auxiliary keys in other slots; use a hash tag such as {order:42}", ErrInvalidArgument))
	case h.c.closed.Load():
		return opErr(h.opName(op), h.name, ErrClosed)
	}
	return nil
}

func (h *handle) nameOrEmpty() string {
	if h == nil {
		return ""
	}
	return h.name
}

// checkEviction warns, once, when Redis may evict keys under memory
// pressure: every lock key has a TTL, so every policy but noeviction
// (volatile-* included) can drop a held lock and let a second owner in. A
// server that refuses CONFIG (managed Redis often does) is not checked.
//
// It runs once, on its own connection from the pool (not in a batch, where
// a server that cannot be reached would hold up lock calls behind it).
func (c *Client) checkEviction() {
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
	c.logger().Warn("goredisson: Redis may evict lock keys: maxmemory-policy is "+policy+
		"; under memory pressure a held lock can vanish and a second owner enter. Set maxmemory-policy noeviction on servers that hold locks",
		"maxmemory-policy", policy)
}

func (c *Client) logger() *slog.Logger { return c.opts.logger }
