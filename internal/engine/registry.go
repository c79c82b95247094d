package engine

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
)

// registry keeps the Client's registration alive: layout.ClientKey(id), a
// string with the Client's host, pid, start time and name as JSON, written
// with a TTL of one watchdog timeout and written again every third of it
// (the watchdog's period; the watchdog itself runs only while leases are
// held, the registration for the Client's whole life). Close deletes it.
// Redisson's keys are not touched (docs/layout.md).
type registry struct {
	c        *Core
	key, val string
	ttl      time.Duration
	stop     chan struct{}
	done     chan struct{}
	// live is set while the last write succeeded: Close then deletes the
	// key (else Redis is likely unreachable and the TTL ends it).
	live atomic.Bool
}

// closeDeleteTimeout bounds how long Close waits for the delete of the
// registration: a Redis that answers lets Close return as soon as the key
// is gone; a hung or unreachable one lets the key end at its TTL.
const closeDeleteTimeout = time.Second

// startRegistry starts the registration, unless WithClientRegistry(false).
func (c *Core) startRegistry() {
	if !c.cfg.Register {
		return
	}
	host, _ := os.Hostname()
	rec := layout.ClientRecord{ID: c.id, Name: c.cfg.ClientName, Host: host, PID: os.Getpid(),
		Started: time.Now().UTC().Format(time.RFC3339Nano), Lib: "goredisson"}
	val, _ := json.Marshal(rec) // a struct of strings and an int
	c.reg = &registry{c: c, key: layout.ClientKey(c.id), val: string(val), ttl: c.cfg.WatchdogTimeout,
		stop: make(chan struct{}), done: make(chan struct{})}
	go c.reg.loop()
}

func (r *registry) loop() {
	defer close(r.done)
	period := r.ttl / 3
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if !r.write(period) {
			return
		}
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
	}
}

// write sets the key once; it reports false when Redis refused it for good
// (an ACL that does not let the user write it): the Client then stops
// registering and says so once.
func (r *registry) write(timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := r.c.rdb.Set(ctx, r.key, r.val, r.ttl).Err()
	select {
	case <-r.stop: // a write cut short by Close may have landed: delete
		r.live.Store(true)
		return false
	default:
	}
	r.live.Store(err == nil)
	switch {
	case err == nil:
		return true
	case strings.HasPrefix(err.Error(), "NOPERM"):
		r.c.Logger().Warn("goredisson: the Client's registration was refused, so rlockctl shows its holder fields as unregistered; grant the Redis user ~goredisson_client:* or use WithClientRegistry(false)",
			"key", r.key, "error", err.Error())
		return false
	}
	r.c.Logger().Debug("goredisson: registration not written; trying again", "key", r.key, "error", err.Error())
	return true
}

// close stops the registration and starts deleting the key when the last
// write succeeded (or was cut short by Close); wait waits for that delete,
// at most closeDeleteTimeout from close, so that the key is gone when Close
// returns (a caller that closes the go-redis client right after Close, as
// deferred calls do, no longer cuts it and leaves the key for a lease).
func (r *registry) close() (wait func()) {
	if r == nil {
		return func() {}
	}
	close(r.stop)
	ctx, cancel := context.WithTimeout(context.Background(), closeDeleteTimeout)
	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		defer cancel()
		select {
		case <-r.done: // the loop ended: no write after the delete
		case <-ctx.Done():
			return // a write to a hung Redis: the TTL ends the key
		}
		if !r.live.Load() {
			return
		}
		_ = r.c.rdb.Del(ctx, r.key).Err()
	}()
	return func() {
		// go-redis may take longer than ctx (a dial to a server that
		// accepts and never answers takes its DialTimeout): Close does not.
		select {
		case <-deleted:
		case <-ctx.Done():
		}
	}
}
