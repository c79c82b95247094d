package pubsub

import (
	"slices"
	"time"
)

// The wake rules: a message wakes one Sub, n, all, the shared ones or one
// per class (see WithWake); a wake left unused is handed on; a twin of the
// message before it (both kinds of pub/sub) is dropped when nobody can miss
// it; and a new waiter queues behind the one an unlock is about to wake.

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
	return ch.twinOfExclusive(p, n)
}

// twinOfExclusive is twin for a message with an exclusive part, p the
// first copy's record: the copy is dropped while the waiter the first
// copy woke can still act on it, or, when it woke nobody, while its permit
// is there (the rules above).
func (ch *channel) twinOfExclusive(p twinRecord, n int) bool {
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
