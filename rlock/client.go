// Package rlock implements Redisson's distributed locks for Go.
//
// A Client owns one client UUID, one shared pub/sub subscription and one
// watchdog for a Redis deployment; locks are made from it by name:
//
//	client, err := rlock.NewClient(rdb)
//	lock := client.NewLock("order:42")
//	if err := lock.Lock(ctx); err != nil { ... }
//	defer lock.Unlock(ctx)
//
// Locks are reentrant per owner. The owner of a call is the owner carried by
// its context (see package ctxowner) or else the calling goroutine, as
// Redisson's owner is the thread. The data layout, channel names and messages
// in Redis are Redisson's own, so goredisson and Redisson exclude each other
// on the same lock name.
package rlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/watchdog"
)

// Client is the entry point: it makes locks and serves them with one pub/sub
// subscription and one watchdog. It is safe for concurrent use; Close it when
// done (it does not close the go-redis client).
type Client struct {
	rdb  redis.UniversalClient
	id   string
	opts options
	hub  *pubsub.Hub
	wd   *watchdog.Scheduler

	seq     atomic.Uint64 // attempt and request ids
	cluster bool          // rdb is a ClusterClient: lock names must be slot-safe
	// renewLoaded marks the renew scripts this client has loaded with
	// SCRIPT LOAD in its first renewal pipeline, per renewKind.
	renewLoaded [2]atomic.Bool
	closed      atomic.Bool

	mu      sync.Mutex
	holds   map[holdKey]*hold
	pending map[holdKey]chan struct{} // clean-ups in flight, closed when done
	// unsettled are settles of lost acquire attempts that could not reach
	// Redis; the owner's next acquire or unlock of the lock runs them first.
	unsettled map[holdKey][]func(context.Context) error
	closing   bool           // set under mu by Close before it waits for bg
	bg        sync.WaitGroup // clean-up and abandoned-call goroutines
}

// holdKey names one owner's hold on one lock.
type holdKey struct{ name, field string }

// hold is what this client knows of one owner's hold: how many times it was
// taken and how its lease is kept.
type hold struct {
	count   int
	lease   time.Duration   // the fixed lease of the last acquisition, or 0
	expires time.Time       // when a fixed lease runs out (monotonic)
	entry   *watchdog.Entry // non-nil while the watchdog renews it
}

// NewClient returns a Client for rdb. It fails with ErrInvalidArgument for a
// nil rdb or an invalid option. No connection is made until a lock is used.
func NewClient(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	if rdb == nil {
		return nil, opErr("newclient", "", fmt.Errorf("%w: nil redis client", ErrInvalidArgument))
	}
	o := options{
		watchdogTimeout: DefaultWatchdogTimeout,
		logger:          slog.Default(),
		latchTTL:        DefaultUnlockLatchTTL,
		publishCommand:  "publish",
		backoff:         DefaultBackoff,
		waiterTimeout:   DefaultFairWaiterTimeout,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, opErr("newclient", "", fmt.Errorf("%w: nil option", ErrInvalidArgument))
		}
		opt(&o)
	}
	if o.clientIDSet && o.clientID == "" {
		o.errs = append(o.errs, errors.New("empty client id"))
	}
	if len(o.errs) > 0 {
		return nil, opErr("newclient", "", fmt.Errorf("%w: %w", ErrInvalidArgument, errors.Join(o.errs...)))
	}
	if !o.clientIDSet {
		o.clientID = uuid.NewString()
	}
	c := &Client{rdb: rdb, id: o.clientID, opts: o, holds: make(map[holdKey]*hold), pending: make(map[holdKey]chan struct{}),
		unsettled: make(map[holdKey][]func(context.Context) error)}
	_, c.cluster = rdb.(*redis.ClusterClient)
	hubOpts := []pubsub.Option{
		pubsub.WithLogger(o.logger),
		pubsub.WithWakeAll(func(payload string) bool { return payload == ReadUnlockMessage }),
		pubsub.WithSharded(o.publishCommand == "spublish"),
	}
	if o.lingerSet {
		hubOpts = append(hubOpts, pubsub.WithLinger(o.linger))
	}
	c.hub = pubsub.New(rdb, hubOpts...)
	c.wd = watchdog.New(c.renew, o.watchdogTimeout/3, watchdog.WithLogger(o.logger))
	return c, nil
}

// ID returns the client UUID, the first half of every hash field this
// client writes.
func (c *Client) ID() string { return c.id }

// WatchdogTimeout returns the lease of watchdog-managed locks.
func (c *Client) WatchdogTimeout() time.Duration { return c.opts.watchdogTimeout }

// Close stops the watchdog and the subscription. Locks still held are no
// longer renewed and expire within one watchdog timeout; waiters return
// ErrClosed. Later calls return ErrClosed. The go-redis client stays open.
func (c *Client) Close() error {
	if c == nil {
		return opErr("close", "", fmt.Errorf("%w: nil client", ErrInvalidArgument))
	}
	if !c.closed.CompareAndSwap(false, true) {
		return opErr("close", "", ErrClosed)
	}
	c.wd.Close()
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.bg.Wait() // bounded by settleTimeout and go-redis's timeouts
	if err := c.hub.Close(); err != nil && !errors.Is(err, pubsub.ErrClosed) {
		return opErr("close", "", err)
	}
	return nil
}

// field returns the hash field of ctx's owner.
func (c *Client) field(ctx context.Context) string {
	return c.id + ":" + ctxowner.Of(ctx)
}

// nextID returns a fresh id for an attempt or request, unique to this client.
func (c *Client) nextID() string {
	return c.id + ":" + strconv.FormatUint(c.seq.Add(1), 10)
}

// known returns how many holds this client believes the field has on the
// lock: the baseline for settling an attempt whose outcome is unknown.
func (c *Client) known(name, field string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.holds[holdKey{name, field}]
	if h == nil || h.stale() {
		return 0
	}
	return h.count
}

// stale reports whether the hold has surely ended without an unlock: its
// watchdog found it lost, or its fixed lease ran out.
func (h *hold) stale() bool {
	if h.entry != nil {
		select {
		case <-h.entry.Lost():
			return true
		default:
			return false
		}
	}
	return !h.expires.IsZero() && time.Now().After(h.expires)
}

// acquired records a successful acquisition and starts the watchdog for a
// watchdog lease (lease <= 0) unless it already runs for this hold.
func (c *Client) acquired(name, field string, lease time.Duration, renew renewKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := holdKey{name, field}
	h := c.holds[k]
	if h == nil || h.stale() {
		if h != nil && h.entry != nil {
			h.entry.Stop()
		}
		h = &hold{}
		c.holds[k] = h
	}
	h.count++
	if lease > 0 {
		h.lease = lease
		h.expires = time.Now().Add(lease)
		return
	}
	h.expires = time.Time{}
	if h.entry == nil {
		h.entry = c.wd.Add(watchdog.Lease{Key: name, Field: field, Data: renew})
	}
}

// released records an unlock: gone tells whether it was the last hold (or
// the hold turned out not to exist).
func (c *Client) released(name, field string, gone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := holdKey{name, field}
	h := c.holds[k]
	if h == nil {
		return
	}
	h.count--
	if gone || h.count <= 0 {
		if h.entry != nil {
			h.entry.Stop()
		}
		delete(c.holds, k)
	}
}

// leaseFor returns the lease to re-apply on a partial unlock: the watchdog
// timeout for watchdog holds, else the hold's last fixed lease.
func (c *Client) leaseFor(name, field string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.holds[holdKey{name, field}]; h != nil && h.entry == nil && h.lease > 0 {
		return h.lease
	}
	return c.opts.watchdogTimeout
}

// lostChan returns the watchdog's loss channel for a hold, or nil.
func (c *Client) lostChan(name, field string) (<-chan struct{}, func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.holds[holdKey{name, field}]; h != nil && h.entry != nil {
		return h.entry.Lost(), h.entry.Err
	}
	return nil, nil
}

// renewKind selects the renewal script of a watchdog lease.
type renewKind int

const (
	renewRLock renewKind = iota // renew.lua: the hash, while the field holds it
	renewRead                   // read_renew.lua: the hash and the reader's timeout keys
)

// renew is the watchdog's RenewFunc: one pipeline per script kind in the
// batch (usually one).
func (c *Client) renew(ctx context.Context, leases []watchdog.Lease) ([]watchdog.Status, error) {
	ms := c.opts.watchdogTimeout.Milliseconds()
	out := make([]watchdog.Status, len(leases))
	for _, kind := range []renewKind{renewRLock, renewRead} {
		var idx []int
		var keys [][]string
		var args [][]any
		for i, l := range leases {
			if l.Data.(renewKind) != kind {
				continue
			}
			idx = append(idx, i)
			k := []string{l.Key}
			if kind == renewRead {
				k = append(k, readTimeoutPrefix(l.Key, l.Field))
			}
			keys = append(keys, k)
			args = append(args, []any{ms, l.Field})
		}
		if len(idx) == 0 {
			continue
		}
		script, name := renewScript, "renew"
		if kind == renewRead {
			script, name = readRenewScript, "read_renew"
		}
		loaded := &c.renewLoaded[kind]
		var src string
		if !loaded.Load() {
			src, _ = scriptSource(name) // embedded: cannot fail after init
		}
		cmds, err := evalBatch(ctx, c.rdb, script, keys, args, src)
		if err != nil {
			return nil, err
		}
		loaded.Store(true)
		for j, cmd := range cmds {
			n, err := cmd.Int64()
			switch {
			case err != nil:
				out[idx[j]] = watchdog.Failed
			case n == 1:
				out[idx[j]] = watchdog.Renewed
			default:
				out[idx[j]] = watchdog.Lost
			}
		}
	}
	return out, nil
}

// settleTimeout bounds the clean-up calls made after the caller's context
// ended: settling an acquire of unknown outcome, finishing an unlock.
const settleTimeout = 5 * time.Second

// settleCtx returns a context for clean-up that outlives ctx's cancellation.
func settleCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// background runs a clean-up for one owner's hold after the caller's
// context ended, with a context of its own bounded by settleTimeout. Until
// it is done, the owner's next acquire or unlock of the lock waits for it
// (see awaitPending), so that the clean-up never races with them.
func (c *Client) background(ctx context.Context, k holdKey, f func(ctx context.Context)) {
	done := make(chan struct{})
	c.mu.Lock()
	prev := c.pending[k]
	c.pending[k] = done
	c.mu.Unlock()
	c.spawn(func() {
		defer func() {
			c.mu.Lock()
			if c.pending[k] == done {
				delete(c.pending, k)
			}
			c.mu.Unlock()
			close(done)
		}()
		if prev != nil {
			<-prev
		}
		sctx, cancel := settleCtx(ctx)
		defer cancel()
		f(sctx)
	})
}

// spawn runs f on a goroutine that Close waits for; once Close has begun,
// f runs on the caller's goroutine instead.
func (c *Client) spawn(f func()) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		f()
		return
	}
	c.bg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.bg.Done()
		f()
	}()
}

// bounded runs the Redis call f and returns its result, or ctx's error as
// soon as ctx ends, even if f is still blocked: go-redis bounds socket reads
// by the context only with ContextTimeoutEnabled, and lock calls must return
// by their deadline whatever the client's settings. abandoned reports that
// f was left running and its outcome is unknown to the caller.
func bounded[T any](c *Client, ctx context.Context, f func() (T, error)) (v T, err error, abandoned bool) {
	if ctx.Done() == nil {
		v, err = f()
		return v, err, false
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	c.spawn(func() {
		v, err := f()
		ch <- result{v, err}
	})
	select {
	case r := <-ch:
		return r.v, r.err, false
	case <-ctx.Done():
		select {
		case r := <-ch: // finished as ctx ended: the outcome is known
			return r.v, r.err, false
		default:
		}
		return v, ctx.Err(), true
	}
}

// addUnsettled keeps a settle that failed, to be run again by runUnsettled.
func (c *Client) addUnsettled(k holdKey, settle func(context.Context) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unsettled[k] = append(c.unsettled[k], settle)
}

// runUnsettled runs the kept settles of the hold's lost attempts, in order,
// and fails (keeping the rest) when one still cannot reach Redis: until
// they are done, a new attempt could count a hold twice.
func (c *Client) runUnsettled(ctx context.Context, k holdKey) error {
	for {
		c.mu.Lock()
		list := c.unsettled[k]
		if len(list) == 0 {
			delete(c.unsettled, k)
			c.mu.Unlock()
			return nil
		}
		settle := list[0]
		c.mu.Unlock()
		if err := settle(ctx); err != nil {
			return fmt.Errorf("settling an earlier acquire attempt of unknown outcome: %w", err)
		}
		c.mu.Lock()
		if l := c.unsettled[k]; len(l) > 0 {
			c.unsettled[k] = l[1:]
		}
		c.mu.Unlock()
	}
}

// awaitPending waits until no clean-up is in flight for the hold, or ctx
// ends.
func (c *Client) awaitPending(ctx context.Context, k holdKey) error {
	c.mu.Lock()
	done := c.pending[k]
	c.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) logger() *slog.Logger { return c.opts.logger }
