package pubsub

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel: a data connection dialled to another server than the
// subscription's means the primary changed; the subscription follows.

// Sentinel failovers.
//
// go-redis's Sentinel client (redis.NewFailoverClient) moves its command
// pools to the new primary after a failover, but not a subscription
// connection, which stays on the old primary and hears nothing more. To
// learn of the move, the Hub adds a dial hook to the client: every
// connection the client dials reports where it went. A data connection
// dialled to another server than the Hub's subscription connection means
// the primary changed, and the subscription connection is made again
// (to the new primary, as the dial resolves it). So that an idle client
// learns of it too, the Hub sends PING through the command pool every
// failoverProbe while it has a subscription (see probe).

// dialWatch is the Hub's dial hook. hub is cleared when the Hub closes
// (a hook cannot be removed from a go-redis client).
type dialWatch struct{ hub atomic.Pointer[Hub] }

func (w *dialWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := next(ctx, network, addr)
		if err == nil && cn != nil {
			if h := w.hub.Load(); h != nil {
				h.dialed(ctx, cn.RemoteAddr().String())
			}
		}
		return cn, err
	}
}

func (w *dialWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (w *dialWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// isFailover reports whether rdb is a Sentinel client made by
// redis.NewFailoverClient (go-redis names its address "FailoverClient").
func isFailover(rdb redis.UniversalClient) bool {
	c, ok := rdb.(*redis.Client)
	return ok && c.Options().Addr == "FailoverClient"
}

// watchDials installs the dial hook on a Sentinel client, once, and reports
// whether rdb is one. Called with sendMu held.
func (h *Hub) watchDials(rdb redis.UniversalClient) bool {
	if !isFailover(rdb) {
		return false
	}
	if h.watch == nil {
		h.watch = &dialWatch{}
		h.watch.hub.Store(h)
		rdb.(*redis.Client).AddHook(h.watch)
	}
	return true
}

// failoverProbe is how often a Hub with a subscription on a Sentinel client
// sends PING through the client's command pool. go-redis empties that pool
// when Sentinel announces a new primary; the PING that follows dials the
// new primary, which the dial hook sees even when the application sends
// nothing (its waiters wait).
const failoverProbe = time.Second

// probe sends PING every failoverProbe while c lives.
func (h *Hub) probe(c *conn, rdb redis.UniversalClient) {
	t := time.NewTicker(failoverProbe)
	defer t.Stop()
	for {
		select {
		case <-c.loop:
			return
		case <-h.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), failoverProbe)
		_ = rdb.Ping(ctx).Err()
		cancel()
	}
}

// dialed learns where a connection of the client went.
func (h *Hub) dialed(ctx context.Context, remote string) {
	if c, ok := ctx.Value(connKey{}).(*conn); ok {
		c.remote.Store(&remote)
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	c := h.conns[""]
	h.mu.Unlock()
	if c == nil {
		return
	}
	if r := c.remote.Load(); r != nil && *r != remote {
		h.log.Info("goredisson: the primary changed; subscribing on the new one", "old", *r, "new", remote)
		go h.lost(c, fmt.Errorf("primary moved from %s to %s", *r, remote))
	}
}
