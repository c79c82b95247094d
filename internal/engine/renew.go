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
		switch d := l.Data.(leaseData); d.renew {
		case renewRead:
			ops[i] = transport.NewScriptOp(ctx, readRenewScript, []any{l.Key, layout.ReadTimeoutPrefix(l.Key, l.Field)}, c.watchdogMs, l.Field)
		case renewFaster:
			ops[i] = transport.NewScriptOp(ctx, fasterRenewScript, []any{d.key}, append([]any{c.watchdogMs, l.Field}, d.values...)...)
		case renewPermit:
			ops[i] = transport.NewScriptOp(ctx, permitsScript, d.keys, "update", c.pubArg, d.values[0], c.watchdogMs)
		default:
			ops[i] = transport.NewScriptOp(ctx, renewScript, []any{l.Key}, c.watchdogMs, l.Field)
		}
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
		re, _ := o.V.(transport.ReplyError)
		switch n, _ := o.V.(int64); {
		case o.Outcome() == transport.Replied && re.WrongType():
			// The key was overwritten by another application: the hold
			// is gone.
			out[i] = watchdog.Lost
		case o.Outcome() != transport.Replied || o.ReplyErr() != nil:
			out[i] = watchdog.Failed
			c.renewLoaded.Store(false)
		case n == 1:
			out[i] = watchdog.Renewed
		default:
			out[i] = watchdog.Lost
		}
	}
	return out, nil
}
