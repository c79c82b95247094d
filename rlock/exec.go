package rlock

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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
// flight goes out at once, alone. A caller waits for its own reply, its
// context, or the Client's Close, whichever comes first: a call it stops
// waiting for stays in its batch and its outcome is settled later.

// batcher sends ops to Redis, batching those that arrive while a batch is
// in flight.
type batcher struct {
	rdb     redis.UniversalClient
	cluster *redis.ClusterClient // rdb, when it is a Redis Cluster client

	mu      sync.Mutex
	queue   []*op
	spare   []*op // the previous batch's slice, reused for the next queue
	busy    bool  // the flusher is sending (or about to send) batches
	running bool  // the flusher goroutine exists
	wake    chan struct{}
}

// submit queues o; done is closed when its outcome is known.
func (b *batcher) submit(o *op) {
	if o.sync > 0 {
		go b.runSynced(o)
		return
	}
	b.mu.Lock()
	b.queue = append(b.queue, o)
	b.kick()
}

// submitAll queues ops together, so that they go out in one batch unless
// the batch in flight ends first.
func (b *batcher) submitAll(ops []*op) {
	b.mu.Lock()
	b.queue = append(b.queue, ops...)
	b.kick()
}

// kick has the flusher send the queue unless it is at it already. Called
// with mu held; it unlocks.
func (b *batcher) kick() {
	if b.busy {
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
// ends (the next call starts it again).
const flusherIdle = 200 * time.Millisecond

// loop is the flusher goroutine: it sends batches while there are any,
// then waits for the next kick. A goroutine that stays (rather than one per
// batch) saves the caller a goroutine start and an OS thread wake-up per
// call, which on a small machine costs as much as the round trip.
func (b *batcher) loop() {
	idle := time.NewTimer(flusherIdle)
	defer idle.Stop()
	for {
		b.flush()
		idle.Reset(flusherIdle)
		select {
		case <-b.wake:
			continue
		case <-idle.C:
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
		for i, o := range batch {
			close(o.done)
			batch[i] = nil
		}
		b.mu.Lock()
		b.spare = batch[:0]
		b.mu.Unlock()
	}
}

// run sends a batch (alone or as one pipeline) and records every outcome;
// scripts the server did not have cached are sent again with their source.
func (b *batcher) run(batch []*op) {
	b.send(batch, false)
	var again []*op
	for _, o := range batch {
		if o.noScript() {
			again = append(again, o)
		}
	}
	if len(again) > 0 {
		b.send(again, true)
	}
	b.reloadOnMoved(batch)
}

// send writes the ops as one pipeline (a lone op as a plain command) and
// records their outcomes.
func (b *batcher) send(ops []*op, eval bool) {
	if len(ops) == 1 {
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
		cmds[i] = o.command(eval)
		_ = pipe.Process(ctx, cmds[i])
	}
	_, _ = pipe.Exec(ctx)
	for i, o := range ops {
		o.finish(cmds[i].Err())
	}
}

// runSynced sends a WithReplicaSync op with WAIT right after it, on the same
// connection, and closes its done channel.
func (b *batcher) runSynced(o *op) {
	defer close(o.done)
	for _, eval := range []bool{false, true} {
		ctx := context.WithoutCancel(o.ctx)
		pipe := b.rdb.Pipeline()
		cmd := o.command(eval)
		_ = pipe.Process(ctx, cmd)
		wait := pipe.Do(ctx, "wait", o.sync, o.syncMs)
		_, _ = pipe.Exec(ctx)
		o.finish(cmd.Err())
		o.synced, _ = wait.Int64()
		if !o.noScript() {
			return
		}
	}
}

// reloadOnMoved asks a cluster client to reload its slot map when Redis
// redirected an op (the op was not run; its caller tries again).
func (b *batcher) reloadOnMoved(ops []*op) {
	if b.cluster == nil {
		return
	}
	for _, o := range ops {
		if e, ok := o.v.(replyError); ok && (hasPrefix(string(e), "MOVED") || hasPrefix(string(e), "ASK")) {
			b.cluster.ReloadState(context.WithoutCancel(o.ctx))
			return
		}
	}
}

// endGrace is how long a caller whose ctx ended still waits for its call's
// own outcome.
const endGrace = 5 * time.Millisecond

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
	c.batch.submit(o)
	select {
	case <-o.done:
		return nil
	case <-closing:
		return errAbandoned{ErrClosed}
	case <-ctx.Done():
	}
	// A call that had not reached Redis yet (dialing, waiting for a
	// connection) ends with ctx, with its own reason: give it a moment, so
	// that the caller learns that reason and nothing needs settling.
	grace := time.NewTimer(endGrace)
	defer grace.Stop()
	select {
	case <-o.done:
		return nil
	case <-grace.C:
	case <-closing:
	}
	if closing != nil && c.closed.Load() {
		return errAbandoned{ErrClosed}
	}
	return errAbandoned{ctx.Err()}
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
// connection could be made or taken from the pool. Its outcome is known.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}
