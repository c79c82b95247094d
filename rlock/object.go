package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
	"github.com/goredisson/goredisson/internal/layout"
)

// syncHandle is what every synchronizer (Semaphore,
// PermitExpirableSemaphore, CountDownLatch) holds: the engine's handle of
// it (engine.SyncHandle: the Client, the name, the kind), with the checks
// and events of the calls on it.
type syncHandle struct{ engine.SyncHandle }

// newSyncHandle maps name (WithNameMapper) and returns the handle of a
// synchronizer of kind "semaphore", "permitsemaphore" or "countdownlatch".
func newSyncHandle(c *Client, name, kind string) syncHandle {
	return syncHandle{engine.NewSyncHandle(c.core(), name, kind)}
}

// check validates a call: the handle, ctx, and the Client's state.
func (s *syncHandle) check(ctx context.Context, op string) error {
	switch {
	case s == nil || s.Core() == nil:
		return opErr(op, "", fmt.Errorf("%w: nil client", ErrInvalidArgument))
	case s.Key() == "":
		return opErr(op, "", fmt.Errorf("%w: empty name", ErrInvalidArgument))
	case ctx == nil:
		return opErr(op, s.Key(), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case s.NameErr() != nil:
		return opErr(op, s.Logical(), s.NameErr())
	case s.Core().Cluster() && !layout.SlotSafe(s.Key()):
		return opErr(op, s.Key(), fmt.Errorf("%w: on Redis Cluster a name with a stray '{' or '}' puts its auxiliary keys in other slots; use a hash tag such as {jobs:42}", ErrInvalidArgument))
	case s.Core().Closed():
		return opErr(op, s.Key(), ErrClosed)
	}
	return nil
}

func (s *syncHandle) nameOr() string {
	if s == nil {
		return ""
	}
	return s.Logical()
}

// observe reports a synchronizer's operation (Kind, Lock and Duration
// filled in here) to the Client's Observer.
func (s *syncHandle) observe(ctx context.Context, e engine.Event) {
	if s == nil || !s.Core().Observed() {
		return
	}
	e.Kind, e.Lock, e.Duration = s.Kind(), s.Key(), time.Since(e.Start)
	s.Core().Observe(ctx, e)
}

// Object is a synchronizer's key with Redisson's RObject/RExpirable calls.
type Object struct {
	s    syncHandle
	keys []string // the synchronizer's keys (Delete, Expire, ClearExpire)
}

func newObject(h syncHandle) Object {
	return Object{s: h, keys: h.ObjectKeys()}
}

// Name returns the name: the Redis key unless WithNameMapper maps it.
func (o *Object) Name() string { return o.s.nameOr() }

// IsExists reports whether the synchronizer's key exists [isExists()].
func (o *Object) IsExists(ctx context.Context) (bool, error) {
	if err := o.s.check(ctx, "isexists"); err != nil {
		return false, err
	}
	ok, err := o.s.Exists(ctx)
	return ok, opErr("isexists", o.s.Key(), err)
}

// Delete deletes the synchronizer's keys; true if any existed [delete()].
func (o *Object) Delete(ctx context.Context) (bool, error) {
	if err := o.s.check(ctx, "delete"); err != nil {
		return false, err
	}
	ok, err := o.s.Delete(ctx, o.keys)
	return ok, opErr("delete", o.s.Key(), err)
}

// RemainTTL returns the key's TTL: 0 if none, NoExpiry [remainTimeToLive()].
func (o *Object) RemainTTL(ctx context.Context) (time.Duration, error) {
	if err := o.s.check(ctx, "remainttl"); err != nil {
		return 0, err
	}
	ms, err := o.s.PTTL(ctx)
	switch {
	case err != nil:
		return 0, opErr("remainttl", o.s.Key(), err)
	case ms == -2:
		return 0, nil
	case ms == -1:
		return NoExpiry, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}
