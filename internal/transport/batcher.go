package transport

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/inline"
)

// The batcher of one node, its queue and its flushers. An op added while
// the batcher is idle goes inline (add, in lane.go); the others queue, and
// a flusher goroutine (loop, started by kick, ended flusherIdle after its
// last batch) sends the queue as batches: in each, the ops that want WAIT
// go to the sync goroutine (replica.go), the others through sendBatch, the
// one function that writes a batch on a connection and records its
// outcomes. A batcher has up to maxBatches flushers, each sending on a lane
// (connection) of its own, so that while one batch's replies are on their
// way (or being handed to their callers) the calls queued meanwhile go out
// as the next: a second flusher starts only when the first is busy and
// calls wait (flusher 0 shares the inline calls' lane, never at the same
// time).

// maxBatches is how many batches a batcher has in flight at most (one per
// flusher and lane; an inline call takes flusher 0's lane).
const maxBatches = 2

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
	// (nil: never; see runInline), and flusher 0's batches; more holds
	// the lanes of flushers 1 and on (nil: flusher 0 alone). On one server,
	// per node on a Cluster, and to the primary on Sentinel (swapped under
	// mu: swapLane). A flusher with no lane, or whose lane is shut, sends
	// through rdb (go-redis's pool).
	lane *inline.Lane
	more []*inline.Lane
	// ibuf holds the command runDirect writes for the caller sending
	// inline.
	ibuf sendBuf

	mu      sync.Mutex
	cur     *inline.Lane // the lane the call in flight inline uses
	queue   []*Op
	spare   []*Op // a previous batch's slice, reused for the next queue
	inline  bool  // a caller is sending its call on lane
	retired bool  // go-redis replaced the node's client: lane is shut (once idle)
	fl      [maxBatches]flusher
	// syncQ holds the ops that want replica sync while a synced pipeline
	// is in flight (syncing): they go together in the next one, so that a
	// node has at most one WAIT pipeline, and one connection for it, in
	// flight per batcher.
	syncQ   []*Op
	syncing bool
}

// flusher is one flusher of a batcher: its state (under batcher.mu) and,
// for its goroutine alone, the buffers of the batches it writes.
type flusher struct {
	busy    bool // sending (or about to send) batches
	running bool // its goroutine exists
	batches int  // batches sent (tests)
	wake    chan struct{}
	buf     sendBuf
}

func newBatcher(s *Sender, rdb redis.UniversalClient, addr string) *batcher {
	b := &batcher{s: s, rdb: rdb, addr: addr}
	for i := range b.fl {
		b.fl[i].wake = make(chan struct{}, 1)
	}
	b.replicas.n.Store(-1)
	return b
}

// addAll queues ops together.
func (b *batcher) addAll(ops []*Op) {
	b.mu.Lock()
	b.queue = append(b.queue, ops...)
	b.kick()
}

// kick has a flusher send the queue unless every one that may is at it
// already (one of those takes it when its batch is done). Called with mu
// held; it unlocks.
func (b *batcher) kick() {
	i := b.idleFlusher()
	if i < 0 {
		b.mu.Unlock()
		return
	}
	f := &b.fl[i]
	f.busy = true
	if !f.running {
		f.running = true
		b.mu.Unlock()
		go b.loop(i)
		return
	}
	b.mu.Unlock()
	f.wake <- struct{}{}
}

// idleFlusher returns the flusher to send the queue: the first that is not
// busy and whose lane is free (flusher 0's is not while a caller sends
// inline on it); flusher i > 0 only when the batcher has its lane. -1: none.
// Called with mu held.
func (b *batcher) idleFlusher() int {
	for i := range b.fl {
		if i > len(b.more) {
			break
		}
		if !b.fl[i].busy && (i > 0 || !b.inline) {
			return i
		}
	}
	return -1
}

// flusherIdle is how long a flusher goroutine waits for work before it
// ends (the next call starts it again); Close ends it at once.
const flusherIdle = 200 * time.Millisecond

// loop is flusher i's goroutine: it sends batches while there are any,
// then waits for the next kick. A goroutine that stays (rather than one per
// batch) saves the caller a goroutine start and an OS thread wake-up per
// call, which on a small machine costs as much as the round trip.
func (b *batcher) loop(i int) {
	f := &b.fl[i]
	idle := time.NewTimer(time.Duration(b.s.idle.Load()))
	defer idle.Stop()
	for {
		b.flush(i)
		idle.Reset(time.Duration(b.s.idle.Load()))
		select {
		case <-f.wake:
			continue
		case <-idle.C:
		case <-b.s.cfg.Done:
			// The Client is closed: end now, not flusherIdle later (a
			// call made after Close starts a flusher that ends at once).
		}
		b.mu.Lock()
		if f.busy {
			// A kick came as the timer fired: its wake is on its way.
			b.mu.Unlock()
			<-f.wake
			continue
		}
		f.running = false
		b.mu.Unlock()
		return
	}
}

// flush has flusher i send batches until the queue is empty, then clears
// its busy.
func (b *batcher) flush(i int) {
	f := &b.fl[i]
	for {
		b.mu.Lock()
		batch := b.queue
		if len(batch) == 0 {
			f.busy = false
			b.mu.Unlock()
			return
		}
		b.queue, b.spare = b.spare[:0], nil
		lane := b.laneOf(i)
		b.mu.Unlock()

		b.run(f, lane, batch)
		for i := range batch {
			batch[i] = nil
		}
		b.mu.Lock()
		b.spare = batch[:0]
		f.batches++
		b.mu.Unlock()
	}
}

// laneOf returns flusher i's lane (nil: none). Called with mu held.
func (b *batcher) laneOf(i int) *inline.Lane {
	if i == 0 {
		return b.lane
	}
	if i <= len(b.more) {
		return b.more[i-1]
	}
	return nil
}

// run sends a batch: the ops that want replica sync go to the WAIT
// pipeline (splitSynced), the others as one batch (sendBatch, on lane when
// it is not nil); then each of those is passed on (Sender.after: done, or
// sent on after a redirection), or, a lone op cut after its command went
// out, its reply is read on (readTail). It keeps nothing of batch: flush
// reuses the slice.
func (b *batcher) run(f *flusher, lane *inline.Lane, batch []*Op) {
	// The ops their callers withdrew before a flusher took them are left
	// out (claim.go).
	plain := b.splitSynced(unwithdrawn(batch))
	if len(plain) == 0 {
		return
	}
	if tail := b.sendBatch(&f.buf, lane, plain); tail != nil {
		go b.readTail(plain[0], tail)
		return
	}
	for _, o := range plain {
		if o.take() { // not withdrawn (claim.go)
			b.s.after(o, b)
		}
	}
}

// sendBatch is a flusher's send of one batch, the one place where a batch
// meets a connection. ops (one or more, for this batcher's node, none
// wanting WAIT) go on lane (sendOnLane, lanebatch.go: written as RESP on
// the lane's kept connection, or through the lane's go-redis client while
// it keeps none), or, with no lane or one that refused them (shut, or on
// Sentinel a dial that reached another server), through the node's
// go-redis client (sendPooled): as one pipeline (a lone op as a plain
// command, on a lane with its caller's ctx, whose end cuts it as an inline
// call's); the scripts the node had not cached (NOSCRIPT) then go once
// more, with their source. An op that failed before a byte of its command
// was written on a lane is NotRun (unwrittenError). It returns once every
// op has its outcome recorded (Op.finish: its reply in V, or no reply in
// Err), with a Tail when a lone op was cut after its command went out (the
// rest of its reply is to be read: readTail); no op is done yet nor passed
// on (run does that), and it keeps nothing of ops. buf is the caller's
// (a flusher's) to write in.
func (b *batcher) sendBatch(buf *sendBuf, lane *inline.Lane, ops []*Op) *inline.Tail {
	if lane != nil {
		var tail *inline.Tail
		if tail, ops = b.sendOnLane(buf, lane, ops); len(ops) == 0 {
			return tail
		}
	}
	b.sendPooled(ops)
	return nil
}

// sendPooled sends ops through the node's go-redis client (see send), then
// once more with their source the scripts the node had not cached.
func (b *batcher) sendPooled(ops []*Op) {
	if ops = takeAll(ops); len(ops) == 0 {
		return // withdrawn, all of them
	}
	b.send(ops, false)
	if again := noScripts(ops); len(again) > 0 {
		b.send(again, true)
	}
}

// noScripts returns the ops of ops that came back NOSCRIPT (nil: none).
func noScripts(ops []*Op) []*Op {
	var again []*Op
	for _, o := range ops {
		if o.mine() && o.NoScript() {
			again = append(again, o)
		}
	}
	return again
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
