// Package transport sends rlock's commands to Redis and returns their
// outcomes: batching, the inline lane, Cluster redirections and replica
// sync (docs/internals.md, "The transport's contract").
package transport

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/cluster"
	"github.com/goredisson/goredisson/internal/inline"
)

// How commands reach Redis.
//
// Every command goes out as a go-redis RawWriteToCmd, the one command type
// go-redis never sends twice: not on a timeout, not on a broken connection,
// not inside a pipeline (its NoRetry is true). So each acquire and release
// script runs at most once per call, and a call whose reply is lost has one
// of two outcomes, never three (rlock settles it). Its reply comes back as
// raw RESP and is parsed here.
//
// Calls made while an earlier batch is on its way are queued and sent
// together as one pipeline (one write, one round trip, one read on the
// server), as auto-pipelining clients do; a call made while nothing is in
// flight goes out at once, alone: on one server, on each Cluster master
// and on a Sentinel's primary (sentinel.go), in its caller's goroutine, on
// a connection of the transport's own whose read its ctx's end or Close
// interrupts, the rest of the reply then read on a goroutine
// (internal/inline, see batcher.runInline), so that an uncontended call
// costs no goroutine hand-off. A caller waits for its own reply, its context, or the Client's
// Close, whichever comes first: a call it stops waiting for stays in its
// batch and its outcome is settled later.
//
// On a Redis Cluster each master has a batcher of its own, fed with the
// calls whose key it serves and sending on go-redis's client for that node:
// a batch is one pipeline to one node, never a pipeline that go-redis
// splits and joins again. Because go-redis does not look into a raw reply,
// the redirections of a Cluster are followed here, for every call alike
// (see Sender.after): MOVED (the command did not run: it is sent to the
// slot's new owner), ASK (sent to the named node after ASKING, on the same
// connection), and TRYAGAIN and CLUSTERDOWN (sent again after a short
// pause) while a slot migrates or a failover completes. A caller sees the
// reply of the node that ran its command; a redirection reaches it only
// when redirectBudget ran out first.
//
// Replica sync (WithReplicaSync, and Redisson's checkLockSyncedSlaves by
// default on Sentinel and Cluster) sends WAIT after a batch's acquire and
// release scripts, in the same pipeline, so on the same connection (see
// batcher.runSynced).

// Sender routes ops to batchers: the one batcher of a standalone or
// Sentinel client, one per master on a Redis Cluster.
type Sender struct {
	cfg   Config
	rdb   redis.UniversalClient
	nodes *cluster.Nodes // set for a Redis Cluster
	one   *batcher       // every op off a Cluster; keyless ops on one
	idle  atomic.Int64   // how long an idle flusher waits for work (a time.Duration): flusherIdle

	// watch follows the primary of a Sentinel client for one's lane
	// (sentinel.go); nil off Sentinel. oneInline: one may send inline.
	watch     *sentinelWatch
	oneInline bool

	mu     sync.Mutex
	byAddr map[string]*batcher
	// primary is the address one's lane dials on Sentinel ("": no lane);
	// refused, one whose lane's dial reached another server, at refusedAt
	// (sentinel.go).
	primary, refused string
	refusedAt        time.Time
	shut             bool // Shut was called: new batchers get no inline lane
	// retired holds the batchers retired while a call was in flight on
	// their lane (see batcher.retire), so that Shut can cut that call too.
	retired []*batcher
	// route caches each slot's batcher (nil: ask nodes), so that a call
	// is routed by a CRC16 and an atomic load. An entry is dropped when
	// its node redirects a call of the slot or fails.
	route []atomic.Pointer[batcher]
}

// Config is what the transport needs from its Client (package rlock).
type Config struct {
	Sync         SyncMode
	SyncReplicas int           // WithReplicaSync's count (SyncExplicit)
	SyncTimeout  time.Duration // WAIT's timeout
	// Done is closed by the Client's Close; Closed reports it (a call made
	// after it is ErrClosed).
	Done      <-chan struct{}
	Closed    func() bool
	ErrClosed error
	// IsCleanup reports a clean-up context, which Close does not end.
	IsCleanup func(context.Context) bool
	// InfoTimeout bounds the INFO replication that counts a node's replicas.
	InfoTimeout time.Duration
	// PublishRefused is told when a script's publish was refused
	// ("<channel>: <error>"); NameRefusedKeys adds to an op's key refusal
	// (op.V) the keys the user may not access, off the flusher.
	PublishRefused  func(what string)
	NameRefusedKeys func(o *Op)
	Logger          func() *slog.Logger
}

// NewSender returns the transport of one Client, sending through rdb.
func NewSender(cfg Config, rdb redis.UniversalClient) *Sender {
	s := &Sender{cfg: cfg, rdb: rdb, byAddr: make(map[string]*batcher)}
	s.idle.Store(int64(flusherIdle))
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		s.nodes = cluster.New(cc)
		s.route = make([]atomic.Pointer[batcher], 16384)
	}
	s.one = newBatcher(s, rdb, "")
	if u, ok := rdb.(*redis.Client); ok && s.nodes == nil {
		s.one.lane = inline.New(u)
		s.oneInline = s.one.lane != nil
		if s.one.lane == nil && u.Options().Addr == "FailoverClient" {
			s.watch = newSentinelWatch(s, u)
			s.oneInline = true
		}
	}
	return s
}

// SetIdle sets how long an idle flusher waits for work (tests).
func (s *Sender) SetIdle(d time.Duration) { s.idle.Store(int64(d)) }

// closing returns what ends waits of a call made with ctx besides ctx: the
// Client's Close, unless the call is a clean-up.
func (s *Sender) closing(ctx context.Context) <-chan struct{} {
	if s.cfg.IsCleanup(ctx) {
		return nil
	}
	return s.cfg.Done
}

// Shut ends the inline lanes (Client.Close): a call in flight on one that
// Close ends is interrupted, later calls go through the flusher, and
// batchers made later get no lane.
func (s *Sender) Shut() {
	if s.watch != nil {
		s.watch.close()
	}
	s.mu.Lock()
	s.shut = true
	for _, l := range s.one.lanes() {
		l.Shut()
	}
	for _, b := range s.byAddr {
		if b.lane != nil {
			b.lane.Shut()
		}
	}
	for _, b := range s.retired {
		for _, l := range b.lanes() {
			l.Shut()
		}
	}
	s.retired = nil
	s.mu.Unlock()
}

// batcherFor returns the batcher of the node at addr, serving through rdb.
func (s *Sender) batcherFor(rdb *redis.Client, addr string) *batcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.byAddr[addr]
	if b == nil || b.rdb != redis.UniversalClient(rdb) {
		// A node first seen, or go-redis made a new client for it: a
		// batcher, and an inline lane dialing as that client does, of its
		// own; the old batcher's lane is retired.
		old := b
		b = newBatcher(s, rdb, addr)
		if !s.shut {
			b.lane = inline.New(rdb)
		}
		s.byAddr[addr] = b
		if old != nil && old.retire() {
			// Keep those whose call is still in flight (the others'
			// lanes are shut), for Shut.
			keep := s.retired[:0]
			for _, r := range s.retired {
				if r.inFlight() {
					keep = append(keep, r)
				}
			}
			clear(s.retired[len(keep):])
			s.retired = append(keep, old)
		}
	}
	return b
}

// submit routes o to its batcher; done is closed when its outcome is known.
func (s *Sender) submit(o *Op) {
	o.cut = false
	if o.done == nil && (s.nodes != nil || !s.oneInline) {
		o.done = make(chan struct{})
	}
	if o.first.IsZero() {
		o.first = time.Now()
		if o.S != nil && o.S.Synced && s.cfg.Sync != SyncOff {
			o.Sync = true
		}
	}
	if s.nodes == nil {
		s.one.add(o)
		return
	}
	key, ok := o.RouteKey()
	if !ok {
		s.one.add(o)
		return
	}
	var rdb *redis.Client
	var addr string
	var err error
	if o.target != "" {
		// A redirection named the node.
		addr = o.target
		rdb, err = s.nodes.Node(o.Ctx, addr)
		if err != nil && s.waitForNode(o) {
			return
		}
	} else {
		slot := cluster.Slot(key)
		if b := s.route[slot].Load(); b != nil {
			b.add(o)
			return
		}
		rdb, addr, err = s.nodes.Master(o.Ctx, key)
		if err == nil {
			b := s.batcherFor(rdb, addr)
			s.route[slot].Store(b)
			b.add(o)
			return
		}
	}
	if err != nil {
		o.finish(notSentError{err})
		o.markDone()
		return
	}
	s.batcherFor(rdb, addr).add(o)
}

// waitForNode sends o again after a pause when the node a redirection
// named is not in go-redis's slot map yet (a reload answered by a node that
// has not heard of it), within the redirect budget and while its ctx lives:
// nothing was sent, and the map learns the node soon. It reports whether o
// was rescheduled.
func (s *Sender) waitForNode(o *Op) bool {
	if s.followedEnough(o) || s.cfg.Closed() {
		return false
	}
	s.resubmit(o, o.nextPause(true))
	return true
}

// unroute drops the cached routes of slot (or, when slot < 0, every route
// to b), so that the next call asks nodes again.
func (s *Sender) unroute(slot int, b *batcher) {
	if s.route == nil {
		return
	}
	if slot >= 0 {
		s.route[slot].CompareAndSwap(b, nil)
		return
	}
	for i := range s.route {
		s.route[i].CompareAndSwap(b, nil)
	}
}

// SubmitAll routes ops (Op.Done tells when each is done); those for one
// batcher go together, so that they make one batch unless the batch in
// flight ends first.
func (s *Sender) SubmitAll(ops []*Op) {
	for _, o := range ops {
		if o.done == nil {
			o.done = make(chan struct{})
		}
		o.batched = true
	}
	if s.nodes == nil {
		for _, o := range ops {
			o.first = time.Now()
		}
		s.one.addAll(ops)
		return
	}
	for _, o := range ops {
		s.submit(o)
	}
}

// Bounds of following redirections: a MOVED or ASK is followed at once, a
// TRYAGAIN or CLUSTERDOWN (and a MOVED that points where the command was
// sent, or a node whose client went away) after a pause that starts at
// redirectPause and doubles up to maxRedirectPause. After redirectBudget
// since the op was first sent, the last reply is the op's outcome.
const (
	redirectPause    = 5 * time.Millisecond
	maxRedirectPause = 100 * time.Millisecond
	redirectBudget   = 10 * time.Second
	// immediateHops is how many redirections in a row are followed without
	// a pause.
	immediateHops = 4
)

// after decides what becomes of an op its batcher has sent: on a Redis
// Cluster a redirection sends it on (the command did not run); otherwise
// its outcome is final and done is closed.
func (s *Sender) after(o *Op, from *batcher) {
	o.asking = false
	if o.unpublished != "" {
		s.cfg.PublishRefused(o.unpublished)
	}
	if !o.probed && o.KeyRefused() {
		// Name the keys the user may not access, off the flusher. An op
		// sent inline has no done channel yet (its caller's exec reads
		// done after submit returns): give it one before going async.
		o.probed = true
		if o.done == nil {
			o.done = make(chan struct{})
		}
		go func() {
			s.cfg.NameRefusedKeys(o)
			s.after(o, from)
		}()
		return
	}
	if s.nodes == nil || s.followedEnough(o) {
		o.markDone()
		return
	}
	var pause time.Duration
	var again bool
	if o.Err != nil {
		pause, again = s.afterError(o, from)
	} else {
		pause, again = s.afterReply(o, from)
	}
	if !again {
		o.markDone()
		return
	}
	s.resubmit(o, pause)
}

// followedEnough reports whether o may not be sent on again: its ctx ended
// (but for a clean-up) or the redirect budget since it was first sent is
// spent.
func (s *Sender) followedEnough(o *Op) bool {
	return (o.Ctx.Err() != nil && !s.cfg.IsCleanup(o.Ctx)) || time.Since(o.first) > redirectBudget
}

// resubmit sends o on after pause (at once when 0), counting one more
// redirection.
func (s *Sender) resubmit(o *Op, pause time.Duration) {
	o.redirects++
	if pause == 0 {
		s.submit(o)
		return
	}
	time.AfterFunc(pause, func() { s.submit(o) })
}

// afterError decides on an op that got no reply: it is sent again (again)
// only when go-redis closed its client for the node (the node left the slot
// map); a node that could not be reached is forgotten, so that go-redis
// looks again, and the error is the op's outcome.
func (s *Sender) afterError(o *Op, from *batcher) (pause time.Duration, again bool) {
	if errors.Is(o.Err, redis.ErrClosed) && from.addr != "" {
		s.nodes.Forget(from.addr)
		s.unroute(-1, from)
		o.target = ""
		return o.nextPause(true), true
	}
	if from.addr != "" && unreachable(o.Err) {
		s.nodes.Forget(from.addr) // down, or gone: have go-redis look again
		s.unroute(-1, from)
	}
	return 0, false
}

// afterReply decides on an op that got a reply: a MOVED or ASK sends it on
// to the node named, a TRYAGAIN or CLUSTERDOWN (a multi-key command during
// a slot's migration, the cluster settling after a failover) sends it again
// after a pause; any other reply is its outcome.
func (s *Sender) afterReply(o *Op, from *batcher) (pause time.Duration, again bool) {
	e, ok := o.V.(ReplyError)
	if !ok {
		return 0, false
	}
	if r, ok := cluster.ParseRedirect(string(e)); ok {
		if !r.Ask {
			s.nodes.Moved(r.Slot, r.Addr)
			s.unroute(r.Slot, from)
		}
		o.target = r.Addr
		o.asking = r.Ask
		return o.nextPause(r.Addr == from.addr), true
	}
	if !HasPrefix(string(e), "TRYAGAIN") && !HasPrefix(string(e), "CLUSTERDOWN") {
		return 0, false
	}
	o.target = ""
	return o.nextPause(true), true
}

// nextPause returns the pause before an op is sent on: none for the first
// immediateHops redirections in a row (unless wait is set), then growing.
func (o *Op) nextPause(wait bool) time.Duration {
	if !wait && o.redirects < immediateHops {
		return 0
	}
	p := redirectPause << min(o.redirects, 5)
	return min(p, maxRedirectPause)
}

// notSentError marks an op that was never sent (its node could not be
// found): its outcome is notRun.
type notSentError struct{ err error }

func (e notSentError) Error() string { return e.err.Error() }
func (e notSentError) Unwrap() error { return e.err }

// unwrittenError marks an op sent inline that failed before a byte of its
// command was written (inline.Lane.Sent): its outcome is notRun. The node
// was reached (or is being dialed): unlike a dial failure, it is not
// forgotten (Sender.afterError).
type unwrittenError struct{ err error }

func (e unwrittenError) Error() string { return "not sent: " + e.err.Error() }
func (e unwrittenError) Unwrap() error { return e.err }

// batcher sends ops to one Redis node (or through one go-redis client),
// batching those that arrive while a batch is in flight.
type batcher struct {
	s    *Sender
	rdb  redis.UniversalClient
	addr string // the node's address on a Redis Cluster, else ""

	// replicas is the number of replicas the node reported (-1: not asked
	// yet, or to be asked again), for Redisson's replica sync; noWait is
	// set once the node answered WAIT with "unknown command".
	replicas syncState

	// lane sends a call in its caller's goroutine when the batcher is idle
	// (nil: never; see runInline): on one server, per node on a Cluster,
	// and to the primary on Sentinel (swapped under mu: swapLane).
	lane *inline.Lane
	// wbuf holds the command runDirect writes (used by the caller
	// sending inline only).
	wbuf []byte

	mu      sync.Mutex
	cur     *inline.Lane // the lane the call in flight inline uses
	queue   []*Op
	spare   []*Op // the previous batch's slice, reused for the next queue
	busy    bool  // the flusher is sending (or about to send) batches
	inline  bool  // a caller is sending its call on lane
	retired bool  // go-redis replaced the node's client: lane is shut (once idle)
	running bool  // the flusher goroutine exists
	wake    chan struct{}
	// syncQ holds the ops that want replica sync while a synced pipeline
	// is in flight (syncing): they go together in the next one, so that a
	// node has at most one WAIT pipeline, and one connection for it, in
	// flight per batcher.
	syncQ   []*Op
	syncing bool
}

func newBatcher(s *Sender, rdb redis.UniversalClient, addr string) *batcher {
	b := &batcher{s: s, rdb: rdb, addr: addr, wake: make(chan struct{}, 1)}
	b.replicas.n.Store(-1)
	return b
}

// add sends o in its caller's goroutine when the batcher is idle, else
// queues it.
func (b *batcher) add(o *Op) {
	b.mu.Lock()
	if b.lane != nil && !b.busy && !b.inline && !b.retired && !o.asking && !o.batched && !o.bounded() && b.syncFree(o) {
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

// retire shuts the lane of a batcher go-redis replaced the client of: at
// once when no call is in flight on it, else when that call ends
// (runInline); no call goes inline on it from now on. It reports whether
// a call was in flight (Close must still be able to cut it: Sender.Shut).
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
	rdb := lane.Client()
	for _, eval := range []bool{false, true} {
		lane.Unsent()
		if !b.runDirect(o, lane, eval) {
			cmd := o.command(eval)
			_ = rdb.Process(o.Ctx, cmd)
			o.finish(cmd.Err())
			if cmd.Err() == nil {
				lane.Adopt()
			}
		}
		if !o.NoScript() {
			break
		}
	}
	var tail *inline.Tail
	o.cut, tail = lane.End(o.Err != nil && !notSent(o.Err))
	if o.Err != nil && !notSent(o.Err) && !lane.Sent() {
		o.Err = unwrittenError{o.Err}
	}
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
	if tail == nil {
		b.s.after(o, b)
		return
	}
	go func() {
		raw, err := tail.Read(ReplyComplete)
		if body, _, perr := replyBody(raw); perr == nil {
			raw = body // without the RESP3 pushes before it
		}
		o.raw = raw
		if err == nil {
			o.finish(nil)
		}
		b.s.after(o, b)
	}()
}

// runDirect sends o on lane's kept connection, writing its command and
// reading its reply itself (inline.Lane.Do), and reports whether it did;
// if not, nothing was sent and o goes through the lane's go-redis client.
func (b *batcher) runDirect(o *Op, lane *inline.Lane, eval bool) bool {
	line := o.Line
	if o.S != nil && (eval || o.S.SHA == "") {
		line = append([]any{"eval", o.S.Src}, o.Line[2:]...)
	}
	cmd, ok := AppendCommand(b.wbuf[:0], line)
	b.wbuf = cmd
	if !ok {
		return false
	}
	raw, err, handled := lane.Do(o.Ctx, cmd, ReplyComplete)
	if !handled {
		return false
	}
	if err == nil {
		// RESP3: pushes may come before the reply (they are dropped, as
		// the lane's client has no push handler) or after it; bytes read
		// past the reply (a push, maybe cut short) leave the stream in an
		// unknown state: the connection goes (go-redis drops it).
		body, rest, perr := replyBody(raw)
		if perr != nil || len(rest) != 0 {
			lane.Discard()
		}
		if perr == nil {
			raw = body
		}
	}
	o.raw = append(o.small[:0], raw...)
	o.finish(err)
	return true
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

// swapLane makes l the batcher's lane (nil: none) on Sentinel. The old
// lane is shut at once when no call is in flight on it, else when that
// call ends (runInline). Called with Sender.mu held.
func (b *batcher) swapLane(l *inline.Lane) {
	b.mu.Lock()
	old := b.lane
	b.lane = l
	busy := b.inline && b.cur == old
	b.mu.Unlock()
	if old != nil && !busy {
		old.Shut()
	}
}

// lanes returns the batcher's lane and the one a call in flight inline
// uses (for Shut).
func (b *batcher) lanes() []*inline.Lane {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ls []*inline.Lane
	if b.lane != nil {
		ls = append(ls, b.lane)
	}
	if b.inline && b.cur != nil && b.cur != b.lane {
		ls = append(ls, b.cur)
	}
	return ls
}

// addAll queues ops together.
func (b *batcher) addAll(ops []*Op) {
	b.mu.Lock()
	b.queue = append(b.queue, ops...)
	b.kick()
}

// kick has the flusher send the queue unless it is at it already. Called
// with mu held; it unlocks.
func (b *batcher) kick() {
	if b.busy || b.inline {
		// The flusher, or the caller sending inline, takes the queue.
		b.mu.Unlock()
		return
	}
	b.busy = true
	if !b.running {
		b.running = true
		b.mu.Unlock()
		go b.loop()
		return
	}
	b.mu.Unlock()
	b.wake <- struct{}{}
}

// flusherIdle is how long the flusher goroutine waits for work before it
// ends (the next call starts it again); Close ends it at once.
const flusherIdle = 200 * time.Millisecond

// loop is the flusher goroutine: it sends batches while there are any,
// then waits for the next kick. A goroutine that stays (rather than one per
// batch) saves the caller a goroutine start and an OS thread wake-up per
// call, which on a small machine costs as much as the round trip.
func (b *batcher) loop() {
	idle := time.NewTimer(time.Duration(b.s.idle.Load()))
	defer idle.Stop()
	for {
		b.flush()
		idle.Reset(time.Duration(b.s.idle.Load()))
		select {
		case <-b.wake:
			continue
		case <-idle.C:
		case <-b.s.cfg.Done:
			// The Client is closed: end now, not flusherIdle later (a
			// call made after Close starts a flusher that ends at once).
		}
		b.mu.Lock()
		if b.busy {
			// A kick came as the timer fired: its wake is on its way.
			b.mu.Unlock()
			<-b.wake
			continue
		}
		b.running = false
		b.mu.Unlock()
		return
	}
}

// flush sends batches until the queue is empty, then clears busy.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		batch := b.queue
		if len(batch) == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		b.queue, b.spare = b.spare[:0], nil
		b.mu.Unlock()

		b.run(batch)
		for i := range batch {
			batch[i] = nil
		}
		b.mu.Lock()
		b.spare = batch[:0]
		b.mu.Unlock()
	}
}

// run sends a batch: the ops that want replica sync go, with WAIT after
// them, in a pipeline of their own on a goroutine of their own (WAIT holds
// its connection until the replicas answer; the other ops must not wait
// for it), the others as one pipeline (a lone op as a plain command).
// Scripts the server did not have cached are sent again with their source.
func (b *batcher) run(batch []*Op) {
	var synced []*Op
	plain := batch
	if b.s.cfg.Sync != SyncOff {
		plain = plain[:0:0]
		for _, o := range batch {
			if o.Sync && b.replicas.wanted(b.s.cfg.Sync) {
				synced = append(synced, o)
			} else {
				o.Sync = false
				plain = append(plain, o)
			}
		}
		if len(synced) > 0 {
			b.addSynced(synced)
		}
	}
	if len(plain) == 0 {
		return
	}
	b.send(plain, false)
	var again []*Op
	for _, o := range plain {
		if o.NoScript() {
			again = append(again, o)
		}
	}
	if len(again) > 0 {
		b.send(again, true)
	}
	for _, o := range plain {
		b.s.after(o, b)
	}
}

// send writes the ops as one pipeline (a lone op as a plain command) and
// records their outcomes. An op redirected by ASK goes after ASKING, on the
// same connection.
func (b *batcher) send(ops []*Op, eval bool) {
	if len(ops) == 1 && !ops[0].asking {
		// Alone, the op may use its caller's ctx: go-redis then stops
		// dialing (or waiting for a pooled connection) when it ends, and
		// says why, without sending anything. Once sent, go-redis bounds the
		// call by ctx only with ContextTimeoutEnabled; the outcome tells.
		o := ops[0]
		cmd := o.command(eval)
		_ = b.rdb.Process(o.Ctx, cmd)
		o.finish(cmd.Err())
		return
	}
	ctx := context.WithoutCancel(ops[0].Ctx)
	pipe := b.rdb.Pipeline()
	cmds := pipeOps(ctx, pipe, ops, eval)
	_, _ = pipe.Exec(ctx)
	for i, o := range ops {
		o.finish(cmds[i].Err())
	}
}

// pipeOps queues ops' commands in pipe (an op redirected by ASK after
// ASKING, on the same connection) and returns them.
func pipeOps(ctx context.Context, pipe redis.Pipeliner, ops []*Op, eval bool) []*redis.RawWriteToCmd {
	cmds := make([]*redis.RawWriteToCmd, len(ops))
	for i, o := range ops {
		if o.asking {
			_ = pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
		}
		cmds[i] = o.command(eval)
		_ = pipe.Process(ctx, cmds[i])
	}
	return cmds
}

// addSynced queues ops that want replica sync for the sync goroutine,
// started unless it runs.
func (b *batcher) addSynced(ops []*Op) {
	b.mu.Lock()
	b.syncQ = append(b.syncQ, ops...)
	if b.syncing {
		b.mu.Unlock()
		return
	}
	b.syncing = true
	b.mu.Unlock()
	go b.syncLoop()
}

// syncLoop sends the queued synced ops, those queued meanwhile together,
// until none is left.
func (b *batcher) syncLoop() {
	for {
		b.mu.Lock()
		ops := b.syncQ
		if len(ops) == 0 {
			b.syncing = false
			b.mu.Unlock()
			return
		}
		b.syncQ = nil
		b.mu.Unlock()
		b.runSynced(ops)
	}
}

// runSynced sends ops that want replica sync as one pipeline with WAIT (for
// the replicas the node reports, or WithReplicaSync's count) after them, on
// one connection, records WAIT's count in each, and passes them on.
func (b *batcher) runSynced(ops []*Op) {
	cfg := b.s.cfg
	ctx := context.WithoutCancel(ops[0].Ctx)
	want := cfg.SyncReplicas
	if cfg.Sync == SyncAuto {
		n, err := b.replicas.count(ctx, b.rdb, cfg.InfoTimeout)
		if err != nil || n == 0 {
			// Not known (the node did not answer INFO: the scripts will
			// tell), or no replica to wait for: no WAIT.
			for _, o := range ops {
				o.Sync = false
			}
			b.sendSynced(ctx, ops, 0)
			return
		}
		want = n
	}
	b.sendSynced(ctx, ops, want)
}

// sendSynced sends ops with WAIT want (none when want is 0), then once more
// with their source those the node had no cached script for, and passes
// every op on.
func (b *batcher) sendSynced(ctx context.Context, ops []*Op, want int) {
	for _, eval := range []bool{false, true} {
		pipe := b.rdb.Pipeline()
		cmds := pipeOps(ctx, pipe, ops, eval)
		var wait *redis.IntCmd
		if want > 0 {
			wait = redis.NewIntCmd(ctx, "wait", want, b.waitTimeout().Milliseconds())
			_ = pipe.Process(ctx, wait)
		}
		_, _ = pipe.Exec(ctx)
		for i, o := range ops {
			o.finish(cmds[i].Err())
		}
		if wait != nil {
			b.waited(ctx, ops, want, wait)
		}
		var again []*Op
		for _, o := range ops {
			if o.NoScript() {
				again = append(again, o)
			} else {
				b.s.after(o, b)
			}
		}
		if len(again) == 0 {
			return
		}
		ops = again
	}
}

// waitTimeout is WAIT's timeout: the sync timeout, shortened to 3/4 of the
// node client's read timeout when it would outlast it (go-redis reads a
// pipeline's replies within one read timeout; a WAIT that answered later
// would make the whole batch's outcome unknown).
func (b *batcher) waitTimeout() time.Duration {
	d := b.s.cfg.SyncTimeout
	if c, ok := b.rdb.(*redis.Client); ok {
		rt := c.Options().ReadTimeout
		if rt > 0 && d > rt*3/4 {
			d = max(rt*3/4, time.Millisecond)
		}
	}
	return d
}

// waited records WAIT's answer in the ops it followed.
func (b *batcher) waited(ctx context.Context, ops []*Op, want int, wait *redis.IntCmd) {
	n, err := wait.Result()
	var re redis.Error
	if errors.As(err, &re) && HasPrefix(re.Error(), "ERR unknown command") {
		// Redisson stops sending WAIT to a server that does not know it
		// (some proxies and managed services).
		b.replicas.noWait.Store(true)
		b.s.cfg.Logger().Warn("goredisson: the server does not know WAIT; replica sync is off for it", "node", b.addr, "err", err)
		for _, o := range ops {
			o.Sync = false
		}
		return
	}
	if err != nil {
		n = 0 // not confirmed
	}
	if b.s.cfg.Sync == SyncAuto && n != int64(want) {
		// As Redisson: the replica count may have changed; ask again
		// before the next WAIT. When none confirmed, ask now: a master
		// that has lost its replicas (a failover left it alone) has
		// nothing to confirm.
		b.replicas.n.Store(-1)
		if n == 0 {
			if fresh, err := b.replicas.count(ctx, b.rdb, b.s.cfg.InfoTimeout); err == nil && fresh == 0 {
				want = 0
			}
		}
	}
	for _, o := range ops {
		o.Synced, o.SyncWant = n, want
	}
}

// endGrace is how long a caller whose ctx ended still waits for its call's
// own outcome.
const endGrace = 5 * time.Millisecond

// CallGrace is how long past the end of its wait (or past its send, when
// the wait has ended) a call made for a wait is waited for (see BoundCalls).
const CallGrace = 250 * time.Millisecond

// errNoReply is the reason of a call abandoned at its wait's bound.
var errNoReply = errors.New("no reply from Redis within the wait")

// callBoundKey is the context key of BoundCalls.
type callBoundKey struct{}

// bounded reports whether o belongs to a bounded wait (BoundCalls): such a
// call is never sent inline, where only ctx's end or Close can interrupt
// its I/O, but through the flusher, so that exec can leave it at its bound
// while a dial or a hung server holds it.
func (o *Op) bounded() bool {
	if o.Ctx == nil {
		return false
	}
	_, ok := CallBound(o.Ctx)
	return ok
}

// BoundCalls marks ctx as serving a wait that ends at deadline (zero: no
// bound): exec gives each call up to CallGrace past it (and at least
// CallGrace), so that a dial or a server that hangs cannot hold a wait far
// past its end, whatever go-redis's timeouts are. A call given up is
// abandoned (settled as any lost reply).
func BoundCalls(ctx context.Context, deadline time.Time) context.Context {
	if deadline.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, callBoundKey{}, deadline)
}

// Unbound returns ctx without the call bound BoundCalls put on it
// (context.WithoutCancel keeps values, so a clean-up must drop it).
func Unbound(ctx context.Context) context.Context {
	if _, ok := CallBound(ctx); !ok {
		return ctx
	}
	return context.WithValue(ctx, callBoundKey{}, time.Time{})
}

// IsBoundKey reports whether key is the context key BoundCalls uses: a
// context of its own that drops the bound answers nil for it (cheaper
// than Unbound's extra context).
func IsBoundKey(key any) bool {
	_, ok := key.(callBoundKey)
	return ok
}

// CallBound returns the bound BoundCalls put on ctx, if any.
func CallBound(ctx context.Context) (time.Time, bool) {
	d, ok := ctx.Value(callBoundKey{}).(time.Time)
	return d, ok && !d.IsZero()
}

// errAbandoned marks a call its caller stopped waiting for: its outcome is
// unknown to the caller. It wraps the reason: ctx's error or ErrClosed.
type errAbandoned struct{ reason error }

func (e errAbandoned) Error() string { return e.reason.Error() }
func (e errAbandoned) Unwrap() error { return e.reason }

// Abandoned reports whether err marks an abandoned call, and its reason.
func Abandoned(err error) (reason error, ok bool) {
	if err == nil {
		return nil, false
	}
	var ab errAbandoned
	if errors.As(err, &ab) {
		return ab.reason, true
	}
	return nil, false
}

// Exec sends o and waits for its outcome, ctx's end or the Client's Close
// (a clean-up, see Config.IsCleanup, is not ended by Close). The caller
// checked ctx and Close before. It returns nil once o is done (see
// Op.Outcome), else an error Abandoned recognizes.
func (s *Sender) Exec(ctx context.Context, o *Op) error {
	closing := s.closing(ctx)
	s.submit(o)
	var bound <-chan time.Time
	if d, ok := CallBound(ctx); ok {
		t := time.NewTimer(max(time.Until(d), 0) + CallGrace)
		defer t.Stop()
		bound = t.C
	}
	select {
	case <-o.done: // sent inline: done already
		return s.finished(ctx, o, closing)
	default:
	}
	select {
	case <-o.done:
		return s.finished(ctx, o, closing)
	case <-closing:
		return errAbandoned{s.cfg.ErrClosed}
	case <-bound:
		return errAbandoned{errNoReply}
	case <-ctx.Done():
	}
	// A call that had not reached Redis yet (dialing, waiting for a
	// connection) ends with ctx, with its own reason: give it a moment, so
	// that the caller learns that reason and nothing needs settling.
	grace := time.NewTimer(endGrace)
	defer grace.Stop()
	select {
	case <-o.done:
		return s.finished(ctx, o, closing)
	case <-grace.C:
	case <-closing:
	}
	if closing != nil && s.cfg.Closed() {
		return errAbandoned{s.cfg.ErrClosed}
	}
	return errAbandoned{ctx.Err()}
}

// finished returns Exec's result for a done op: nil, or an errAbandoned
// when ctx's end or Close cut its read (runInline) before a reply came.
func (s *Sender) finished(ctx context.Context, o *Op, closing <-chan struct{}) error {
	if !o.cut || o.Outcome() != Unknown {
		return nil
	}
	if closing != nil && s.cfg.Closed() {
		return errAbandoned{s.cfg.ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return errAbandoned{err}
	}
	return nil
}

// notSent reports whether err proves that a command never reached Redis:
// it could not be sent (unreachable), or an inline call failed before a
// byte of it was written (unwrittenError). Its outcome is known.
func notSent(err error) bool {
	var uw unwrittenError
	return unreachable(err) || errors.As(err, &uw)
}

// unreachable reports whether err says that a command could not be sent:
// no connection could be made or taken from the pool, or set up (a refused
// AUTH or HELLO: go-redis returns a Redis error for a raw command only
// then, its replies being raw), or its node could not be found.
func unreachable(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		return true
	}
	var ns notSentError
	return errors.As(err, &ns) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}
