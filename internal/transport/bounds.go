package transport

import (
	"context"
	"time"
)

// Call bounds: the calls a bounded wait makes (BoundCalls) are given up
// CallGrace past the wait's end, whatever go-redis's timeouts (Exec), and
// never go inline (Op.bounded).

// CallGrace is how long past the end of its wait (or past its send, when
// the wait has ended) a call made for a wait is waited for (see BoundCalls).
const CallGrace = 250 * time.Millisecond

// callBoundKey is the context key of BoundCalls.
type callBoundKey struct{}

// bounded reports whether o belongs to a bounded wait (BoundCalls): such a
// call is never sent inline, where only ctx's end or Close can interrupt
// its I/O, but through the flusher, so that exec can leave it at its bound
// while a dial or a hung server holds it.
func (o *Op) bounded() bool {
	if o.Ctx == nil {
		return false
	}
	_, ok := CallBound(o.Ctx)
	return ok
}

// BoundCalls marks ctx as serving a wait that ends at deadline (zero: no
// bound): exec gives each call up to CallGrace past it (and at least
// CallGrace), so that a dial or a server that hangs cannot hold a wait far
// past its end, whatever go-redis's timeouts are. A call given up is
// abandoned (settled as any lost reply).
func BoundCalls(ctx context.Context, deadline time.Time) context.Context {
	if deadline.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, callBoundKey{}, deadline)
}

// Unbound returns ctx without the call bound BoundCalls put on it
// (context.WithoutCancel keeps values, so a clean-up must drop it).
func Unbound(ctx context.Context) context.Context {
	if _, ok := CallBound(ctx); !ok {
		return ctx
	}
	return context.WithValue(ctx, callBoundKey{}, time.Time{})
}

// IsBoundKey reports whether key is the context key BoundCalls uses: a
// context of its own that drops the bound answers nil for it (cheaper
// than Unbound's extra context).
func IsBoundKey(key any) bool {
	_, ok := key.(callBoundKey)
	return ok
}

// CallBound returns the bound BoundCalls put on ctx, if any.
func CallBound(ctx context.Context) (time.Time, bool) {
	d, ok := ctx.Value(callBoundKey{}).(time.Time)
	return d, ok && !d.IsZero()
}
