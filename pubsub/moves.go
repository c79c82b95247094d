package pubsub

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/goredisson/goredisson/internal/cluster"
)

// Channels that move: a channel the server unsubscribed (its slot moved),
// an error reply (MOVED, refused), and rehome, which subscribes the
// channels of a failed connection again where they belong now.

// unsubscribed handles an unsubscribe confirmation (sharded: of an
// SUNSUBSCRIBE): one the Hub asked for, or the server dropping the channel
// (a slot that migrated away), which is then subscribed again where it
// belongs. The server never drops a classic subscription itself, so on a
// connection with both kinds only an SUNSUBSCRIBE can be a drop.
func (h *Hub) unsubscribed(c *conn, name string, sharded bool) {
	h.mu.Lock()
	ch := h.chans[name]
	if ch == nil || ch.conn != c {
		h.mu.Unlock()
		return
	}
	if ch.unsubs > 0 || !ch.want || (c.both && !sharded) {
		if ch.unsubs > 0 {
			ch.unsubs--
		}
		h.dropIfUnused(ch)
		h.mu.Unlock()
		return
	}
	ch.detach()
	both := c.both
	h.mu.Unlock()
	if both {
		h.dropClassic(c, name)
	}
	h.log.Debug("goredisson: the server dropped a subscription (its slot moved), subscribing again", "channel", name, "node", c.key)
	if h.nodes != nil {
		// On the reader's goroutine: bounded, rehome places the channel
		// with what it knows when this fails.
		ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
		h.learnOwner(ctx, c, Slot(name))
		cancel()
	}
	go h.rehome(nil, []*channel{ch})
}

// learnOwner has the Hub place slot's channels on the master that c's
// node, which has just dropped a channel of slot, says serves it now. A
// reload of the slot map may be answered by a node that has not heard of
// the change yet and name c's node again: after a CLUSTER FAILOVER that is
// then the new master's replica, which accepts the SSUBSCRIBE but hears
// nothing published until gossip tells the new master of it, so a wake
// could be lost. When c's node cannot tell, the slot map is reloaded.
// Called by c's reader.
func (h *Hub) learnOwner(ctx context.Context, c *conn, slot int) {
	if owner, err := h.askOwner(ctx, c, slot); err == nil && owner != c.key {
		h.nodes.Moved(slot, owner)
		return
	}
	_ = h.nodes.Reload(ctx)
}

// askOwner asks c's node (CLUSTER SLOTS, one answer serving the channels
// it drops at once) which master serves slot. Called by c's reader.
func (h *Hub) askOwner(ctx context.Context, c *conn, slot int) (string, error) {
	if time.Since(c.slotsAt) > slotsFresh {
		rdb, err := h.nodes.Node(ctx, c.key)
		if err != nil {
			return "", err
		}
		// CLUSTER SLOTS, deprecated by Redis 7's CLUSTER SHARDS, is what
		// go-redis's ClusterClient reads for its own slot map (osscluster.go,
		// loadState), so the owner found here is named as go-redis names it;
		// Redis and Valkey still answer it.
		//lint:ignore SA1019 the same view of the slots as go-redis's slot map (above)
		if c.slots, err = rdb.ClusterSlots(ctx).Result(); err != nil {
			return "", err
		}
		c.slotsAt = time.Now()
	}
	for _, r := range c.slots {
		if slot >= r.Start && slot <= r.End && len(r.Nodes) > 0 {
			return sameHost(r.Nodes[0].Addr, c.key), nil
		}
	}
	return "", fmt.Errorf("pubsub: slot %d has no master in the view of %s", slot, c.key)
}

// slotsFresh is how long askOwner uses a node's CLUSTER SLOTS answer.
const slotsFresh = 100 * time.Millisecond

// errorReply handles an error reply on a subscription connection: MOVED
// for an SSUBSCRIBE sent to a master that no longer serves the slot (its
// channels subscribed again where the slot is now), NOPERM (refused), and
// any other error (TRYAGAIN, CLUSTERDOWN, LOADING, BUSY, a redirect
// without a usable address): the reply does not say which channel, so the
// channels still unconfirmed on c are taken off it and subscribed again
// after a pause, their waiters woken once confirmed.
func (h *Hub) errorReply(c *conn, msg string) {
	if strings.HasPrefix(msg, "NOPERM") {
		h.refused(c, msg)
		return
	}
	r, moved := cluster.ParseRedirect(msg)
	moved = moved && h.nodes != nil
	if moved {
		h.nodes.Moved(r.Slot, r.Addr)
	}
	h.mu.Lock()
	var chans []*channel
	for _, ch := range h.chans {
		if ch.conn == c && ch.pending > 0 && (!moved || Slot(ch.name) == r.Slot) {
			ch.detach()
			chans = append(chans, ch)
		}
	}
	both := c.both
	h.mu.Unlock()
	if both {
		// The SUBSCRIBE before the refused SSUBSCRIBE may have been taken:
		// the channel leaves c whole.
		for _, ch := range chans {
			h.dropClassic(c, ch.name)
		}
	}
	if moved {
		go h.rehome(nil, chans)
		return
	}
	h.log.Warn("goredisson: subscription refused, subscribing again later", "node", c.key, "channels", len(chans), "err", msg)
	if len(chans) > 0 {
		h.retryLater(chans)
	}
}

// refused handles a SUBSCRIBE the server refused for want of channel
// permissions (an ACL user, docs/layout.md): the reply does not say which
// channel, so every channel waiting for its confirmation on c goes on
// unconfirmed now, as after readyTimeout, rather than holding its waiters
// for it, and its waiters poll (refusedPoll) since no message will wake
// them. The first refusal is
// logged as a warning naming the channels; later ones at debug level.
func (h *Hub) refused(c *conn, msg string) {
	h.mu.Lock()
	var names []string
	for _, ch := range h.chans {
		if ch.conn == c && ch.pending > 0 {
			ch.pending = 0
			ch.refused = true
			if ch.want && !isClosed(ch.ready) {
				close(ch.ready)
			}
			names = append(names, ch.name)
		}
	}
	h.mu.Unlock()
	if h.refusedOnce.CompareAndSwap(false, true) {
		h.log.Warn("goredisson: subscription refused: the Redis user may not subscribe to the lock channels, so unlocks wake no waiter (they poll every second); grant the channels docs/layout.md lists (ACL users)",
			"channels", strings.Join(names, ","), "err", msg)
		return
	}
	h.log.Debug("goredisson: subscription refused", "channels", strings.Join(names, ","), "err", msg)
}

// dropClassic unsubscribes the classic half of a channel that left c, a
// connection with both kinds (its sharded half was dropped or refused), so
// that c hears nothing more of it; messages that come meanwhile are not
// delivered (see Hub.deliver). Written by c's reader before the channel is
// subscribed again, so an UNSUBSCRIBE never follows a new SUBSCRIBE of
// the channel on c. Its confirmation is no drop (see unsubscribed).
func (h *Hub) dropClassic(c *conn, name string) {
	wctx, cancel := context.WithTimeout(c.ctx(), writeTimeout)
	defer cancel()
	if err := c.ps.Unsubscribe(wctx, name); err != nil {
		h.log.Debug("goredisson: unsubscribe of a moved channel failed", "channel", name, "node", c.key, "err", err)
	}
}

// detach takes ch off its connection, which no longer carries it. Called
// with Hub.mu held.
func (ch *channel) detach() {
	if ch.conn != nil && ch.counted {
		ch.conn.n--
	}
	ch.conn, ch.counted, ch.pending, ch.unsubs = nil, false, 0, 0
}

// sameHost names the node at owner, as the node at via reported it, the
// way go-redis names it in its slot map (newClusterState): a loopback IP
// stands for via's host unless that is loopback too, and port 0 (a TLS-only
// cluster) for via's port.
func sameHost(owner, via string) string {
	host, port, err := net.SplitHostPort(owner)
	viaHost, viaPort, err2 := net.SplitHostPort(via)
	if err != nil || err2 != nil {
		return owner
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() && !isLoopback(viaHost) {
		host = viaHost
	}
	if port == "0" {
		port = viaPort
	}
	return net.JoinHostPort(host, port)
}

// isLoopback tells a loopback host as go-redis does.
func isLoopback(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	host = strings.ToLower(host)
	return host == "localhost" || strings.HasSuffix(host, ".docker.internal")
}

// Bounds of re-subscribing channels whose connection failed.
const (
	rehomePause    = 50 * time.Millisecond
	maxRehomePause = 2 * time.Second
	// reloadTimeout bounds a reload of the Cluster's slots on a
	// connection's reader.
	reloadTimeout = 2 * time.Second
)

// rehome forgets old (when not nil) and subscribes the channels again
// where they belong now; once confirmed, their waiters are woken (messages
// sent meanwhile are lost). Channels it could not subscribe are tried again
// after a growing pause while the Hub lives.
func (h *Hub) rehome(old *conn, chans []*channel) {
	select {
	case h.sendMu <- struct{}{}:
	case <-h.done:
		return
	}
	defer h.unlockSend()
	if old != nil {
		h.dropConn(old)
	}
	k, err := h.kinds(context.Background())
	var failed []*channel
	for _, ch := range chans {
		if !h.claimRehome(ch, old) {
			continue // unsubscribed meanwhile, or already moved
		}
		if err == nil {
			err = h.subscribeNow(ch, k)
		}
		if err != nil {
			failed = append(failed, ch)
		}
	}
	if len(failed) > 0 {
		h.log.Debug("goredisson: could not subscribe again, retrying", "channels", len(failed), "err", err)
		h.retryLater(failed)
	}
	h.dropIdleConns()
}

// claimRehome marks ch as being subscribed again, unless it was
// unsubscribed meanwhile or already moved off old to a live connection.
func (h *Hub) claimRehome(ch *channel, old *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || !ch.want || h.chans[ch.name] != ch || (ch.conn != nil && ch.conn != old && !ch.conn.dead) {
		return false
	}
	ch.rehomed = true
	return true
}
