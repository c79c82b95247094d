package transport

import (
	"context"
	"errors"

	"github.com/goredisson/goredisson/internal/inline"
)

// A batch on a lane (sendOnLane, called by sendBatch): the ops written as
// RESP on the lane's kept connection, every command in one write and every
// reply read after it (directOps: inline.Lane.Do, the direct path's; the
// replies are told apart by replies.complete), or, while the lane keeps no
// connection, as one pipeline through the lane's go-redis client, whose
// connection the lane then keeps (pipeOnLane). A lone op goes as an inline
// call does (callOnLane), with its caller's ctx. What a lane's connection
// wrote tells which ops never reached Redis (inline.Lane.Written): they
// are NotRun.

// sendBuf is what one writer of commands (a flusher, or the caller
// sending inline) writes them in: the commands' bytes, where each op's
// start (its ASKING first, if any), and the replies read.
type sendBuf struct {
	cmd    []byte
	starts []int
	rep    replies
	// claimOps are the ops the lane's next write is of, claimFn its claim
	// (see claim.go), took claim's scratch.
	claimOps []*Op
	claimFn  func() bool
	took     []*Op
}

// askingCmd is ASKING, written before an op redirected by ASK.
var askingCmd, _ = AppendCommand(nil, []any{"asking"})

// sendOnLane sends ops on lane (see sendBatch) and returns the Tail of a
// lone op cut after its command went out, and the ops it did not send: all
// of them when the lane is shut, those whose dial on Sentinel reached
// another server (sentinelWatch.moved); the caller sends those through
// go-redis's pool.
func (b *batcher) sendOnLane(buf *sendBuf, lane *inline.Lane, ops []*Op) (tail *inline.Tail, unsent []*Op) {
	if len(ops) == 1 && !ops[0].asking {
		return b.loneOnLane(buf, lane, ops)
	}
	// A batch is not cut: the callers whose ctx ends leave it (Exec), and
	// their ops' outcomes are read with the others'.
	if !lane.Begin(context.Background(), false, false) {
		return nil, ops
	}
	opsOnLane(buf, lane, ops, false)
	if again := noScripts(ops); len(again) > 0 {
		opsOnLane(buf, lane, again, true)
	}
	lane.End(false)
	return nil, b.movedOn(lane, ops)
}

// loneOnLane sends ops[0], a lone op, on lane as an inline call goes (see
// runInline): its ctx's end cuts it (not Close: the flusher's calls are
// bounded by go-redis's timeouts, as its pipelines are).
func (b *batcher) loneOnLane(buf *sendBuf, lane *inline.Lane, ops []*Op) (*inline.Tail, []*Op) {
	o := ops[0]
	_, byDeadline := o.Ctx.(DeadlineOnly)
	if !lane.Begin(o.Ctx, false, byDeadline) {
		return nil, ops
	}
	buf.claimOn(lane, ops)
	b.callOnLane(buf, o, lane)
	buf.claimOps = nil
	tail := endCall(o, lane)
	if tail == nil && !o.cut {
		return nil, b.movedOn(lane, ops)
	}
	return tail, nil
}

// opsOnLane sends ops once (EVALSHA, or EVAL with eval), on the lane's
// kept connection or through its go-redis client, and records their
// outcomes. A write refused because a caller withdrew its op meanwhile
// (sendBuf.claim: nothing was written) goes again without it.
func opsOnLane(buf *sendBuf, lane *inline.Lane, ops []*Op, eval bool) {
	for len(ops) > 0 {
		lane.Unsent()
		buf.claimOn(lane, ops)
		if !directOps(context.Background(), buf, lane, ops, eval, nil) {
			pipeOnLane(lane, ops, eval)
		}
		if !lane.Refused() {
			break
		}
		ops = unwithdrawn(ops)
	}
	buf.claimOps = nil
}

// directOps writes ops' commands (each after ASKING when an ASK redirected
// it) in one write on lane's kept connection and reads their replies
// (inline.Lane.Do), and reports whether it did; if not, nothing was sent.
// Each op gets its own reply, in order, the RESP3 pushes before it
// skipped; an op with no whole reply gets Do's error, as NotRun
// (unwrittenError) when no byte of its command was written. Bytes read
// past the last reply (a push) drop the connection (Lane.Discard).
//
// With fence (the kept connection's, see batcher.fenceFor; nil for a
// batch), an op whose script reads the cancel floor (Op.MarkFloor) goes
// out with its call number as "f<n>", reading no floor, and Op.Fenced
// names the connection.
func directOps(ctx context.Context, buf *sendBuf, lane *inline.Lane, ops []*Op, eval bool, fence *Fence) bool {
	cmd, starts, n := buf.cmd[:0], buf.starts[:0], 0
	for _, o := range ops {
		o.fence = nil
		starts = append(starts, len(cmd))
		if o.asking {
			cmd = append(cmd, askingCmd...)
			n++
		}
		at := -1
		if fence != nil && o.floorAt != 0 {
			at = o.floorAt
		}
		var ok bool
		cmd, ok = appendCommand(cmd, o.line(eval), at)
		n++
		if !ok {
			buf.cmd, buf.starts = cmd, starts
			return false
		}
	}
	buf.cmd, buf.starts = cmd, starts
	buf.rep.reset(n)
	raw, err, handled := lane.Do(ctx, cmd, buf.rep.complete)
	if !handled {
		return false
	}
	if lane.Refused() {
		return true // an op was withdrawn: nothing was written (opsOnLane)
	}
	if fence != nil {
		for _, o := range ops {
			if o.floorAt != 0 {
				o.fence = fence
			}
		}
	}
	recordReplies(buf, lane, ops, raw, err)
	return true
}

// recordReplies records each op's outcome from raw, the bytes Do read for
// them (err: Do's error, when it read no whole reply for every one).
func recordReplies(buf *sendBuf, lane *inline.Lane, ops []*Op, raw []byte, err error) {
	rep := &buf.rep
	j := 0 // the op's reply among the replies read
	for i, o := range ops {
		if o.asking {
			j++ // ASKING's reply: the op's own comes next, whatever it is
		}
		if !o.take() {
			// Withdrawn, so not written (a write is claimed first: a
			// refused one records nothing). Never met: a safety net.
			j++
			continue
		}
		switch {
		case j < len(rep.spans):
			sp := rep.spans[j]
			o.raw = append(o.small[:0], raw[sp.from:sp.to]...)
			o.finish(nil)
		case rep.bad != nil:
			o.finish(rep.bad) // bytes that are no reply: unknown
		case err == nil:
			o.finish(errShortReply)
		case buf.starts[i] >= lane.Written():
			o.finish(unwrittenError{err})
		default:
			o.finish(err)
		}
		j++
	}
	if rep.bad != nil || (err == nil && rep.off < len(raw)) {
		lane.Discard()
	}
}

// pipeOnLane sends ops through the lane's go-redis client, as one pipeline
// (the lane keeps no connection yet, or keeps none: TLS, a
// StreamingCredentialsProvider), and has the lane keep the connection it
// used when the pipeline went well (Adopt). Ops that failed with nothing
// written on a connection set up (Lane.Sent: a new connection's HELLO or
// AUTH unanswered) are NotRun (unwrittenError). A write refused because an
// op was withdrawn (see opsOnLane) records nothing.
func pipeOnLane(lane *inline.Lane, ops []*Op, eval bool) {
	ctx := context.WithoutCancel(ops[0].Ctx)
	pipe := lane.Client().Pipeline()
	cmds := pipeOps(ctx, pipe, ops, eval)
	_, err := pipe.Exec(ctx)
	if lane.Refused() {
		return
	}
	sent := lane.Sent()
	for i, o := range ops {
		e := cmds[i].Err()
		if e != nil && !sent && !notSent(e) {
			e = unwrittenError{e}
		}
		o.finish(e)
	}
	if err == nil {
		lane.Adopt()
	}
}

// movedOn returns the ops sent on a Sentinel lane whose dial reached
// another server (nothing was sent; they go through go-redis's pool), after
// which, or after a READONLY reply, the lane is dropped (see
// sentinelWatch.moved). Off Sentinel: none.
func (b *batcher) movedOn(lane *inline.Lane, ops []*Op) []*Op {
	if b.s.watch == nil {
		return nil
	}
	var again []*Op
	for _, o := range ops {
		if o.mine() && b.s.watch.moved(o, lane) {
			again = append(again, o)
		}
	}
	return again
}

// replies finds the whole replies among the bytes read for commands
// written at once: complete is inline.Lane.Do's (it goes on from where its
// last call stopped, the bytes having only grown since), spans holds each
// reply's bytes (without the RESP3 pushes before it), off where the last
// one ends, bad the error of bytes that are no reply.
type replies struct {
	want  int
	off   int
	spans []span
	bad   error
}

// span is one reply's bytes among those read.
type span struct{ from, to int }

// reset readies r for want replies.
func (r *replies) reset(want int) {
	r.want, r.off, r.spans, r.bad = want, 0, r.spans[:0], nil
}

// complete reports whether b holds every reply r wants (or bytes that are
// no reply: r.bad), recording those it finds.
func (r *replies) complete(b []byte) bool {
	for len(r.spans) < r.want && r.bad == nil {
		body, rest, err := replyBody(b[r.off:])
		if errors.Is(err, errShortReply) {
			return false
		}
		if err != nil {
			r.bad = err
			return true
		}
		to := len(b) - len(rest)
		r.spans = append(r.spans, span{to - len(body), to})
		r.off = to
	}
	return true
}
