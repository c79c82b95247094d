package pubsub

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Joining a channel: a Sub joins with its Role, the first one of a channel
// sends SUBSCRIBE, and Subscribe returns once Redis confirmed it.

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
