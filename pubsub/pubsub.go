// Package pubsub shares one Redis subscription among many lock waiters. It
// serves package rlock (one Hub per rlock.Client) and is not meant for use
// on its own.
//
// A Hub owns one subscription connection (with sharded pub/sub on a Redis
// Cluster, one per master it has channels on; see conn.go). Waiters
// Subscribe to a channel by name; the Hub counts references per channel,
// sends SUBSCRIBE for the first one and UNSUBSCRIBE after the last one has
// left (after a short idle grace, see withLinger). Subscribe returns only once
// Redis has confirmed the subscription, so a waiter that subscribes and then
// checks the lock cannot miss an unlock published in between.
//
// Each message wakes waiters of its channel only: by default one (the one
// that has waited longest), as Redisson's per-channel semaphore does; the
// Wake function (WithWake) may ask for n of them, all of them, or every
// shared Sub (Role.Shared: a read-write lock's readers) and one other, or one
// per class of Subs (Role.Class: a faster multilock's waiters on the same
// values), from the channel and the message. A Sub has its Role from the
// moment it joins its channel (SubscribeAs, SubscribeIfReadyAs). Wakes
// that find nobody blocked are kept for the next Waits (at most one per Sub
// of the channel). When a channel had to be
// subscribed again (its connection failed, its slot moved to another
// master, the Sentinel primary changed), every waiter on it is woken once
// it is confirmed again, because messages published meanwhile are lost.
//
// A wake is only a hint to try again: it never means the waiter owns anything.
// But it must not get lost: a waiter that was woken holds the wake until it
// reports (Sub.Used) that it made use of it, that is, that its next attempt
// at the lock reached Redis. A Sub closed while it holds an unused wake (its
// context ended right after the wake, say) hands the wake on to the next
// waiter of its channel (of its class, if it has one), so that one unlock
// always wakes someone who tries.
//
// redis.Ring is not supported: a Ring has no shard for a subscription
// without channels, and it moves keys between shards when one is marked
// down, which no lock can survive. Subscribe fails for one.
package pubsub

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/cluster"
)

// ErrClosed is returned by Subscribe and Wait after the Hub has been closed.
var ErrClosed = errors.New("pubsub: hub closed")

// errUnsupported is returned by Subscribe on a client type the Hub cannot
// serve (redis.Ring).
var errUnsupported = errors.New("pubsub: redis.Ring is not supported")

// Hub shares one subscription connection among waiters (with sharded
// pub/sub on a Redis Cluster: one per master in use). It is safe for
// concurrent use. The zero value is not usable: call New.
type Hub struct {
	rdb       redis.UniversalClient
	wake      func(channel, payload string) int
	linger    time.Duration
	log       *slog.Logger
	sharded   bool
	kindsFn   func(ctx context.Context) (Kinds, error)
	exclusive func(channel, payload string) bool
	nodes     *cluster.Nodes // set on a Redis Cluster
	watch     *dialWatch     // set on a Sentinel client once subscribed

	// sendMu (a one-slot semaphore, so that waiting for it can end with
	// ctx or Close) orders SUBSCRIBE and UNSUBSCRIBE commands with the
	// state changes that decided them. It is never held by a reader.
	sendMu chan struct{}
	// conns are the subscription connections by key (see conn.key),
	// created on first use; changed with sendMu and mu held.
	conns map[string]*conn
	// closedConns is set under sendMu once Close has taken the connections:
	// no new one may be made after it.
	closedConns bool

	mu     sync.Mutex
	chans  map[string]*channel
	closed bool
	// failures counts connection failures in a row (reset by a
	// confirmation): re-subscribing pauses longer the more there were.
	failures int
	done     chan struct{} // closed by Close
	// blocked holds every Sub blocked in Wait, a min-heap by Sub.at
	// (untimed Waits last): one timer for the Hub (clock, armed for the
	// earliest deadline at armed; 0: not armed) rings the Waits whose
	// timeout passed, and Close rings them all. So a parked Wait has no
	// timer of its own and waits on two channels (docs/benchmarks.md).
	blocked []*Sub
	clock   *time.Timer
	armed   int64
	epoch   time.Time // Sub.at counts from it
	// refusedOnce is set once a refused subscription was logged.
	refusedOnce atomic.Bool
}

// readyTimeout bounds how long Subscribe waits for Redis to confirm a
// subscription. Past it the waiter goes on unconfirmed: its wait is still
// bounded by the lock's TTL, so only latency can suffer, never safety.
const readyTimeout = 3 * time.Second

// channel is the Hub's state for one Redis channel. All fields are guarded
// by Hub.mu.
//
// Its fields are ordered and sized to fit 96 bytes (memory per waiter with
// a lock name each, docs/benchmarks.md).
type channel struct {
	name    string
	conn    *conn         // where the last (UN)SUBSCRIBE went
	ready   chan struct{} // closed when want and nothing is pending
	subs    *Sub          // the live Subs, linked by Sub.next (a list, not a map: memory per waiter)
	queue   []*Sub        // Subs blocked in Wait, oldest first
	idle    *time.Timer
	refs    int32 // live Subs: the list from subs
	pending int32 // SUBSCRIBE commands sent and not confirmed yet
	unsubs  int32 // UNSUBSCRIBEs sent on conn and not confirmed yet
	permits int32 // wakes that found nobody blocked, at most refs
	// expect counts messages this client announced it is about to publish
	// on the channel (see Expect) and that have not arrived yet.
	expect  int32
	want    bool // the last command sent for it was SUBSCRIBE
	counted bool // subscribed on conn: counted in conn.n
	rehomed bool // subscribed again: wake its waiters once confirmed
	// refused is set when Redis refused the channel's subscription (an ACL
	// user without it): no message will come, so Wait polls (refusedPoll).
	refused bool
}

// refusedPoll bounds a Wait on a channel whose subscription was refused:
// its waiters try again at least this often instead of sleeping out the
// lock's TTL.
const refusedPoll = time.Second

// New returns a Hub for rdb. No connection is opened until the first Subscribe.
func New(rdb redis.UniversalClient, opts ...Option) *Hub {
	h := &Hub{
		rdb:    rdb,
		wake:   func(string, string) int { return 1 },
		linger: defaultLinger,
		log:    slog.Default(),
		chans:  make(map[string]*channel),
		conns:  make(map[string]*conn),
		done:   make(chan struct{}),
		sendMu: make(chan struct{}, 1),
		epoch:  time.Now(),
	}
	for _, o := range opts {
		o(h)
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		h.nodes = cluster.New(cc)
	}
	return h
}

// Sub is one waiter's reference to a channel. Use it from one goroutine at a
// time; Close it when done.
type Sub struct {
	hub    *Hub
	ch     *channel
	wake   chan struct{}
	closed bool
	// woken is set when a wake is sent to the Sub (or Wait takes a permit),
	// until Used: a wake that it holds, or that is on its way to it, and
	// its waiter has not acted on. newcomer is set by QueueBehind until
	// Tried: the Sub's waiter has not made an attempt yet, so others do not
	// queue behind it. shared is its Role's. Under Hub.mu.
	woken, newcomer, shared bool
	// class is its Role's (see WakePerClass), set when it joins. Under
	// Hub.mu.
	class string
	// pending is set while a wake sent by signal is in the wake channel: a
	// token there without it is a blocked Wait's alarm (its timeout passed,
	// or the Hub closed: see ring), not a wake. Under Hub.mu.
	pending bool
	// waiting is set from enqueue to unblock: a Wait blocks or is about to.
	// Under Hub.mu.
	waiting bool
	// twin is set while the wake sent to the Sub is a twin's (see Hub.twin)
	// and took once its waiter reported success (Took). Under Hub.mu.
	twin, took bool
	// idx is the Sub's place in Hub.blocked (-1: not there), at its
	// blocked Wait's deadline (since Hub.epoch; noDeadline: none). Under
	// Hub.mu.
	idx int32
	at  int64
	// prev and next link the channel's live Subs (channel.subs). Under
	// Hub.mu.
	prev, next *Sub
}

// Role is how a message wakes a Sub among the others of its channel: the
// Sub's class (see WakePerClass; "": none) and whether it is shared (see
// WakeShared). A Sub has its role from the moment it joins the channel, so
// that a message delivered while its waiter is still getting ready (before
// its first attempt) finds it as it will wait: a Sub taken for one without
// a class would be woken as a class of its own, by a message meant for the
// waiters it was about to queue behind (see QueueBehind).
type Role struct {
	// Class is the Sub's class: the Subs of its channel that wait for the
	// same thing (a faster multilock's waiters on the same values). A
	// message its Wake function answers with WakePerClass wakes one Sub
	// per class, and a wake the Sub leaves unused is handed on within its
	// class.
	Class string
	// Shared marks a shared waiter (a read-write lock's reader): a message
	// its Wake function answers with WakeShared wakes it, whatever else it
	// wakes.
	Shared bool
}

// Close drops the Sub's reference. A wake it holds and did not use (see
// Used), or one that arrived and was never waited for, passes on to the next
// waiter of the channel, so that no unlock goes unanswered. Close is
// idempotent.
func (s *Sub) Close() {
	h := s.hub
	h.mu.Lock()
	if s.closed {
		h.mu.Unlock()
		return
	}
	s.closed = true
	ch := s.ch
	ch.dequeue(s)
	ch.unlink(s)
	unused := s.woken || s.pending
	if !s.waiting {
		select {
		case <-s.wake:
		default:
		}
	}
	// A token left for a Wait in progress is an alarm now: that Wait ends
	// (no wake lost, none counted twice), and no ring is missed.
	s.pending = false
	if unused && !h.closed {
		// It may have been the only wake of an unlock: hand it on (within
		// its class: a waiter for something else may not be able to use
		// it).
		if s.class != "" || ch.classed() {
			ch.handOnClass(s.class)
		} else {
			ch.wakeN(1)
		}
	}
	if ch.refs > 0 || h.closed {
		h.mu.Unlock()
		return
	}
	if h.linger > 0 {
		var t *time.Timer
		// The timer may fire before t is assigned: it reads t under mu,
		// which is held here until the assignment is done.
		t = time.AfterFunc(h.linger, func() { h.unsubscribeIdle(ch, &t) })
		ch.idle = t
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	h.unsubscribeIdle(ch, nil)
}

// unlockSend releases sendMu.
func (h *Hub) unlockSend() { <-h.sendMu }

// unsubscribeIdle sends UNSUBSCRIBE for a channel nobody has used since its
// idle timer *tp was set (tp is nil when there is no linger; *tp is read
// under mu).
func (h *Hub) unsubscribeIdle(ch *channel, tp **time.Timer) {
	select {
	case h.sendMu <- struct{}{}:
	case <-h.done:
		return
	}
	defer h.unlockSend()
	h.mu.Lock()
	var t *time.Timer
	if tp != nil {
		t = *tp
	}
	if ch.refs > 0 || !ch.want || ch.idle != t || h.closed {
		h.mu.Unlock()
		return
	}
	ch.idle = nil
	ch.want = false
	ch.permits = 0
	ch.rehomed = false
	h.mu.Unlock()
	if err := h.unsubscribeFrom(ch); err != nil {
		h.log.Warn("goredisson: unsubscribe failed", "channel", ch.name, "err", err)
	}
}

// dropIfUnused forgets a channel that is neither used nor waiting for a
// confirmation: not while its unsubscribe confirmations are due, so that a
// SUBSCRIBE of the name that follows on the same connection counts them
// (a new channel would take a late one for the server dropping it).
// Called with mu held.
func (h *Hub) dropIfUnused(ch *channel) {
	if ch.refs == 0 && !ch.want && ch.unsubs == 0 && h.chans[ch.name] == ch {
		delete(h.chans, ch.name)
	}
}

// channelCounts returns the channels the Hub currently keeps subscribed (or is
// subscribing), with their number of waiters.
func (h *Hub) channelCounts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.chans))
	for name, ch := range h.chans {
		if ch.want {
			out[name] = int(ch.refs)
		}
	}
	return out
}

// Waiters returns how many Subs of the channel are blocked in Wait now, in
// the order a wake-one message would serve them.
func (h *Hub) Waiters(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.chans[name]; ch != nil {
		return len(ch.queue)
	}
	return 0
}

// closeWait bounds how long Close waits for the dispatchers to return after
// their connections were closed.
const closeWait = 50 * time.Millisecond

// Close wakes every waiter with ErrClosed at once and closes the
// subscription connections. It never waits on Redis: a SUBSCRIBE being
// written to an unresponsive server is left to fail on its own, and Close
// waits at most closeWait for the readers to return. Later calls return
// ErrClosed.
func (h *Hub) Close() error {
	if !h.stop() {
		return ErrClosed
	}
	var errs []error
	timeout := time.NewTimer(closeWait)
	defer timeout.Stop()
	for _, c := range h.takeConns() {
		if err := c.ps.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, err)
		}
		select {
		case <-c.loop:
		case <-timeout.C:
		}
	}
	return errors.Join(errs...)
}

// stop marks the Hub closed, ends every blocked Wait (ErrClosed) and stops
// the Hub's timers; false when the Hub was closed already.
func (h *Hub) stop() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.closed = true
	close(h.done)
	// Every blocked Wait ends (ErrClosed), a Sub closed while its Wait
	// blocked too: it is still in blocked.
	for len(h.blocked) > 0 {
		h.ring(h.blocked[len(h.blocked)-1])
	}
	if h.clock != nil {
		h.clock.Stop()
	}
	for _, ch := range h.chans {
		if ch.idle != nil {
			ch.idle.Stop()
			ch.idle = nil
		}
	}
	return true
}

// takeConns returns the connections for Close to close. Connections are
// created under sendMu; a sender stuck on a hung server must not hold
// Close up, so when sendMu is busy it returns none and a goroutine closes
// them once it gets sendMu.
func (h *Hub) takeConns() []*conn {
	select {
	case h.sendMu <- struct{}{}:
		defer h.unlockSend()
		return h.detachConns()
	default:
		go func() {
			h.sendMu <- struct{}{}
			defer h.unlockSend()
			for _, c := range h.detachConns() {
				_ = c.ps.Close()
			}
		}()
		return nil
	}
}

// detachConns marks the connections closed for the senders (no new one is
// made) and returns them. Under sendMu.
func (h *Hub) detachConns() []*conn {
	h.closedConns = true
	if h.watch != nil {
		h.watch.hub.Store(nil)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var conns []*conn
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	return conns
}
