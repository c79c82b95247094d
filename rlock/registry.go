package rlock

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
	c        *Client
	key, val string
	ttl      time.Duration
	stop     chan struct{}
	done     chan struct{}
	// live is set while the last write succeeded: Close then deletes the
	// key (else Redis is likely unreachable and the TTL ends it).
	live atomic.Bool
}

// closeDeleteTimeout bounds the delete of the registration at Close, and
// closeWait how long Close waits for it (Close does not wait for Redis).
const (
	closeDeleteTimeout = time.Second
	closeWait          = 10 * time.Millisecond
)

// startRegistry starts the registration, unless WithClientRegistry(false).
func (c *Client) startRegistry() {
	if !c.opts.register {
		return
	}
	host, _ := os.Hostname()
	rec := layout.ClientRecord{ID: c.id, Name: c.opts.clientName, Host: host, PID: os.Getpid(),
		Started: time.Now().UTC().Format(time.RFC3339Nano), Lib: "goredisson"}
	val, _ := json.Marshal(rec) // a struct of strings and an int
	c.reg = &registry{c: c, key: layout.ClientKey(c.id), val: string(val), ttl: c.opts.watchdogTimeout,
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
		r.c.logger().Warn("goredisson: the Client's registration was refused, so rlockctl shows its holder fields as unregistered; grant the Redis user ~goredisson_client:* or use WithClientRegistry(false)",
			"key", r.key, "error", err.Error())
		return false
	}
	r.c.logger().Debug("goredisson: registration not written; trying again", "key", r.key, "error", err.Error())
	return true
}

// close stops the registration and deletes the key when the last write
// succeeded (or was cut short by Close), without holding Close up: it waits
// for the delete's reply at most closeWait, and the delete goes on in the
// background, bounded by closeDeleteTimeout (a hung or unreachable Redis
// lets the key end at its TTL instead).
func (r *registry) close() {
	if r == nil {
		return
	}
	close(r.stop)
	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		<-r.done
		if !r.live.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), closeDeleteTimeout)
		defer cancel()
		_ = r.c.rdb.Del(ctx, r.key).Err()
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-deleted:
	case <-t.C:
	}
}
