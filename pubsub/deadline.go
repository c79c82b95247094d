package pubsub

import "time"

// The deadline heap: the Hub's blocked Subs ordered by their Wait's
// deadline, one timer for the Hub that rings the earliest.

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
