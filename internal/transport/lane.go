package transport

import "github.com/goredisson/goredisson/internal/inline"

// The inline lane's use by a batcher (the lane itself is package
// internal/inline): whether an op goes inline or to the flushers' queue
// (add, mayInline), its call in its caller's goroutine (runInline: on the
// lane's kept connection, runDirect, or through the lane's go-redis
// client; callOnLane also sends a flusher's lone op), and the lanes' life
// (the inline one and the other flushers'): made together (setLanes),
// retired when go-redis replaces the node's client (retire), swapped on
// Sentinel (swapLane), shut by Close (lanes).

// add sends o in its caller's goroutine when the batcher is idle
// (mayInline, runInline), else queues it for the flushers.
func (b *batcher) add(o *Op) {
	b.mu.Lock()
	if b.mayInline(o) {
		b.inline = true
		lane := b.lane
		b.cur = lane
		b.mu.Unlock()
		b.runInline(o, lane)
		return
	}
	if o.done == nil {
		o.done = make(chan struct{})
	}
	b.queue = append(b.queue, o)
	b.kick()
}

// mayInline reports whether o goes inline, in its caller's goroutine: the
// batcher has a lane, not retired, and nothing in flight (no flusher busy,
// no inline call); o is no redirection by ASK (ASKING goes on the same
// connection: a flusher's batch), no op of SubmitAll's nor of a bounded
// wait's (Op.bounded), and wants no WAIT (syncFree). Called with mu held.
func (b *batcher) mayInline(o *Op) bool {
	return b.lane != nil && !b.inline && !b.retired && !b.flushing() &&
		!o.asking && !o.batched && !o.bounded() && b.syncFree(o)
}

// flushing reports whether a flusher is busy. Called with mu held.
func (b *batcher) flushing() bool {
	for i := range b.fl {
		if b.fl[i].busy {
			return true
		}
	}
	return false
}

// syncFree reports whether o may go without WAIT: it asks for no replica
// sync, or its node needs none (as run decides: then o.Sync is cleared).
// Called with mu held.
func (b *batcher) syncFree(o *Op) bool {
	if !o.Sync {
		return true
	}
	if b.replicas.wanted(b.s.cfg.Sync) {
		return false
	}
	o.Sync = false
	return true
}

// retire shuts the lanes of a batcher go-redis replaced the client of:
// the inline lane at once when no call is in flight inline, else when that
// call ends (runInline); a flusher's (whose calls Shut does not cut) at
// once. No call goes inline on it from now on. It reports whether a call
// was in flight inline (Close must still be able to cut it: Sender.Shut).
func (b *batcher) retire() bool {
	if b.lane == nil {
		return false
	}
	b.mu.Lock()
	b.retired = true
	busy := b.inline
	b.mu.Unlock()
	if !busy {
		b.lane.Shut()
	}
	for _, l := range b.more {
		l.Shut()
	}
	return busy
}

// inFlight reports whether a call is being sent inline.
func (b *batcher) inFlight() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inline
}

// runInline sends o, in its caller's goroutine, on the lane (inline was
// set for it); calls made meanwhile queue, and are handed to the flusher
// when it is done. The caller's ctx end, or Close, interrupts the read:
// the call is then cut (its outcome unknown, settled as a lost reply's)
// and Exec reports it abandoned. A call that failed before a byte of its
// command was written (inline.Lane.Sent: cut or timed out while its
// connection was being dialed or set up, or before its write) did not
// run: its outcome is NotRun (unwrittenError), whatever ended it.
func (b *batcher) runInline(o *Op, lane *inline.Lane) {
	_, byDeadline := o.Ctx.(DeadlineOnly)
	if !lane.Begin(o.Ctx, b.s.closing(o.Ctx) != nil, byDeadline) {
		// Closed: through the flusher, as a clean-up after Close goes.
		b.requeue(o)
		return
	}
	b.callOnLane(&b.ibuf, o, lane)
	tail := endCall(o, lane)
	if b.s.watch != nil && tail == nil && !o.cut && b.s.watch.moved(o, lane) {
		// Sentinel: the lane's dial found another server than the primary
		// it was made for (nothing was sent): o goes through the flusher,
		// which follows go-redis's pool.
		b.requeue(o)
		return
	}
	if tail != nil && o.done == nil {
		// The caller leaves (Exec: abandoned); its reply is still read,
		// here, so that it is settled as any abandoned call's is. (On a
		// Cluster the op has its done channel from submit.)
		o.done = make(chan struct{})
	}
	b.leaveLane(lane)
	if tail == nil {
		b.s.after(o, b)
		return
	}
	go b.readTail(o, tail)
}

// callOnLane sends o on lane, between Begin and End: on the lane's kept
// connection when it has one (runDirect, writing in buf), else through the
// lane's go-redis client, whose connection the lane keeps for the next
// calls when this one went well (Adopt). A script the server had not
// cached (NOSCRIPT) goes once more, with its source.
func (b *batcher) callOnLane(buf *sendBuf, o *Op, lane *inline.Lane) {
	rdb := lane.Client()
	for _, eval := range []bool{false, true} {
		lane.Unsent()
		if !b.runDirect(buf, o, lane, eval) { // directOps clears o.fence first
			cmd := o.command(eval)
			_ = rdb.Process(o.Ctx, cmd)
			o.finish(cmd.Err())
			if cmd.Err() == nil {
				lane.Adopt()
			}
		}
		if !o.mine() || !o.NoScript() {
			break // done, or withdrawn: its write was refused (claim.go)
		}
	}
}

// endCall ends o's call on lane: o.cut tells whether ctx's end or Close
// interrupted it, and a call that failed before a byte of its command was
// written is NotRun (unwrittenError). It returns the Tail that reads the
// rest of a reply cut after its command went out (nil: none).
func endCall(o *Op, lane *inline.Lane) *inline.Tail {
	if !o.take() {
		lane.End(false) // withdrawn: never written (claim.go)
		return nil
	}
	var tail *inline.Tail
	o.cut, tail = lane.End(o.Err != nil && !notSent(o.Err))
	if o.Err != nil && !notSent(o.Err) && !lane.Sent() {
		o.Err = unwrittenError{o.Err}
	}
	return tail
}

// leaveLane ends the batcher's inline call (inline is cleared): the calls
// queued meanwhile go to the flusher, and lane is shut if it is no longer
// the batcher's (retired, or swapped on Sentinel).
func (b *batcher) leaveLane(lane *inline.Lane) {
	b.mu.Lock()
	b.inline, b.cur = false, nil
	retired := b.retired || lane != b.lane // retired, or swapped (Sentinel)
	if len(b.queue) > 0 {
		b.kick()
	} else {
		b.mu.Unlock()
	}
	if retired {
		lane.Shut()
	}
}

// readTail reads, on a goroutine of its own, the rest of the reply of o,
// whose call was cut after its command went out, and passes o on: its
// outcome is that reply, or unknown (o.Err stays the cut call's error)
// when the Tail read no whole reply.
func (b *batcher) readTail(o *Op, tail *inline.Tail) {
	raw, err := tail.Read(ReplyComplete)
	if body, _, perr := replyBody(raw); perr == nil {
		raw = body // without the RESP3 pushes before it
	}
	o.raw = raw
	if err == nil {
		o.finish(nil)
	}
	b.s.after(o, b)
}

// runDirect sends o, a lone call, on lane's kept connection, writing its
// command (in buf) and reading its reply itself (directOps: inline.Lane.Do,
// with its ctx), and reports whether it did; if not, nothing was sent and
// o goes through the lane's go-redis client. A lone call on a connection
// the Client can fence goes out reading no cancel floor (fenceFor); a
// batch's calls read it, since fencing one of them (CLIENT KILL) would cut
// the replies of the others on that connection. RESP3: pushes may come
// before the reply (they are dropped, as the lane's client has no push
// handler) or after it; bytes read past the reply (a push, maybe cut
// short) leave the stream in an unknown state: the connection goes
// (go-redis drops it).
func (b *batcher) runDirect(buf *sendBuf, o *Op, lane *inline.Lane, eval bool) bool {
	ops := [1]*Op{o}
	return directOps(o.Ctx, buf, lane, ops[:], eval, b.fenceFor(o, lane))
}

// fenceFor returns the Fence of the connection the direct path will send
// o on, when o's script reads the cancel floor (Op.MarkFloor), the Client
// fences lost calls (Config.Fence, not given up: Sender.FenceRefused) and
// the connection has a Fence (inline.probeFence); nil otherwise: o reads
// the floor.
func (b *batcher) fenceFor(o *Op, lane *inline.Lane) *Fence {
	if o.floorAt == 0 || !b.s.Fencing() {
		return nil
	}
	return lane.KeptFence()
}

// requeue hands o, which the lane did not send, to the flusher (the lane
// call ends: inline is cleared), and shuts the lane if it is no longer
// the batcher's.
func (b *batcher) requeue(o *Op) {
	b.mu.Lock()
	lane := b.cur
	b.inline, b.cur = false, nil
	stale := lane != nil && (b.retired || lane != b.lane)
	if o.done == nil {
		o.done = make(chan struct{})
	}
	b.queue = append(b.queue, o)
	b.kick()
	if stale {
		lane.Shut()
	}
}

// setLanes gives a batcher made just now its lanes, made by mk (none when
// mk returns nil): the inline one and one for each further flusher.
func (b *batcher) setLanes(mk func() *inline.Lane) {
	b.lane, b.more = newLanes(mk)
}

// newLanes returns a lane made by mk and maxBatches-1 more (nil, nil when
// mk makes none).
func newLanes(mk func() *inline.Lane) (*inline.Lane, []*inline.Lane) {
	l := mk()
	if l == nil {
		return nil, nil
	}
	more := make([]*inline.Lane, maxBatches-1)
	for i := range more {
		more[i] = mk()
	}
	return l, more
}

// swapLane makes l and more the batcher's lanes (nil: none) on Sentinel.
// The old inline lane is shut at once when no call is in flight on it,
// else when that call ends (runInline); the flushers' at once (Shut does
// not cut their calls). Called with Sender.mu held.
func (b *batcher) swapLane(l *inline.Lane, more []*inline.Lane) {
	b.mu.Lock()
	old, oldMore := b.lane, b.more
	b.lane, b.more = l, more
	busy := b.inline && b.cur == old
	b.mu.Unlock()
	if old != nil && !busy {
		old.Shut()
	}
	for _, m := range oldMore {
		m.Shut()
	}
}

// lanes returns the batcher's lanes and the one a call in flight inline
// uses (for Shut).
func (b *batcher) lanes() []*inline.Lane {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ls []*inline.Lane
	if b.lane != nil {
		ls = append(ls, b.lane)
	}
	ls = append(ls, b.more...)
	if b.inline && b.cur != nil && b.cur != b.lane {
		ls = append(ls, b.cur)
	}
	return ls
}
