package rlock

import (
	"context"
	"fmt"

	"github.com/goredisson/goredisson/internal/engine"
)

// Redisson's object listeners [addListener(ObjectListener)] on locks
// (RObservable, Redisson 3.43.0+) and synchronizers (RObject): keyevent
// notifications of the object's key being deleted or expiring. Details:
// docs/api.md.

// KeyEvent is a deleted or expired event of a key, as Listen delivers it.
type KeyEvent struct {
	Name    string // the key
	Expired bool   // true: it expired [ExpiredObjectListener]; false: deleted [DeletedObjectListener]
}

// Listen calls fn with the key's deleted and expired events [addListener].
func (l *Lock) Listen(ctx context.Context, fn func(KeyEvent)) (stop func(), err error) {
	h := l.handle()
	if err := h.check(ctx, "listen"); err != nil {
		return nil, err
	}
	return listen(ctx, h.Core(), h.OpName("listen"), h.Key(), fn)
}

// Listen is Lock.Listen.
func (f *FencedLock) Listen(ctx context.Context, fn func(KeyEvent)) (stop func(), err error) {
	h := f.handle()
	if err := h.check(ctx, "listen"); err != nil {
		return nil, err
	}
	return listen(ctx, h.Core(), "listen", h.Key(), fn)
}

// Listen is Lock.Listen for the synchronizer's key [addListener].
func (o *Object) Listen(ctx context.Context, fn func(KeyEvent)) (stop func(), err error) {
	if err := o.s.check(ctx, "listen"); err != nil {
		return nil, err
	}
	return listen(ctx, o.s.Core(), "listen", o.s.Key(), fn)
}

// Listen is Lock.Listen for the latch's key [addListener].
func (l *CountDownLatch) Listen(ctx context.Context, fn func(KeyEvent)) (stop func(), err error) {
	s := l.handle()
	if err := s.check(ctx, "listen"); err != nil {
		return nil, err
	}
	return listen(ctx, s.Core(), "listen", s.Key(), fn)
}

// listen is Listen: it calls fn with the events of name on e's Client.
func listen(ctx context.Context, e *engine.Core, op, name string, fn func(KeyEvent)) (func(), error) {
	if fn == nil {
		return nil, opErr(op, name, fmt.Errorf("%w: nil listener", ErrInvalidArgument))
	}
	stop, err := e.Listen(ctx, name, func(expired bool) { fn(KeyEvent{Name: name, Expired: expired}) })
	return stop, opErr(op, name, err)
}
