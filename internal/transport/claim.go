package transport

import "github.com/goredisson/goredisson/internal/inline"

// Whose a queued op is (issue 39 item 4 for batches). A caller that stops
// waiting (its ctx's end, Close, its wait's bound) while its op has not
// been written withdraws it (Op.withdraw): its outcome is NotRun, and no
// flusher touches it again. A flusher takes an op (Op.take) before it
// writes its command where a write cannot be refused (go-redis's pool: its
// WAIT pipeline, a batch with no lane), and on a lane at the write itself
// (sendBuf.claim, asked by inline.Lane before the first byte of the
// batch's commands goes out on a connection set up: a new connection's
// dial, HELLO and AUTH come before it, and a call withdrawn meanwhile was
// never written); it takes any op before recording its outcome (finish).
// A caller whose op was taken leaves it abandoned: it may have run.

// The states of Op.state.
const (
	opFree      int32 = iota // queued: its caller may withdraw it
	opTaken                  // a flusher's: written, or about to be, or its outcome recorded
	opWithdrawn              // its caller's: never written, NotRun
)

// take makes o the flusher's, unless its caller withdrew it (false).
func (o *Op) take() bool {
	return o.state.CompareAndSwap(opFree, opTaken) || o.state.Load() == opTaken
}

// mine reports whether o was taken (not withdrawn): once its outcome was
// recorded (or it was withdrawn), its flusher reads it only then.
func (o *Op) mine() bool { return o.state.Load() == opTaken }

// withdraw ends o, which its caller stops waiting for because of reason,
// as not run, when no flusher took it yet, and reports whether it did.
func (o *Op) withdraw(reason error) bool {
	if !o.state.CompareAndSwap(opFree, opWithdrawn) {
		return false
	}
	o.V, o.Err = nil, unwrittenError{reason}
	o.markDone()
	return true
}

// takeAll takes the ops of ops that were not withdrawn and returns them
// (ops itself when none was).
func takeAll(ops []*Op) []*Op {
	for i, o := range ops {
		if o.take() {
			continue
		}
		kept := append([]*Op(nil), ops[:i]...)
		for _, p := range ops[i+1:] {
			if p.take() {
				kept = append(kept, p)
			}
		}
		return kept
	}
	return ops
}

// unwithdrawn returns the ops of ops their callers did not withdraw (ops
// itself when none was).
func unwithdrawn(ops []*Op) []*Op {
	for i, o := range ops {
		if o.state.Load() != opWithdrawn {
			continue
		}
		kept := append([]*Op(nil), ops[:i]...)
		for _, p := range ops[i+1:] {
			if p.state.Load() != opWithdrawn {
				kept = append(kept, p)
			}
		}
		return kept
	}
	return ops
}

// claimOn has lane ask buf.claim for ops before it writes their commands
// (inline.Lane.Claim), between Begin and End.
func (buf *sendBuf) claimOn(lane *inline.Lane, ops []*Op) {
	if buf.claimFn == nil {
		buf.claimFn = buf.claim
	}
	buf.claimOps = ops
	lane.Claim(buf.claimFn)
}

// claim takes every op of buf.claimOps for the write about to happen, and
// reports whether it did: when one was withdrawn, those it took are free
// again (nothing was written) and the write is refused (the lane then
// sends the others again: opsOnLane).
func (buf *sendBuf) claim() bool {
	took := buf.took[:0]
	for _, o := range buf.claimOps {
		switch {
		case o.state.CompareAndSwap(opFree, opTaken):
			took = append(took, o)
		case o.state.Load() == opTaken:
		default:
			for _, t := range took {
				t.state.Store(opFree)
			}
			clear(took)
			buf.took = took[:0]
			return false
		}
	}
	clear(took)
	buf.took = took[:0]
	return true
}
