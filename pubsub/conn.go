package pubsub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/cluster"
)

// The Hub's subscription connections.
//
// Classic pub/sub uses one connection for the whole Hub. Sharded pub/sub
// on a Redis Cluster needs the master that serves a channel's slot, so the
// Hub keeps one connection per master it has channels on (never more than
// the cluster has masters), each carrying the channels of every slot that
// master serves. A connection whose last channel is unsubscribed is closed:
// once its waiters have left (and the linger has passed), the Hub holds no
// connection and no goroutine.
//
// Each connection is a go-redis PubSub read by a goroutine of the Hub's
// own (rather than go-redis's Channel, which swallows error replies and,
// for sharded channels of several slots, re-subscribes them after a
// reconnect in one SSUBSCRIBE that Redis refuses as CROSSSLOT). The reader
// learns of trouble and the Hub moves the channels:
//   - the connection fails (read error, or no PONG within a health
//     interval): the connection is closed and its channels are subscribed
//     again, where they belong now;
//   - the server unsubscribes a channel itself (Redis does so to sharded
//     subscribers of a slot that migrated away): it is subscribed again on
//     the slot's new owner;
//   - an SSUBSCRIBE answered MOVED: sent again where the reply says;
//   - on Sentinel, the primary changed (a data connection of the go-redis
//     client was dialled to another server than the subscription's;
//     go-redis moves its command pools after a failover, never a
//     subscription): the connection is closed and made again to the new
//     primary.
// Messages published in the meantime are lost, so once a moved channel is
// confirmed again, every waiter on it is woken to try again.

// healthInterval is how long a subscription connection may stay silent
// before the reader sends PING; a connection that stays silent for another
// interval is taken for dead.
const healthInterval = 3 * time.Second

// conn is one subscription connection and its reader.
type conn struct {
	key  string // "" for the Hub's one connection, else a master's address
	ps   *redis.PubSub
	loop chan struct{} // closed when the reader has returned
	// n counts the channels whose last SUBSCRIBE went here (channel.conn);
	// dead is set once the Hub gave the connection up. Under Hub.mu.
	n    int
	dead bool
	// remote is the address the connection was dialled to, when the Hub
	// watches for Sentinel failovers.
	remote atomic.Pointer[string]
	// slots is the node's last CLUSTER SLOTS answer and when it came
	// (see askOwner); only c's reader uses them.
	slots   []redis.ClusterSlot
	slotsAt time.Time
	// roleAt is when the reader last asked c's node its ROLE (see
	// checkRole); only c's reader uses it.
	roleAt time.Time
	// both is set when c carries its channels with both kinds of pub/sub,
	// and prev is the last message delivered from c and what it woke (for
	// twins, see Hub.deliver). Under Hub.mu.
	both bool
	prev twinRecord
}

// connKey marks the contexts of a connection's own commands, so that a
// dial hook can tell its dials from those of data connections.
type connKey struct{}

func (c *conn) ctx() context.Context {
	return context.WithValue(context.Background(), connKey{}, c)
}

// kinds reports which kinds of pub/sub the Hub uses, deciding it
// (WithKindsFunc) on first use.
func (h *Hub) kinds(ctx context.Context) (Kinds, error) {
	if h.kindsFn == nil {
		if h.sharded {
			return Sharded, nil
		}
		return Classic, nil
	}
	k, err := h.kindsFn(ctx)
	if k != Sharded && k != Both {
		k = Classic
	}
	return k, err
}

// placement returns where a channel is subscribed: the key of its
// connection and the go-redis client that makes it. A channel with a
// sharded subscription (Sharded or Both) goes to its slot's master.
func (h *Hub) placement(ctx context.Context, name string, k Kinds) (string, redis.UniversalClient, error) {
	if k&Sharded == 0 || h.nodes == nil {
		return "", h.rdb, nil
	}
	rdb, addr, err := h.nodes.Master(ctx, name)
	if err != nil {
		return "", nil, err
	}
	return addr, rdb, nil
}

// connFor returns the connection for key, made (and its reader started)
// if there is none. Called with sendMu held.
func (h *Hub) connFor(key string, rdb redis.UniversalClient) (*conn, error) {
	h.mu.Lock()
	c := h.conns[key]
	live := c != nil && !c.dead // dead is written under mu by a failing reader
	h.mu.Unlock()
	if live {
		return c, nil
	}
	if h.closedConns {
		return nil, ErrClosed
	}
	c = &conn{key: key, loop: make(chan struct{})}
	// On Sentinel the hook must be in place before the connection dials,
	// to learn where it went.
	sentinel := h.watchDials(rdb)
	// No channel yet: the PubSub dials on its first command, to its
	// client's server (a node client on a Cluster).
	c.ps = rdb.Subscribe(c.ctx())
	h.mu.Lock()
	h.conns[key] = c
	h.mu.Unlock()
	go h.read(c)
	if sentinel {
		go h.probe(c, rdb)
	}
	return c, nil
}

// subscribeOn writes SUBSCRIBE or SSUBSCRIBE, or both (in that order), for
// name on c.
func (h *Hub) subscribeOn(c *conn, name string, k Kinds) error {
	wctx, cancel := context.WithTimeout(c.ctx(), writeTimeout)
	defer cancel()
	if k&Classic != 0 {
		if err := c.ps.Subscribe(wctx, name); err != nil {
			return err
		}
	}
	if k&Sharded != 0 {
		return c.ps.SSubscribe(wctx, name)
	}
	return nil
}

// commands is how many commands (and confirmations) one (un)subscription
// of a channel takes with k.
func commands(k Kinds) int32 {
	if k == Both {
		return 2
	}
	return 1
}

// writeTimeout bounds the write of a (un)subscribe command, which may come
// after the waiter's ctx has ended.
const writeTimeout = 5 * time.Second

// read is a connection's reader: it delivers messages and confirmations
// until the connection is closed or fails.
func (h *Hub) read(c *conn) {
	defer close(c.loop)
	ctx := c.ctx()
	silent := false
	for {
		m, err := c.ps.ReceiveTimeout(ctx, healthInterval)
		if err != nil {
			if h.gone(c) {
				return
			}
			var re redis.Error
			switch {
			case isTimeout(err) && !silent:
				silent = true
				_ = c.ps.Ping(ctx)
				continue
			case errors.As(err, &re) && !isTimeout(err):
				h.errorReply(c, re.Error())
				continue
			}
			if isTimeout(err) {
				err = fmt.Errorf("no reply to PING within %v", healthInterval)
			}
			h.lost(c, err)
			return
		}
		silent = false
		confirmed := false
		switch m := m.(type) {
		case *redis.Message:
			h.deliver(c, m.Channel, m.Payload)
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				h.confirmed(c, m.Channel)
				confirmed = true
			case "unsubscribe", "sunsubscribe":
				h.unsubscribed(c, m.Channel, m.Kind == "sunsubscribe")
			}
		}
		if h.roleDue(c, confirmed) && !h.checkRole(c) {
			return
		}
	}
}

// How often a sharded connection's reader asks its node's ROLE: soon after
// a confirmation (a channel just placed), else at least this often while
// the connection reads (and after each silent healthInterval).
const (
	roleAfterConfirm = 100 * time.Millisecond
	roleEvery        = time.Second
	roleTimeout      = time.Second
)

// roleDue reports whether c's reader should ask c's node its ROLE now: only
// a sharded connection on a Cluster (the one connection of classic pub/sub
// hears every node's messages).
func (h *Hub) roleDue(c *conn, confirmed bool) bool {
	if h.nodes == nil || c.key == "" {
		return false
	}
	since := time.Since(c.roleAt)
	return since >= roleEvery || (confirmed && since >= roleAfterConfirm)
}

// checkRole makes sure c's node is a master. A replica serves its master's
// shard channels, but hears a message published on the master only once
// the master knows it as its replica: after a CLUSTER FAILOVER, the old
// master, now a replica, may be given a subscription by a slot map that
// has not heard of the failover (or keep one it did not drop), and an
// unlock published meanwhile on the new master is lost. The channels on a
// replica's connection are moved to the master of their slots as the
// replica names it (learnOwner: its CLUSTER SLOTS, whose endpoints are the
// ones go-redis uses, where ROLE gives the replication address, which
// behind NAT or with host-name endpoints go-redis does not know); c is given
// up, as when it fails, and the channels' waiters are woken once subscribed
// again. It reports false when c was given up: the reader then returns.
// Called by c's reader.
func (h *Hub) checkRole(c *conn) bool {
	c.roleAt = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), roleTimeout)
	defer cancel()
	rdb, err := h.nodes.Node(ctx, c.key)
	if err != nil {
		return true
	}
	role, err := rdb.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 || role[0] == "master" {
		return true // a failed ROLE is no news: the reader's PING checks the connection
	}
	h.mu.Lock()
	slots := make(map[int]bool)
	for _, ch := range h.chans {
		if ch.conn == c {
			slots[Slot(ch.name)] = true
		}
	}
	h.mu.Unlock()
	c.slotsAt = time.Time{} // ask the replica afresh
	for slot := range slots {
		h.learnOwner(ctx, c, slot)
	}
	h.lost(c, fmt.Errorf("node %s is a replica (ROLE %v)", c.key, role[0]))
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// gone reports whether the reader of c should stop: the Hub closed or gave
// the connection up.
func (h *Hub) gone(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed || c.dead
}

// lost gives up a failed connection and subscribes its channels again:
// at once after a first failure, after a growing pause while failures
// follow each other (a server that stays down).
//
// It may be called more than once for c (by its reader, and by a write
// that failed on it): each call moves the channels that are on c then.
func (h *Hub) lost(c *conn, why error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	first := !c.dead
	c.dead = true
	var moved []*channel
	for _, ch := range h.chans {
		if ch.conn == c && !ch.want {
			ch.unsubs = 0 // its unsubscribe confirmations are lost with c
			h.dropIfUnused(ch)
			continue
		}
		if ch.conn == c {
			moved = append(moved, ch)
		}
	}
	if !first && len(moved) == 0 {
		h.mu.Unlock()
		return
	}
	h.failures++
	pause := h.pause()
	h.mu.Unlock()
	if first {
		_ = c.ps.Close()
	}
	h.log.Debug("goredisson: subscription connection lost, subscribing its channels again", "node", c.key, "channels", len(moved), "pause", pause, "err", why)
	h.later(pause, func() { h.rehome(c, moved) })
}

// retryLater subscribes channels again after a pause.
func (h *Hub) retryLater(chans []*channel) {
	h.mu.Lock()
	h.failures++
	pause := max(h.pause(), rehomePause)
	h.mu.Unlock()
	h.later(pause, func() { h.rehome(nil, chans) })
}

// pause is how long to wait before subscribing again after h.failures
// failures in a row. Called with mu held.
func (h *Hub) pause() time.Duration {
	if h.failures <= 1 {
		return 0
	}
	return min(rehomePause<<min(h.failures-2, 6), maxRehomePause)
}

// later runs f after pause (at once on a goroutine of its own when 0).
func (h *Hub) later(pause time.Duration, f func()) {
	if pause == 0 {
		go f()
		return
	}
	time.AfterFunc(pause, f)
}

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

// dropIdleConns closes the connections whose channels all moved away.
func (h *Hub) dropIdleConns() {
	h.mu.Lock()
	var idle []*conn
	for _, c := range h.conns {
		if c.n == 0 {
			idle = append(idle, c)
		}
	}
	h.mu.Unlock()
	for _, c := range idle {
		h.dropConn(c)
	}
}

// subscribeNow places ch and writes its SUBSCRIBE. If the write fails, the
// connection is given up (with every channel on it, ch included: they are
// subscribed again later) and the error returned. Called with sendMu held.
func (h *Hub) subscribeNow(ch *channel, k Kinds) error {
	key, rdb, err := h.placement(context.Background(), ch.name, k)
	if err != nil {
		return err
	}
	c, err := h.connFor(key, rdb)
	if err != nil {
		return err
	}
	h.mu.Lock()
	c.both = k == Both
	if ch.conn != c {
		if ch.conn != nil && ch.counted {
			ch.conn.n--
		}
		// Confirmations still due on another connection do not count.
		ch.conn, ch.counted, ch.pending, ch.unsubs = c, false, commands(k), 0
	} else if k == Both {
		ch.pending++ // a first SUBSCRIBE counted one (join)
	}
	if !ch.counted {
		c.n++
		ch.counted = true
	}
	h.mu.Unlock()
	if err := h.subscribeOn(c, ch.name, k); err != nil {
		h.lost(c, err)
		return nil // lost subscribes it again
	}
	return nil
}

// dropConn closes c and forgets it. Called with sendMu held.
func (h *Hub) dropConn(c *conn) {
	h.mu.Lock()
	c.dead = true
	if h.conns[c.key] == c {
		delete(h.conns, c.key)
	}
	h.mu.Unlock()
	_ = c.ps.Close()
}

// unsubscribeFrom writes UNSUBSCRIBE (or SUNSUBSCRIBE) for ch, or closes
// its connection when it was the connection's last channel. Called with
// sendMu held, after ch.want was cleared.
func (h *Hub) unsubscribeFrom(ch *channel) error {
	k, err := h.kinds(context.Background())
	if err != nil {
		return err
	}
	h.mu.Lock()
	c := ch.conn
	if c == nil || c.dead || !ch.counted {
		ch.conn, ch.counted, ch.pending, ch.unsubs = nil, false, 0, 0
		h.dropIfUnused(ch)
		h.mu.Unlock()
		return nil
	}
	c.n--
	ch.counted = false
	last := c.n == 0
	if last {
		ch.conn, ch.pending, ch.unsubs = nil, 0, 0
	} else {
		// The channel stays on c (and in the Hub until the confirmations
		// came): a SUBSCRIBE that follows counts the confirmations due
		// there in order (see confirmed).
		ch.unsubs += commands(k)
	}
	h.dropIfUnused(ch)
	h.mu.Unlock()
	if last {
		// Closing the connection ends every subscription on it.
		h.dropConn(c)
		return nil
	}
	wctx, cancel := context.WithTimeout(c.ctx(), writeTimeout)
	defer cancel()
	if k&Classic != 0 {
		err = c.ps.Unsubscribe(wctx, ch.name)
	}
	if k&Sharded != 0 && err == nil {
		err = c.ps.SUnsubscribe(wctx, ch.name)
	}
	if err != nil {
		h.mu.Lock()
		if ch.conn == c && !ch.want {
			ch.unsubs = 0 // no confirmation will come
			h.dropIfUnused(ch)
		}
		h.mu.Unlock()
		return fmt.Errorf("pubsub: unsubscribe %s: %w", ch.name, err)
	}
	return nil
}

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
