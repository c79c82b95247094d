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
	"slices"
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

// defaultLinger is how long a channel stays subscribed after its last waiter
// has left, unless withLinger says otherwise.
const defaultLinger = time.Second

// Option configures a Hub.
type Option func(*Hub)

// WakeAll is what a Wake function returns for a message that wakes every
// waiter of its channel.
const WakeAll = -1

// WakeShared is what a Wake function returns for a message that wakes every
// shared Sub of its channel (see Sub.Share) and, of the others, one: the
// one blocked longest, as a message that wakes one would.
const WakeShared = -2

// WakePerClass is what a Wake function returns for a message that wakes,
// of each class of Subs on its channel (see Role.Class; the Subs without
// a class are one), the one blocked longest; a class none of whose Subs is
// blocked gets its wake all the same, found by one of them at its next
// Wait (as a wake-one message keeps a permit). The Subs of a class wait for
// the same thing: when the one woken cannot have it, none of them can,
// so one wake per class loses none, where one per channel could wake a
// waiter for something else.
const WakePerClass = -3

// WithWake sets the function that decides how many waiters of a channel a
// message wakes: WakeAll, WakeShared, WakePerClass, 0, or up to n.
// Default: one.
func WithWake(f func(channel, payload string) int) Option {
	return func(h *Hub) { h.wake = f }
}

// withLinger sets how long a channel stays subscribed after its last waiter
// left. A busy lock is then not re-subscribed for every wait. Zero
// unsubscribes at once.
func withLinger(d time.Duration) Option {
	return func(h *Hub) {
		if d >= 0 {
			h.linger = d
		}
	}
}

// WithLogger sets the logger for subscription trouble. Default: slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(h *Hub) {
		if l != nil {
			h.log = l
		}
	}
}

// WithShardedFunc has the Hub ask f, before each subscription command,
// whether to use sharded pub/sub: for a choice made on first use (Redisson's
// shardedSubscriptionMode AUTO asks the cluster). An error from f fails the
// command as a connection error would.
func WithShardedFunc(f func(ctx context.Context) (bool, error)) Option {
	return WithKindsFunc(func(ctx context.Context) (Kinds, error) {
		sharded, err := f(ctx)
		if sharded {
			return Sharded, err
		}
		return Classic, err
	})
}

// Kinds is the pub/sub a channel is subscribed with: classic (SUBSCRIBE),
// sharded (SSUBSCRIBE), or both.
type Kinds uint8

// The kinds of pub/sub.
const (
	// Classic is SUBSCRIBE: messages sent with PUBLISH.
	Classic Kinds = 1 << iota
	// Sharded is SSUBSCRIBE: messages sent with SPUBLISH.
	Sharded
	// Both subscribes every channel with SUBSCRIBE and SSUBSCRIBE, on one
	// connection to the master of the channel's slot (on a Cluster), for
	// publishers of either kind. A message that publishers of both kinds
	// send twice, once per kind (in one script, so the two arrive next to
	// each other on that connection), wakes as one (see Hub.deliver).
	Both = Classic | Sharded
)

// WithKindsFunc has the Hub ask f, before each subscription command, which
// kinds of pub/sub to use (see WithShardedFunc). An answer other than
// Classic, Sharded or Both is taken for Classic.
func WithKindsFunc(f func(ctx context.Context) (Kinds, error)) Option {
	return func(h *Hub) { h.kindsFn = f }
}

// WithExclusive tells the Hub which messages announce something only one
// waiter can take (a lock freed): the twin of such a message (see Both)
// is dropped once the waiter its first copy woke has acted on it, even
// when that waiter took the lock and left. Other twins are dropped only
// while every waiter of the channel still holds its wake.
func WithExclusive(f func(channel, payload string) bool) Option {
	return func(h *Hub) { h.exclusive = f }
}

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

// Subscribe is SubscribeAs with the zero Role: no class, not shared.
func (h *Hub) Subscribe(ctx context.Context, name string) (*Sub, error) {
	return h.SubscribeAs(ctx, name, Role{})
}

// SubscribeAs takes a reference to the channel for a Sub with role r and
// returns once Redis has confirmed the subscription, ctx is done (the
// reference is dropped and ctx's error returned) or the Hub is closed.
func (h *Hub) SubscribeAs(ctx context.Context, name string, r Role) (*Sub, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, ring := h.rdb.(*redis.Ring); ring {
		return nil, errUnsupported
	}
	// A SUBSCRIBE in progress (the first one dials and says HELLO) may be
	// stuck on an unresponsive server: wait for it only as long as ctx and
	// the Hub last.
	select {
	case h.sendMu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.done:
		return nil, ErrClosed
	}
	ch, s, ready, send, err := h.join(name, r)
	if err != nil {
		return nil, err
	}
	if !send {
		h.unlockSend()
	} else if err := h.sendFirst(ctx, ch, s); err != nil {
		return nil, err
	}
	return h.awaitReady(ctx, ch, s, ready)
}

// join adds a Sub with role r to the channel name, called with sendMu held
// (released here on error). ready is closed once Redis confirms the
// channel; send reports that the channel needs its SUBSCRIBE.
func (h *Hub) join(name string, r Role) (ch *channel, s *Sub, ready chan struct{}, send bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		h.unlockSend()
		return nil, nil, nil, false, ErrClosed
	}
	ch = h.chans[name]
	if ch == nil {
		ch = &channel{name: name, ready: make(chan struct{})}
		h.chans[name] = ch
	}
	s = h.addSub(ch, r)
	send = !ch.want
	if send {
		ch.want = true
		ch.pending++
		if isClosed(ch.ready) {
			ch.ready = make(chan struct{})
		}
	}
	return ch, s, ch.ready, send, nil
}

// sendFirst sends the channel's SUBSCRIBE and releases sendMu. The send
// runs on its own so that this caller can leave when ctx ends or the Hub
// closes while it is stuck; it finishes (and releases sendMu) when the
// server or go-redis's timeouts end it.
func (h *Hub) sendFirst(ctx context.Context, ch *channel, s *Sub) error {
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		defer h.unlockSend()
		if err := h.subscribeFirst(ch); err != nil {
			// Tried again in the background; the confirmation makes the
			// channel ready.
			h.log.Warn("goredisson: subscribe failed, retrying", "channel", ch.name, "err", err)
		}
	}()
	select {
	case <-sent:
		return nil
	case <-ctx.Done():
		go s.Close() // may need sendMu, which the stuck send holds
		return ctx.Err()
	case <-h.done:
		s.Close()
		return ErrClosed
	}
}

// awaitReady waits for Redis to confirm the channel's subscription, at
// most readyTimeout: a confirmation lost with a connection must not hold
// the waiter, whose wait is bounded by the lock's TTL anyway.
func (h *Hub) awaitReady(ctx context.Context, ch *channel, s *Sub, ready chan struct{}) (*Sub, error) {
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-ready:
		return s, nil
	case <-t.C:
		h.mu.Lock()
		if ch.want && !isClosed(ch.ready) {
			// A confirmation was lost with a connection; go on without it.
			ch.pending = 0
			ch.markReady()
		}
		h.mu.Unlock()
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	case <-h.done:
		s.Close()
		return nil, ErrClosed
	}
}

// SubscribeIfReady is SubscribeIfReadyAs with the zero Role.
func (h *Hub) SubscribeIfReady(name string) *Sub {
	return h.SubscribeIfReadyAs(name, Role{})
}

// SubscribeIfReadyAs takes a reference to the channel for a Sub with role r
// only when the channel is already subscribed and confirmed, without any
// Redis command, and returns nil otherwise (or when the Hub is closed). A
// waiter that holds such a Sub before it tries its lock cannot miss the
// unlock that follows, so it may wait right after one failed attempt.
func (h *Hub) SubscribeIfReadyAs(name string, r Role) *Sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.chans[name]
	if !h.ready(ch) {
		return nil
	}
	return h.addSub(ch, r)
}

// Ready reports whether the channel is subscribed and confirmed now: whether
// SubscribeIfReadyAs would join it (unless the Hub closes or the channel is
// dropped in between). A waiter whose role costs something to find out
// asks first.
func (h *Hub) Ready(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ready(h.chans[name])
}

// ready reports whether ch (nil: none) is subscribed and confirmed, in a
// Hub not closed. Called with mu held.
func (h *Hub) ready(ch *channel) bool {
	return !h.closed && ch != nil && ch.want && isClosed(ch.ready)
}

// addSub takes a new reference to ch for a Sub with role r, cancelling a
// pending idle unsubscribe. Called with mu held.
func (h *Hub) addSub(ch *channel, r Role) *Sub {
	if ch.idle != nil {
		ch.idle.Stop()
		ch.idle = nil
	}
	s := &Sub{hub: h, ch: ch, wake: make(chan struct{}, 1), next: ch.subs, idx: -1, class: r.Class, shared: r.Shared}
	if ch.subs != nil {
		ch.subs.prev = s
	}
	ch.subs = s
	ch.refs++
	return s
}

// unlink takes the closed s out of ch's live Subs.
func (ch *channel) unlink(s *Sub) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		ch.subs = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	}
	s.prev, s.next = nil, nil
	ch.refs--
}

// closedReady stands for a confirmed channel's ready, so that the channel
// does not keep a closed channel of its own (memory per waiter).
var closedReady = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// markReady closes ch.ready (open), waking those waiting on it, and puts
// the shared closedReady in its place. Called with mu held.
func (ch *channel) markReady() {
	close(ch.ready)
	ch.ready = closedReady
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// subscribeFirst writes the first SUBSCRIBE of a channel (after its last
// waiters left, or ever); if it cannot, the channel is subscribed again in
// the background. Called with sendMu held.
func (h *Hub) subscribeFirst(ch *channel) error {
	k, err := h.kinds(context.Background())
	if err == nil {
		err = h.subscribeNow(ch, k)
	}
	if err != nil {
		h.retryLater([]*channel{ch})
	}
	return err
}

// confirmed handles a subscription confirmation from Redis on c.
func (h *Hub) confirmed(c *conn, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.chans[name]
	if ch == nil || ch.conn != c {
		return // a connection the channel has left
	}
	h.failures = 0
	ch.refused = false
	if ch.pending > 0 {
		ch.pending--
		if ch.pending == 0 && ch.want && !isClosed(ch.ready) {
			ch.markReady()
		}
		if ch.pending == 0 && ch.rehomed {
			ch.rehomed = false
			h.log.Debug("goredisson: channel subscribed again, waking its waiters", "channel", name)
			ch.expect = 0
			ch.wakeAll()
		}
		return
	}
	// A confirmation nobody asked for: go-redis re-subscribed after a
	// reconnect of its own. Messages sent meanwhile are lost, so the
	// channel's waiters retry now rather than sleeping until their TTL
	// runs out.
	ch.expect = 0
	ch.wakeAll()
}

// deliver wakes waiters of the channel according to the message, which
// came on c (nil: Notify). On a connection with both kinds of pub/sub, a
// message for a channel that has left c is not delivered, and a twin is
// dropped (see twin).
func (h *Hub) deliver(c *conn, name, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.chans[name]
	if ch == nil {
		return
	}
	n := h.wake(name, payload)
	if c != nil && c.both {
		if ch.conn != c {
			return // its classic half, not unsubscribed yet (dropClassic)
		}
		if h.twin(c, ch, payload, n) {
			c.prev = twinRecord{}
			return
		}
	}
	if ch.expect > 0 {
		ch.expect--
	}
	var woke *Sub
	switch n {
	case WakeAll:
		ch.wakeAll()
	case WakeShared:
		woke = ch.wakeShared()
	case WakePerClass:
		ch.wakePerClass()
	default:
		woke = ch.wakeN(max(n, 0))
	}
	if c != nil && c.both {
		c.prev = twinRecord{ch: ch, payload: payload, sub: woke, permits: ch.permits, at: time.Now()}
	}
}

// twinRecord is the last message a connection with both kinds of pub/sub
// delivered: its channel and payload, the Sub it woke that is not shared
// (nil: none blocked; permits is then the channel's permits after it),
// and when.
type twinRecord struct {
	ch      *channel
	payload string
	sub     *Sub
	permits int32
	at      time.Time
}

// twinWindow bounds how long after the first copy of a message its twin
// may be dropped for a waiter that has taken the lock (see twin). The two
// copies come in one write of the server, so the second is read at once
// unless the reader is descheduled (for hundreds of ms on a loaded host);
// a second unlock within it would need the waiter to have lost the lock
// (a lease shorter than it run out) and another owner to have taken and
// released it, with no other message on the connection in between.
const twinWindow = time.Second

// twin reports whether a message that wakes n of ch, just read from c (a
// connection with both kinds of pub/sub), is to be dropped as the twin of
// the message read just before it, c.prev.
//
// A publisher of both kinds (a goredisson Client for a fleet of mixed
// Redisson releases) sends every message twice, PUBLISH then SPUBLISH, in
// one script: on c the two copies come next to each other, and one unlock
// must wake as one unlock. But two identical messages next to each other
// may also be two unlocks (a Redisson client of each kind, say), and a
// wake dropped then is lost. So a message identical to the one before it
// is dropped only when no waiter can miss what it announces:
//
//   - when every live Sub of the channel still holds an untaken wake: each
//     will try after both messages were published;
//   - for a message that frees something only one waiter can take (the
//     exclusive part, WithExclusive: a lock's unlock; a read-write lock's
//     writer), when the waiter the first copy woke still holds it untaken
//     (it tries after both), or is sent it again (it has taken it: its
//     attempt may have run before a second unlock, so if it fails it tries
//     again, and if it succeeds, Took drops the copy), or has taken the
//     lock and left within twinWindow (a second unlock would have needed
//     it to lose the lock meanwhile); or, when the first copy woke nobody
//     and left a permit, while that permit is there. Shared waiters (a
//     read-write lock's readers) must all still hold their wakes.
//
// Otherwise the message is delivered: a twin then costs a wake-up too
// many (one attempt that fails), never a lost one.
func (h *Hub) twin(c *conn, ch *channel, payload string, n int) bool {
	p := c.prev
	if p.ch != ch || p.payload != payload {
		return false
	}
	exclusive := n == WakeShared || (n == 1 && h.exclusive != nil && h.exclusive(ch.name, payload))
	if !exclusive {
		return ch.allHold(false)
	}
	if n == WakeShared && !ch.allHold(true) {
		return false
	}
	s := p.sub
	switch {
	case s == nil && (ch.refs == 0 || (n == WakeShared && ch.allShared())):
		return true // nobody for the exclusive part to wake
	case s == nil:
		return p.permits > 0 && ch.permits >= p.permits
	case s.pending && !s.closed:
		return true
	case s.took:
		return time.Since(p.at) < twinWindow
	case s.closed:
		return false
	}
	ch.dequeue(s) // blocked again, if its attempt failed
	s.signal()
	s.twin = true
	return true
}

// allHold reports whether every live Sub of ch (only the shared ones,
// with shared) holds a wake it has not taken.
func (ch *channel) allHold(shared bool) bool {
	for s := ch.subs; s != nil; s = s.next {
		if (!shared || s.shared) && !s.pending {
			return false
		}
	}
	return true
}

// allShared reports whether every live Sub of ch is shared.
func (ch *channel) allShared() bool {
	for s := ch.subs; s != nil; s = s.next {
		if !s.shared {
			return false
		}
	}
	return true
}

// Notify wakes the channel's waiters of this Hub as a message with the
// given payload would, without anything sent to Redis: for news the client
// learns itself that Redis does not publish.
func (h *Hub) Notify(name, payload string) { h.deliver(nil, name, payload) }

// wakeAll marks every Sub of the channel woken, blocked in Wait or not.
func (ch *channel) wakeAll() {
	for s := ch.subs; s != nil; s = s.next {
		s.signal()
	}
	ch.queue = ch.queue[:0]
}

// wakeShared marks every shared Sub of the channel woken, blocked in Wait
// or not, and wakes the longest-blocked other Sub (or, if there are others
// but none is blocked, keeps a permit, as wakeN does): a message that every
// shared waiter may act on, but only one of the others. It returns that
// other Sub, if it woke one.
func (ch *channel) wakeShared() *Sub {
	others := false
	for s := ch.subs; s != nil; s = s.next {
		if s.shared {
			s.signal()
		} else {
			others = true
		}
	}
	if !others {
		ch.queue = ch.queue[:0] // every Sub was shared, and is woken
		return nil
	}
	rest := ch.queue[:0]
	for _, s := range ch.queue {
		if !s.shared {
			rest = append(rest, s)
		}
	}
	clear(ch.queue[len(rest):])
	ch.queue = rest
	return ch.wakeN(1)
}

// wakePerClass wakes the longest-blocked Sub of each class of the
// channel's Subs; a class with none blocked has one of its Subs marked
// woken (one without a wake on its way: a Sub that has one tries again
// anyway), so that its next Wait returns at once.
func (ch *channel) wakePerClass() {
	var served []string // the classes woken: few (a class per value set)
	rest := ch.queue[:0]
	for _, s := range ch.queue {
		if slices.Contains(served, s.class) {
			rest = append(rest, s)
			continue
		}
		served = append(served, s.class)
		s.signal()
	}
	clear(ch.queue[len(rest):])
	ch.queue = rest
	for s := ch.subs; s != nil; s = s.next {
		if !s.pending && !slices.Contains(served, s.class) {
			served = append(served, s.class)
			s.signal()
		}
	}
}

// handOnClass hands a wake on to the longest-blocked Sub of class, or, if
// none is blocked, to one of its Subs without a wake on its way (nothing
// when every one has one: they try again anyway).
func (ch *channel) handOnClass(class string) {
	for i, s := range ch.queue {
		if s.class == class {
			ch.queue = append(ch.queue[:i], ch.queue[i+1:]...)
			s.signal()
			return
		}
	}
	for s := ch.subs; s != nil; s = s.next {
		if s.class == class && !s.pending {
			s.signal()
			return
		}
	}
}

// classed reports whether any Sub of the channel has a class.
func (ch *channel) classed() bool {
	for s := ch.subs; s != nil; s = s.next {
		if s.class != "" {
			return true
		}
	}
	return false
}

// wakeN wakes the n longest-blocked Subs; wakes that find nobody blocked
// are kept as permits for the next Waits, at most one per Sub. It returns
// the last Sub it woke (nil: none).
func (ch *channel) wakeN(n int) *Sub {
	var last *Sub
	for ; n > 0 && len(ch.queue) > 0; n-- {
		last = ch.queue[0]
		ch.queue = ch.queue[1:]
		last.signal()
	}
	refs := int(ch.refs)
	ch.permits = int32(min(int(ch.permits)+min(n, refs), refs))
	return last
}

func (s *Sub) signal() {
	s.twin = false
	s.woken, s.pending = true, true
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// ring ends the blocked Wait of s without a wake (an alarm: its timeout
// passed or the Hub closed) and takes it out of Hub.blocked. Under Hub.mu.
func (h *Hub) ring(s *Sub) {
	h.unqueue(s)
	select {
	case s.wake <- struct{}{}:
	default: // a wake or an alarm is there already
	}
}

// noDeadline is Sub.at of an untimed Wait.
const noDeadline = int64(^uint64(0) >> 1)

// block puts s, whose Wait is about to block for timeout (negative: no
// timeout), in Hub.blocked, and arms the Hub's timer if its deadline comes
// first. Under Hub.mu.
func (h *Hub) block(s *Sub, timeout time.Duration) {
	s.at = noDeadline
	if timeout >= 0 {
		now := time.Since(h.epoch)
		// Saturated: now+timeout must not wrap round (a Wait of
		// math.MaxInt64 blocks until woken).
		s.at = int64(now + min(timeout, time.Duration(noDeadline-1)-now))
	}
	s.idx = int32(len(h.blocked))
	h.blocked = append(h.blocked, s)
	h.up(int(s.idx))
	if s.at != noDeadline && (h.armed == 0 || s.at < h.armed) {
		h.arm(s.at)
	}
}

// arm sets the Hub's timer for deadline at. Under Hub.mu.
func (h *Hub) arm(at int64) {
	d := time.Duration(at) - time.Since(h.epoch)
	h.armed = max(at, 1)
	if h.clock == nil {
		h.clock = time.AfterFunc(d, h.tick)
	} else {
		h.clock.Reset(d)
	}
}

// tick rings the Waits whose deadline has passed, then arms the timer for
// the next one. A tick that finds none due (its Wait ended) only re-arms.
func (h *Hub) tick() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = 0
	if h.closed {
		return
	}
	now := int64(time.Since(h.epoch))
	for len(h.blocked) > 0 && h.blocked[0].at <= now {
		h.ring(h.blocked[0])
	}
	if len(h.blocked) > 0 && h.blocked[0].at != noDeadline {
		h.arm(h.blocked[0].at)
	}
}

// unqueue takes s out of Hub.blocked, if there. Under Hub.mu.
func (h *Hub) unqueue(s *Sub) {
	i := int(s.idx)
	if i < 0 {
		return
	}
	last := len(h.blocked) - 1
	if i != last {
		h.swap(i, last)
	}
	h.blocked[last] = nil
	h.blocked = h.blocked[:last]
	s.idx = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
	if len(h.blocked) == 0 && cap(h.blocked) > 64 {
		h.blocked = nil // let a crowd's array go
	}
}

func (h *Hub) swap(i, j int) {
	b := h.blocked
	b[i], b[j] = b[j], b[i]
	b[i].idx, b[j].idx = int32(i), int32(j)
}

func (h *Hub) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.blocked[p].at <= h.blocked[i].at {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *Hub) down(i int) {
	b := h.blocked
	for {
		l := 2*i + 1
		if l >= len(b) {
			return
		}
		m := l
		if r := l + 1; r < len(b) && b[r].at < b[l].at {
			m = r
		}
		if b[i].at <= b[m].at {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// takeToken reports whether the token just taken from the wake channel is
// a wake (not an alarm), and records it as held. Under Hub.mu.
func (s *Sub) takeToken() bool {
	if !s.pending {
		return false
	}
	s.pending, s.woken = false, true
	return true
}

// dequeue removes s from the blocked queue.
func (ch *channel) dequeue(s *Sub) {
	for i, q := range ch.queue {
		if q == s {
			ch.queue = append(ch.queue[:i], ch.queue[i+1:]...)
			return
		}
	}
}

// Wait blocks until the Sub is woken (true), timeout passes (false; a
// negative timeout never passes), ctx is done (ctx's error) or the Hub is
// closed (ErrClosed). A wake that arrived since the last Wait returns at once.
//
// A wake returned by Wait is held by the Sub until Used is called; if the
// Sub is closed before that, the wake is handed on (see Close). A wake that
// arrives while ctx is already done is not taken: it stays for Close to hand
// on.
func (s *Sub) Wait(ctx context.Context, timeout time.Duration) (bool, error) {
	// The steps are small functions so that a parked waiter's stack stays
	// shallow (the runtime then shrinks it: see docs/benchmarks.md).
	timeout, err := s.enqueue(ctx, timeout)
	switch {
	case err == errWoken:
		return true, nil
	case err != nil:
		return false, err
	}
	// The timeout and Close ring the wake channel (Hub.ring): two
	// channels, not four (a timer's and the Hub's done), per parked Wait.
	select {
	case <-s.wake: // a wake, or an alarm: unblock tells
	case <-ctx.Done():
		err = ctx.Err()
	}
	return s.unblock(err)
}

// errWoken is enqueue's answer for a Sub that has a wake already.
var errWoken = errors.New("pubsub: woken")

// enqueue queues the Sub among the channel's blocked waiters and returns
// the timeout to block for, or errWoken (a wake or permit taken), ctx's
// error or ErrClosed.
func (s *Sub) enqueue(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	select {
	case <-s.wake:
		if s.takeToken() {
			return 0, errWoken
		}
		// a late alarm of an earlier Wait: drop it
	default:
	}
	if s.ch.permits > 0 {
		s.ch.permits--
		s.woken = true
		return 0, errWoken
	}
	if h.closed {
		return 0, ErrClosed
	}
	s.ch.queue = append(s.ch.queue, s)
	if s.ch.refused && (timeout < 0 || timeout > refusedPoll) {
		timeout = refusedPoll
	}
	s.waiting = true
	h.block(s, timeout)
	return timeout, nil
}

// unblock ends a Wait that blocked and returns its result: woken, or err
// (ctx's; nil: an alarm, the timeout or the Hub's Close). A Sub that was
// not woken leaves its channel's blocked waiters.
func (s *Sub) unblock(err error) (bool, error) {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unqueue(s) // the Hub's timer rings it no more
	s.waiting = false
	if err == nil {
		if s.takeToken() {
			return true, nil
		}
		if h.closed {
			err = ErrClosed
		}
	}
	s.ch.dequeue(s)
	return false, err
}

// QueueBehind reports whether another waiter of this Hub on the Sub's
// channel will make an attempt before the Sub's waiter could: one that has
// tried before, or will try before it waits, or was sent a wake; or any other
// waiter while a message this client announced (Expect) is on its way. A
// new waiter that finds one may queue behind it instead of racing it (Wait
// wakes the Sub blocked longest). If so, the Sub counts as a newcomer until
// its waiter calls Tried, and does not itself let others queue behind it:
// so two waiters that arrive together at a free lock never both wait for
// the other to try. A Sub with a class (Role.Class) queues behind Subs of
// its class only: the others wait for something else.
func (s *Sub) QueueBehind() bool {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.closed {
		return false
	}
	for o := s.ch.subs; o != nil; o = o.next {
		if o != s && o.class == s.class && (!o.newcomer || o.woken || s.ch.expect > 0) {
			s.newcomer = true
			return true
		}
	}
	return false
}

// Expect announces that this client is about to publish a message on the
// channel (its own unlock), so that until a message arrives a new waiter
// queues behind the waiter it will wake (see QueueBehind). Call Unexpect if
// nothing was published after all. It does nothing for a channel that is
// not subscribed and confirmed. A message that never comes (a connection
// lost meanwhile) costs new waiters at most their queue bound, never a wake.
func (h *Hub) Expect(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.chans[name]; ch != nil && ch.want && isClosed(ch.ready) {
		ch.expect++
	}
}

// Unexpect withdraws an Expect whose message was not published.
func (h *Hub) Unexpect(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.chans[name]; ch != nil && ch.expect > 0 {
		ch.expect--
	}
}

// Tried reports that the Sub's waiter made an attempt: it no longer counts
// as a newcomer (see QueueBehind).
func (s *Sub) Tried() {
	h := s.hub
	h.mu.Lock()
	s.newcomer = false
	h.mu.Unlock()
}

// Took reports that the Sub's waiter got what it waited for (its attempt
// took the lock). A wake sent to it as a twin (the same unlock heard on the
// other kind of pub/sub, see Hub.twin) is then dropped, not handed on by
// Close: the unlock it announced is the one the waiter took.
func (s *Sub) Took() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	s.took = true
	if s.twin && s.pending && !s.waiting {
		select {
		case <-s.wake:
		default:
		}
		s.pending, s.woken, s.twin = false, false, false
	}
}

// Used reports that the wake returned by the last Wait was acted on: the
// attempt it prompted reached Redis. Close no longer hands it on.
func (s *Sub) Used() {
	h := s.hub
	h.mu.Lock()
	s.woken = false
	h.mu.Unlock()
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
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
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
	h.mu.Unlock()

	// Connections are created under sendMu; a sender stuck on a hung
	// server must not hold Close up, so take them without it when busy.
	var conns []*conn
	select {
	case h.sendMu <- struct{}{}:
		h.mu.Lock()
		for _, c := range h.conns {
			conns = append(conns, c)
		}
		h.mu.Unlock()
		h.closedConns = true
		if h.watch != nil {
			h.watch.hub.Store(nil)
		}
		h.unlockSend()
	default:
		go func() {
			h.sendMu <- struct{}{}
			defer h.unlockSend()
			h.closedConns = true
			if h.watch != nil {
				h.watch.hub.Store(nil)
			}
			h.mu.Lock()
			var late []*conn
			for _, c := range h.conns {
				late = append(late, c)
			}
			h.mu.Unlock()
			for _, c := range late {
				_ = c.ps.Close()
			}
		}()
	}
	var errs []error
	timeout := time.NewTimer(closeWait)
	defer timeout.Stop()
	for _, c := range conns {
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
