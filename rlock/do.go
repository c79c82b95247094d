package rlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/goredisson/goredisson/ctxowner"
)

// Do runs fn while holding l: the glue every port of a Redisson service
// writes around its critical sections (a Spring @DistributedLock, say).
//
// It attaches a fresh owner to ctx when ctx carries none (ctxowner.New),
// takes the lock with TryLock(ctx, wait, lease) (wait <= 0: one attempt;
// lease <= 0: watchdog) and returns ErrBusy when it was not acquired. fn
// gets a context that ends when the lock is lost (see LostContext) or ctx
// ends; whatever fn does, the lock is unlocked afterwards, even if ctx has
// ended by then, and also when fn panics (the lock is given back, then the
// panic goes on) or calls runtime.Goexit (as t.FailNow does). Do returns
// fn's error joined with the unlock's, if any; a nil l or fn is
// ErrInvalidArgument.
func Do(ctx context.Context, l Locker, wait, lease time.Duration, fn func(ctx context.Context) error) error {
	switch {
	case ctx == nil:
		return opErr("do", nameOf(l), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case l == nil || fn == nil:
		return opErr("do", nameOf(l), fmt.Errorf("%w: nil lock or function", ErrInvalidArgument))
	}
	if _, ok := ctxowner.From(ctx); !ok {
		ctx = ctxowner.New(ctx)
	}
	ok, err := l.TryLock(ctx, wait, lease)
	switch {
	case err != nil:
		return err
	case !ok:
		return opErr("do", l.Name(), ErrBusy)
	}
	held, stop := LostContext(ctx, l)
	defer stop()
	returned := false
	defer func() {
		if returned {
			return
		}
		// fn panicked or called runtime.Goexit (t.FailNow does): give the
		// lock back before the panic or the exit goes on up the stack.
		if err := l.Unlock(ctx); err != nil {
			doLogger(l).Warn("goredisson: Do could not unlock after fn panicked or exited", "lock", l.Name(), "err", err)
		}
	}()
	ferr := fn(held)
	returned = true
	return errors.Join(ferr, l.Unlock(ctx))
}

// doLogger is the logger of l's Client, for what Do cannot return.
func doLogger(l Locker) *slog.Logger {
	if h, ok := l.(interface{ handle() *handle }); ok && h.handle() != nil && h.handle().c != nil {
		return h.handle().c.logger()
	}
	return slog.Default()
}
