package rlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/goredisson/goredisson/ctxowner"
)

// Do runs fn while holding l (TryLock, else ErrBusy), as @DistributedLock.
func Do(ctx context.Context, l Locker, wait, lease time.Duration, fn func(ctx context.Context) error) error {
	return do(ctx, "do", l, fn, func(ctx context.Context) (bool, error) { return l.TryLock(ctx, wait, lease) })
}

// DoWait is Do that waits until l is held (LockLease); only ctx bounds it.
func DoWait(ctx context.Context, l Locker, lease time.Duration, fn func(ctx context.Context) error) error {
	return do(ctx, "dowait", l, fn, func(ctx context.Context) (bool, error) { return true, l.LockLease(ctx, lease) })
}

func do(ctx context.Context, op string, l Locker, fn func(ctx context.Context) error, acquire func(context.Context) (bool, error)) error {
	switch {
	case ctx == nil:
		return opErr(op, nameOf(l), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case l == nil || fn == nil:
		return opErr(op, nameOf(l), fmt.Errorf("%w: nil lock or function", ErrInvalidArgument))
	}
	if _, ok := ctxowner.From(ctx); !ok {
		ctx = ctxowner.New(ctx)
	}
	ok, err := acquire(ctx)
	switch {
	case err != nil:
		return err
	case !ok:
		return opErr(op, l.Name(), ErrBusy)
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
	if h, ok := l.(interface{ handle() *handle }); ok && h.handle() != nil && h.handle().Core() != nil {
		return h.handle().Core().Logger()
	}
	return slog.Default()
}
