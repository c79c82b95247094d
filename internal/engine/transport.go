package engine

import (
	"context"
	"strconv"

	"github.com/goredisson/goredisson/internal/transport"
)

// The lock engine's side of the transport (package internal/transport,
// docs/internals.md): it hands the transport an op and reads its outcome.

// newSender returns c's transport, sending through rdb.
func newSender(c *Core) *transport.Sender {
	return transport.NewSender(transport.Config{
		Sync:            c.sync,
		SyncReplicas:    c.cfg.SyncReplicas,
		SyncTimeout:     c.cfg.SyncTimeout,
		Done:            c.done,
		Closed:          c.closed.Load,
		ErrClosed:       ErrClosed,
		IsCleanup:       isCleanup,
		InfoTimeout:     cleanupTimeout,
		PublishRefused:  c.publishRefused,
		NameRefusedKeys: c.nameRefusedKeys,
		Logger:          c.Logger,
		Fence:           c.cfg.Fence,
	}, c.rdb)
}

// exec sends o and waits for its outcome, ctx's end or the Client's Close
// (a clean-up, see cleanupCtx, is not ended by Close).
// It returns nil once o is done (see op.Outcome), else an error abandoned
// recognizes.
func (c *Core) exec(ctx context.Context, o *transport.Op) error {
	if c.closing(ctx) != nil && c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.resolveMode(ctx); err != nil {
		return err
	}
	return c.send.Exec(ctx, o)
}

// command runs a plain command (a read, or one that is safe to lose) and
// returns its parsed reply: an error reply or a lost one is an error.
func (c *Core) command(ctx context.Context, args ...any) (any, error) {
	return c.run(ctx, transport.NewOp(ctx, args...))
}

// commandInt runs a command whose reply is an integer (nil reads as 0).
func (c *Core) commandInt(ctx context.Context, args ...any) (int64, error) {
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

// script runs a script whose outcome the caller may lose without harm (a
// force unlock, a read) and returns its reply.
func (c *Core) script(ctx context.Context, s *transport.Script, keys []string, args ...any) (any, error) {
	return c.run(ctx, transport.NewScriptOp(ctx, s, boxAll(keys), args...))
}

// run sends o and returns its reply; an error reply or a lost one is an
// error.
func (c *Core) run(ctx context.Context, o *transport.Op) (any, error) {
	if err := c.exec(ctx, o); err != nil {
		return nil, err
	}
	if err := o.ReplyErr(); err != nil {
		return nil, err
	}
	return o.V, nil
}
