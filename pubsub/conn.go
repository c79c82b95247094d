package pubsub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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
