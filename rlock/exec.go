package rlock

import (
	"context"
	"errors"
	"net"
	"strconv"
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
// of two outcomes, never three (see Client.settle). Its reply comes back as
// raw RESP and is parsed here.
//
// Calls made while an earlier batch is on its way are queued and sent
// together as one pipeline (one write, one round trip, one read on the
// server), as auto-pipelining clients do; a call made while nothing is in
// flight goes out at once, alone: off a Cluster and Sentinel, in its
// caller's goroutine, on a connection of the transport's own whose read
// its ctx's end or Close interrupts, the rest of the reply then read on a
// goroutine (internal/inline, see batcher.runInline), so that an
// uncontended call costs no goroutine hand-off. A caller waits for its own
// reply, its context, or the Client's Close, whichever comes first: a call it stops
// waiting for stays in its batch and its outcome is settled later.
//
// On a Redis Cluster each master has a batcher of its own, fed with the
// calls whose key it serves and sending on go-redis's client for that node:
// a batch is one pipeline to one node, never a pipeline that go-redis
// splits and joins again. Because go-redis does not look into a raw reply,
// the redirections of a Cluster are followed here, for every call alike
// (see sender.after): MOVED (the command did not run: it is sent to the
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

// sender routes ops to batchers: the one batcher of a standalone or
// Sentinel client, one per master on a Redis Cluster.
type sender struct {
	c     *Client
	rdb   redis.UniversalClient
	nodes *cluster.Nodes // set for a Redis Cluster
	one   *batcher       // every op off a Cluster; keyless ops on one
	idle  atomic.Int64   // how long an idle flusher waits for work (a time.Duration): flusherIdle

	mu     sync.Mutex
	byAddr map[string]*batcher
	// route caches each slot's batcher (nil: ask nodes), so that a call
	// is routed by a CRC16 and an atomic load. An entry is dropped when
	// its node redirects a call of the slot or fails.
	route []atomic.Pointer[batcher]
}

func newSender(c *Client, rdb redis.UniversalClient) *sender {
	s := &sender{c: c, rdb: rdb, byAddr: make(map[string]*batcher)}
	s.idle.Store(int64(flusherIdle))
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		s.nodes = cluster.New(cc)
		s.route = make([]atomic.Pointer[batcher], 16384)
	}
	s.one = newBatcher(s, rdb, "")
	if u, ok := rdb.(*redis.Client); ok && s.nodes == nil {
		s.one.lane = inline.New(u)
	}
	return s
}

// shut ends the inline lane (Client.Close): a call in flight on it that
// Close ends is interrupted, later calls go through the flusher.
func (s *sender) shut() {
	if s.one.lane != nil {
		s.one.lane.Shut()
	}
}

// batcherFor returns the batcher of the node at addr, serving through rdb.
func (s *sender) batcherFor(rdb *redis.Client, addr string) *batcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.byAddr[addr]
	if b == nil || b.rdb != redis.UniversalClient(rdb) {
		// A node first seen, or go-redis made a new client for it.
		b = newBatcher(s, rdb, addr)
		s.byAddr[addr] = b
	}
	return b
}

// submit routes o to its batcher; done is closed when its outcome is known.
func (s *sender) submit(o *op) {
	if o.done == nil && (s.nodes != nil || s.one.lane == nil) {
		o.done = make(chan struct{})
	}
	if o.first.IsZero() {
		o.first = time.Now()
		if o.s != nil && o.s.synced && s.c.opts.sync != syncOff {
			o.sync = true
		}
	}
	if s.nodes == nil {
		s.one.add(o)
		return
	}
	key, ok := o.routeKey()
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
		rdb, err = s.nodes.Node(o.ctx, addr)
	} else {
		slot := cluster.Slot(key)
		if b := s.route[slot].Load(); b != nil {
			b.add(o)
			return
		}
		rdb, addr, err = s.nodes.Master(o.ctx, key)
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

// unroute drops the cached routes of slot (or, when slot < 0, every route
// to b), so that the next call asks nodes again.
func (s *sender) unroute(slot int, b *batcher) {
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

// submitAll routes ops; those for one batcher go together, so that they
// make one batch unless the batch in flight ends first.
func (s *sender) submitAll(ops []*op) {
	for _, o := range ops {
		if o.done == nil {
			o.done = make(chan struct{})
		}
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
func (s *sender) after(o *op, from *batcher) {
	o.asking = false
	if o.unpublished != "" {
		s.c.publishRefused(o.unpublished)
	}
	if !o.probed && o.keyRefused() {
		// Name the keys the user may not access, off the flusher. An op
		// sent inline has no done channel yet (its caller's exec reads
		// done after submit returns): give it one before going async.
		o.probed = true
		if o.done == nil {
			o.done = make(chan struct{})
		}
		go func() {
			s.c.nameRefusedKeys(o)
			s.after(o, from)
		}()
		return
	}
	if s.nodes == nil || (o.ctx.Err() != nil && !isCleanup(o.ctx)) || time.Since(o.first) > redirectBudget {
		o.markDone()
		return
	}
	var pause time.Duration
	var again bool
	if o.err != nil {
		pause, again = s.afterError(o, from)
	} else {
		pause, again = s.afterReply(o, from)
	}
	if !again {
		o.markDone()
		return
	}
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
func (s *sender) afterError(o *op, from *batcher) (pause time.Duration, again bool) {
	if errors.Is(o.err, redis.ErrClosed) && from.addr != "" {
		s.nodes.Forget(from.addr)
		s.unroute(-1, from)
		o.target = ""
		return o.nextPause(true), true
	}
	if from.addr != "" && notSent(o.err) {
		s.nodes.Forget(from.addr) // down, or gone: have go-redis look again
		s.unroute(-1, from)
	}
	return 0, false
}

// afterReply decides on an op that got a reply: a MOVED or ASK sends it on
// to the node named, a TRYAGAIN or CLUSTERDOWN (a multi-key command during
// a slot's migration, the cluster settling after a failover) sends it again
// after a pause; any other reply is its outcome.
func (s *sender) afterReply(o *op, from *batcher) (pause time.Duration, again bool) {
	e, ok := o.v.(replyError)
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
	if !hasPrefix(string(e), "TRYAGAIN") && !hasPrefix(string(e), "CLUSTERDOWN") {
		return 0, false
	}
	o.target = ""
	return o.nextPause(true), true
}

// nextPause returns the pause before an op is sent on: none for the first
// immediateHops redirections in a row (unless wait is set), then growing.
func (o *op) nextPause(wait bool) time.Duration {
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

// batcher sends ops to one Redis node (or through one go-redis client),
// batching those that arrive while a batch is in flight.
type batcher struct {
	s    *sender
	rdb  redis.UniversalClient
	addr string // the node's address on a Redis Cluster, else ""

	// replicas is the number of replicas the node reported (-1: not asked
	// yet, or to be asked again), for Redisson's replica sync; noWait is
	// set once the node answered WAIT with "unknown command".
	replicas syncState

	// lane sends a call in its caller's goroutine when the batcher is idle
	// (nil: never; see runInline).
	lane *inline.Lane

	mu      sync.Mutex
	queue   []*op
	spare   []*op // the previous batch's slice, reused for the next queue
	busy    bool  // the flusher is sending (or about to send) batches
	inline  bool  // a caller is sending its call on lane
	running bool  // the flusher goroutine exists
	wake    chan struct{}
}

func newBatcher(s *sender, rdb redis.UniversalClient, addr string) *batcher {
	b := &batcher{s: s, rdb: rdb, addr: addr, wake: make(chan struct{}, 1)}
	b.replicas.n.Store(-1)
	return b
}

// add sends o in its caller's goroutine when the batcher is idle, else
// queues it.
func (b *batcher) add(o *op) {
	b.mu.Lock()
	if b.lane != nil && !b.busy && !b.inline && !o.sync && !o.asking && !o.bounded() {
		b.inline = true
		b.mu.Unlock()
		b.runInline(o)
		return
	}
	if o.done == nil {
		o.done = make(chan struct{})
	}
	b.queue = append(b.queue, o)
	b.kick()
}

// runInline sends o, in its caller's goroutine, on the lane (inline was
// set for it); calls made meanwhile queue, and are handed to the flusher
// when it is done. The caller's ctx end, or Close, interrupts the read:
// the call is then cut (its outcome unknown, settled as a lost reply's)
// and exec reports it abandoned.
func (b *batcher) runInline(o *op) {
	_, byDeadline := o.ctx.(deadlineOnly)
	if !b.lane.Begin(o.ctx, b.s.c.closing(o.ctx) != nil, byDeadline) {
		// Closed: through the flusher, as a clean-up after Close goes.
		b.mu.Lock()
		b.inline = false
		if o.done == nil {
			o.done = make(chan struct{})
		}
		b.queue = append(b.queue, o)
		b.kick()
		return
	}
	rdb := b.lane.Client()
	for _, eval := range []bool{false, true} {
		cmd := o.command(eval)
		_ = rdb.Process(o.ctx, cmd)
		o.finish(cmd.Err())
		if !o.noScript() {
			break
		}
	}
	var tail *inline.Tail
	o.cut, tail = b.lane.End(o.err != nil && !notSent(o.err))
	if tail != nil {
		// The caller leaves (exec: abandoned); its reply is still read,
		// here, so that it is settled as any abandoned call's is.
		o.done = make(chan struct{})
	}
	b.mu.Lock()
	b.inline = false
	if len(b.queue) > 0 {
		b.kick()
	} else {
		b.mu.Unlock()
	}
	if tail == nil {
		b.s.after(o, b)
		return
	}
	go func() {
		raw, err := tail.Read(func(p []byte) bool {
			_, _, err := parseValue(p)
			return !errors.Is(err, errShortReply)
		})
		o.raw = raw
		if err == nil {
			o.finish(nil)
		}
		b.s.after(o, b)
	}()
}

// addAll queues ops together.
func (b *batcher) addAll(ops []*op) {
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
		case <-b.s.c.done:
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
func (b *batcher) run(batch []*op) {
	var synced []*op
	plain := batch
	if b.s.c.opts.sync != syncOff {
		plain = plain[:0:0]
		for _, o := range batch {
			if o.sync && b.replicas.wanted(b.s.c.opts) {
				synced = append(synced, o)
			} else {
				o.sync = false
				plain = append(plain, o)
			}
		}
		if len(synced) > 0 {
			go b.runSynced(synced)
		}
	}
	if len(plain) == 0 {
		return
	}
	b.send(plain, false)
	var again []*op
	for _, o := range plain {
		if o.noScript() {
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
func (b *batcher) send(ops []*op, eval bool) {
	if len(ops) == 1 && !ops[0].asking {
		// Alone, the op may use its caller's ctx: go-redis then stops
		// dialing (or waiting for a pooled connection) when it ends, and
		// says why, without sending anything. Once sent, go-redis bounds the
		// call by ctx only with ContextTimeoutEnabled; the outcome tells.
		o := ops[0]
		cmd := o.command(eval)
		_ = b.rdb.Process(o.ctx, cmd)
		o.finish(cmd.Err())
		return
	}
	ctx := context.WithoutCancel(ops[0].ctx)
	cmds := make([]*redis.RawWriteToCmd, len(ops))
	pipe := b.rdb.Pipeline()
	for i, o := range ops {
		if o.asking {
			_ = pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
		}
		cmds[i] = o.command(eval)
		_ = pipe.Process(ctx, cmds[i])
	}
	_, _ = pipe.Exec(ctx)
	for i, o := range ops {
		o.finish(cmds[i].Err())
	}
}

// runSynced sends ops that want replica sync as one pipeline with WAIT (for
// the replicas the node reports, or WithReplicaSync's count) after them, on
// one connection, records WAIT's count in each, and passes them on.
func (b *batcher) runSynced(ops []*op) {
	opts := b.s.c.opts
	ctx := context.WithoutCancel(ops[0].ctx)
	want := opts.syncReplicas
	if opts.sync == syncAuto {
		n, err := b.replicas.count(ctx, b.rdb)
		if err != nil || n == 0 {
			// Not known (the node did not answer INFO: the scripts will
			// tell), or no replica to wait for: no WAIT.
			for _, o := range ops {
				o.sync = false
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
func (b *batcher) sendSynced(ctx context.Context, ops []*op, want int) {
	for _, eval := range []bool{false, true} {
		pipe := b.rdb.Pipeline()
		cmds := make([]*redis.RawWriteToCmd, len(ops))
		for i, o := range ops {
			if o.asking {
				_ = pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
			}
			cmds[i] = o.command(eval)
			_ = pipe.Process(ctx, cmds[i])
		}
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
		var again []*op
		for _, o := range ops {
			if o.noScript() {
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
	d := b.s.c.opts.syncTimeout
	if c, ok := b.rdb.(*redis.Client); ok {
		rt := c.Options().ReadTimeout
		if rt > 0 && d > rt*3/4 {
			d = max(rt*3/4, time.Millisecond)
		}
	}
	return d
}

// waited records WAIT's answer in the ops it followed.
func (b *batcher) waited(ctx context.Context, ops []*op, want int, wait *redis.IntCmd) {
	n, err := wait.Result()
	var re redis.Error
	if errors.As(err, &re) && hasPrefix(re.Error(), "ERR unknown command") {
		// Redisson stops sending WAIT to a server that does not know it
		// (some proxies and managed services).
		b.replicas.noWait.Store(true)
		b.s.c.logger().Warn("goredisson: the server does not know WAIT; replica sync is off for it", "node", b.addr, "err", err)
		for _, o := range ops {
			o.sync = false
		}
		return
	}
	if err != nil {
		n = 0 // not confirmed
	}
	if b.s.c.opts.sync == syncAuto && n != int64(want) {
		// As Redisson: the replica count may have changed; ask again
		// before the next WAIT. When none confirmed, ask now: a master
		// that has lost its replicas (a failover left it alone) has
		// nothing to confirm.
		b.replicas.n.Store(-1)
		if n == 0 {
			if fresh, err := b.replicas.count(ctx, b.rdb); err == nil && fresh == 0 {
				want = 0
			}
		}
	}
	for _, o := range ops {
		o.synced, o.syncWant = n, want
	}
}

// endGrace is how long a caller whose ctx ended still waits for its call's
// own outcome.
const endGrace = 5 * time.Millisecond

// callGrace is how long past the end of its wait (or past its send, when
// the wait has ended) a call made for a wait is waited for (see boundCalls).
const callGrace = 250 * time.Millisecond

// errNoReply is the reason of a call abandoned at its wait's bound.
var errNoReply = errors.New("no reply from Redis within the wait")

// callBoundKey is the context key of boundCalls.
type callBoundKey struct{}

// bounded reports whether o belongs to a bounded wait (boundCalls): such a
// call is never sent inline, where only ctx's end or Close can interrupt
// its I/O, but through the flusher, so that exec can leave it at its bound
// while a dial or a hung server holds it.
func (o *op) bounded() bool {
	if o.ctx == nil {
		return false
	}
	_, ok := callBound(o.ctx)
	return ok
}

// boundCalls marks ctx as serving a wait that ends at deadline (zero: no
// bound): exec gives each call up to callGrace past it (and at least
// callGrace), so that a dial or a server that hangs cannot hold a wait far
// past its end, whatever go-redis's timeouts are. A call given up is
// abandoned (settled as any lost reply).
func boundCalls(ctx context.Context, deadline time.Time) context.Context {
	if deadline.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, callBoundKey{}, deadline)
}

// unbound returns ctx without the call bound boundCalls put on it
// (context.WithoutCancel keeps values, so a clean-up must drop it).
func unbound(ctx context.Context) context.Context {
	if _, ok := callBound(ctx); !ok {
		return ctx
	}
	return context.WithValue(ctx, callBoundKey{}, time.Time{})
}

// callBound returns the bound boundCalls put on ctx, if any.
func callBound(ctx context.Context) (time.Time, bool) {
	d, ok := ctx.Value(callBoundKey{}).(time.Time)
	return d, ok && !d.IsZero()
}

// errAbandoned marks a call its caller stopped waiting for: its outcome is
// unknown to the caller. It wraps the reason: ctx's error or ErrClosed.
type errAbandoned struct{ reason error }

func (e errAbandoned) Error() string { return e.reason.Error() }
func (e errAbandoned) Unwrap() error { return e.reason }

// abandoned reports whether err marks an abandoned call, and its reason.
func abandoned(err error) (reason error, ok bool) {
	if err == nil {
		return nil, false
	}
	var ab errAbandoned
	if errors.As(err, &ab) {
		return ab.reason, true
	}
	return nil, false
}

// exec sends o and waits for its outcome, ctx's end or the Client's Close
// (a clean-up, see cleanupCtx, is not ended by Close).
// It returns nil once o is done (see op.outcome), else an errAbandoned.
func (c *Client) exec(ctx context.Context, o *op) error {
	closing := c.closing(ctx)
	if closing != nil && c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.resolveMode(ctx); err != nil {
		return err
	}
	c.send.submit(o)
	var bound <-chan time.Time
	if d, ok := callBound(ctx); ok {
		t := time.NewTimer(max(time.Until(d), 0) + callGrace)
		defer t.Stop()
		bound = t.C
	}
	select {
	case <-o.done: // sent inline: done already
		return c.finished(ctx, o, closing)
	default:
	}
	select {
	case <-o.done:
		return c.finished(ctx, o, closing)
	case <-closing:
		return errAbandoned{ErrClosed}
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
		return c.finished(ctx, o, closing)
	case <-grace.C:
	case <-closing:
	}
	if closing != nil && c.closed.Load() {
		return errAbandoned{ErrClosed}
	}
	return errAbandoned{ctx.Err()}
}

// finished returns exec's result for a done op: nil, or an errAbandoned
// when ctx's end or Close cut its read (runInline) before a reply came.
func (c *Client) finished(ctx context.Context, o *op, closing <-chan struct{}) error {
	if !o.cut || o.outcome() != unknown {
		return nil
	}
	if closing != nil && c.closed.Load() {
		return errAbandoned{ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return errAbandoned{err}
	}
	return nil
}

// command runs a plain command (a read, or one that is safe to lose) and
// returns its parsed reply: an error reply or a lost one is an error.
func (c *Client) command(ctx context.Context, args ...any) (any, error) {
	return c.run(ctx, newOp(ctx, args...))
}

// commandInt runs a command whose reply is an integer (nil reads as 0).
func (c *Client) commandInt(ctx context.Context, args ...any) (int64, error) {
	v, err := c.command(ctx, args...)
	if err != nil {
		return 0, err
	}
	switch r := v.(type) {
	case nil:
		return 0, nil
	case int64:
		return r, nil
	case string:
		return strconv.ParseInt(r, 10, 64)
	}
	return 0, errUnexpected(v)
}

// notSent reports whether err proves that a command never reached Redis: no
// connection could be made or taken from the pool, or set up (a refused
// AUTH or HELLO: go-redis returns a Redis error for a raw command only
// then, its replies being raw), or its node could not be found. Its
// outcome is known.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		return true
	}
	var ns notSentError
	return errors.As(err, &ns) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}
