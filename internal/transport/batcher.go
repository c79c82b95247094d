package transport

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/inline"
)

// The batcher of one node, its queue and its flusher. An op added while
// the batcher is idle goes inline (add, in lane.go); the others queue, and
// the flusher goroutine (loop, started by kick, ended flusherIdle after its
// last batch) sends the queue as batches: in each, the ops that want WAIT
// go to the sync goroutine (replica.go), the others through sendBatch, the
// one function that writes a batch on the node's connection and records
// its outcomes.

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

// run sends a batch: the ops that want replica sync go to the WAIT
// pipeline (splitSynced), the others as one batch (sendBatch); then each of
// those is passed on (Sender.after: done, or sent on after a redirection).
// It keeps nothing of batch: flush reuses the slice.
func (b *batcher) run(batch []*Op) {
	plain := b.splitSynced(batch)
	if len(plain) == 0 {
		return
	}
	b.sendBatch(plain)
	for _, o := range plain {
		b.s.after(o, b)
	}
}

// sendBatch is the flusher's send of one batch, the one place where a batch
// meets the node's connection. ops (one or more, for this batcher's node,
// none wanting WAIT) go as one pipeline (a lone op as a plain command, see
// send); the scripts the node had not cached (NOSCRIPT) then go once more,
// with their source. It returns once every op has its outcome recorded
// (Op.finish: its reply in V, or no reply in Err); no op is done yet nor
// passed on (run does that), and it keeps nothing of ops.
func (b *batcher) sendBatch(ops []*Op) {
	b.send(ops, false)
	var again []*Op
	for _, o := range ops {
		if o.NoScript() {
			again = append(again, o)
		}
	}
	if len(again) > 0 {
		b.send(again, true)
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
