// Package transport sends rlock's commands to Redis and returns their
// outcomes: batching, the inline lane, Cluster redirections and replica
// sync (docs/internals.md, "The transport's contract").
package transport

// How commands reach Redis.
//
// Every command is sent at most once: written as RESP on a connection the
// transport keeps (AppendCommand; the inline lane's and each flusher's,
// internal/inline), or, where it keeps none, as a go-redis RawWriteToCmd,
// the one command type go-redis never sends twice: not on a timeout, not
// on a broken connection, not inside a pipeline (its NoRetry is true). So
// each acquire and release script runs at most once per call, and a call
// whose reply is lost has one of two outcomes, never three (rlock settles
// it). Its reply comes back as raw RESP and is parsed here; a call of
// which no byte was written is NotRun.
//
// Calls made while an earlier call or batch is on its way are queued and
// sent together as one batch (one write, one round trip, one read on the
// server), as auto-pipelining clients do; a call made while nothing is in
// flight goes out at once, alone: on one server, on each Cluster master
// and on a Sentinel's primary (sentinel.go), in its caller's goroutine, on
// a connection of the transport's own whose read its ctx's end or Close
// interrupts, the rest of the reply then read on a goroutine
// (internal/inline, see batcher.runInline), so that an uncontended call
// costs no goroutine hand-off. Up to maxBatches batches are in flight per
// node, each written by a flusher on a connection of its own (lanebatch.go)
// while the others' replies are on their way. A caller waits for its own
// reply, its context, or the Client's Close, whichever comes first: a call
// it stops waiting for before a byte of it was written is withdrawn, not
// run (claim.go); one already written stays in its batch and its outcome
// is settled later.
//
// On a Redis Cluster each master has a batcher of its own, fed with the
// calls whose key it serves, with lanes dialed as go-redis's client for
// that node dials: a batch is written to one node, never a pipeline that
// go-redis splits and joins again. Because go-redis does not look into a
// raw reply, the redirections of a Cluster are followed here, for every
// call alike (see Sender.after): MOVED (the command did not run: it is
// sent to the slot's new owner), ASK (sent to the named node after ASKING,
// on the same connection), and TRYAGAIN and CLUSTERDOWN (sent again after
// a short pause) while a slot migrates or a failover completes. A caller
// sees the reply of the node that ran its command; a redirection reaches
// it only when redirectBudget ran out first.
//
// Replica sync (WithReplicaSync, and Redisson's checkLockSyncedSlaves by
// default on Sentinel and Cluster) sends WAIT after a batch's acquire and
// release scripts, in the same go-redis pipeline, so on the same
// connection (see batcher.runSynced).
//
// Where it is, from the caller down: exec.go (Exec, a caller's wait for its
// outcome) and bounds.go (a wait's call bounds); sender.go (the Sender:
// routing to a batcher per node) and redirect.go (what becomes of a sent op
// on a Cluster); sentinel.go (the primary a Sentinel client's lanes dial);
// batcher.go (the queue, the flushers, sendBatch), lanebatch.go (a batch
// on a lane), lane.go (inline calls) and replica.go (WAIT); op.go and
// outcome.go (an op and its outcome); resp.go (RESP written and read);
// deadline.go (DeadlineOnly).
