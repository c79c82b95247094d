package engine

import (
	"context"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/internal/transport"
	"github.com/goredisson/goredisson/watchdog"
)

// renew is the watchdog's RenewFunc: one renewal script call per lease,
// all handed to the batcher at once, so that a chunk of leases costs one
// pipelined round trip. The Client's first renewal (and the first after a
// failed one: Redis may come back without its scripts) sends SCRIPT LOAD
// of the renewal scripts ahead of them in the same pipeline: on a server
// that has not run them yet, the calls then find them cached instead of
// failing with NOSCRIPT and being sent again with their source (a second
// round trip, with the script's text once per lease). Not on a Redis
// Cluster: there a keyless command in a pipeline goes to one master, not
// to those of the leases.
func (c *Core) renew(ctx context.Context, leases []watchdog.Lease) ([]watchdog.Status, error) {
	ops := make([]*transport.Op, len(leases))
	for i, l := range leases {
		ops[i] = c.renewal(ctx, l)
	}
	send := ops
	if !c.cluster && !c.renewLoaded.Swap(true) {
		send = append([]*transport.Op{transport.NewOp(ctx, "script", "load", renewScript.Src), transport.NewOp(ctx, "script", "load", readRenewScript.Src)}, ops...)
	}
	c.send.SubmitAll(send)
	out := make([]watchdog.Status, len(leases))
	for i, o := range ops {
		select {
		case <-o.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, ErrClosed
		}
		out[i] = c.renewed(o)
	}
	return out, nil
}

// renewal returns the renewal op of lease l: its kind's renewal script
// with the watchdog timeout.
func (c *Core) renewal(ctx context.Context, l watchdog.Lease) *transport.Op {
	switch d := l.Data.(leaseData); d.renew {
	case renewRead:
		return transport.NewScriptOp(ctx, readRenewScript, []any{l.Key, layout.ReadTimeoutPrefix(l.Key, l.Field)}, c.watchdogMs, l.Field)
	case renewFaster:
		return transport.NewScriptOp(ctx, fasterRenewScript, []any{d.key}, append([]any{c.watchdogMs, l.Field}, d.values...)...)
	case renewPermit:
		return transport.NewScriptOp(ctx, permitsScript, d.keys, "update", c.pubArg, d.values[0], c.watchdogMs)
	}
	return transport.NewScriptOp(ctx, renewScript, []any{l.Key}, c.watchdogMs, l.Field)
}

// renewed reads a renewal's outcome: renewed, lost (the hold is gone, or
// another application overwrote the key), or failed (no reply, or an error
// reply: Redis may have lost its scripts, which the next renewal loads).
func (c *Core) renewed(o *transport.Op) watchdog.Status {
	re, _ := o.V.(transport.ReplyError)
	switch n, _ := o.V.(int64); {
	case o.Outcome() == transport.Replied && re.WrongType():
		// The key was overwritten by another application: the hold is
		// gone.
		return watchdog.Lost
	case o.Outcome() != transport.Replied || o.ReplyErr() != nil:
		c.renewLoaded.Store(false)
		return watchdog.Failed
	case n == 1:
		return watchdog.Renewed
	}
	return watchdog.Lost
}
