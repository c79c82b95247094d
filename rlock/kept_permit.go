package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
	"github.com/goredisson/goredisson/watchdog"
)

// KeptPermit is a permit the Client's watchdog renews until Release.
type KeptPermit struct {
	p     *PermitExpirableSemaphore
	id    string
	entry *watchdog.Entry
	mu    sync.Mutex
	done  bool // released, or its release's outcome is unknown
}

// AcquireKept waits for a permit and takes it with a watchdog lease.
func (p *PermitExpirableSemaphore) AcquireKept(ctx context.Context) (*KeptPermit, error) {
	k, _, err := p.acquireKept(ctx, "acquire", -1)
	return k, err
}

// TryAcquireKept is AcquireKept within wait (<= 0: one attempt).
func (p *PermitExpirableSemaphore) TryAcquireKept(ctx context.Context, wait time.Duration) (*KeptPermit, bool, error) {
	return p.acquireKept(ctx, "tryacquire", max(wait, 0))
}

func (p *PermitExpirableSemaphore) acquireKept(ctx context.Context, op string, wait time.Duration) (*KeptPermit, bool, error) {
	h := p.handle()
	if err := h.check(ctx, op); err != nil {
		return nil, false, err
	}
	lease := h.Core().WatchdogTimeout()
	// sent: the taking attempt's send, no later than the moment Redis
	// computes the permit's expiry (not the wait's start: a wait longer
	// than the lease would have its deadline passed at once).
	ids, sent, ok, err := p.acquire(ctx, op, 1, wait, lease)
	if err != nil || !ok || len(ids) == 0 {
		return nil, ok, err
	}
	raws, err := decodeIDs(ids)
	if err != nil {
		return nil, false, opErr(op, h.Key(), err)
	}
	if deadline := watchdog.Deadline(sent, lease); !time.Now().Before(deadline) {
		return nil, false, opErr(op, h.Key(), p.giveBackLate(ctx, ids[0], time.Since(sent)))
	}
	k := &KeptPermit{p: p, id: ids[0]}
	k.entry = h.KeepPermit(ids[0], raws[0], sent)
	return k, true, nil
}

// giveBackLate gives back a permit that Redis confirmed past its lease's
// local deadline (took after the send): the permit counts as lost, and its
// taker must not believe it holds it. It returns the ErrLockLost to report.
func (p *PermitExpirableSemaphore) giveBackLate(ctx context.Context, id string, took time.Duration) error {
	err := fmt.Errorf("%w: permit %s was confirmed %v after it was sent, past its lease's local deadline: it counts as lost, and was given back",
		ErrLockLost, id, took.Round(time.Millisecond))
	// Release is clean-up: ctx's end does not stop it.
	if rerr := p.Release(ctx, id); rerr != nil {
		err = fmt.Errorf("%w (but giving it back failed: %w)", err, rerr)
	}
	return err
}

// ID returns the permit's id, as Acquire returns it.
func (k *KeptPermit) ID() string {
	if k == nil {
		return ""
	}
	return k.id
}

// LostContext is rlock.LostContext for the permit.
func (k *KeptPermit) LostContext(ctx context.Context) (lctx context.Context, stop context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	if k == nil || k.entry == nil {
		return engine.LossContext(ctx, nil, nil, opErr("lostcontext", "", ErrNotHeld))
	}
	return engine.LossContext(ctx, engine.EntryLoss(k.entry), permitLossCause(k.p.s.Key(), k.id), nil)
}

// Release stops renewals and gives the permit back; ErrNotHeld: it was gone.
func (k *KeptPermit) Release(ctx context.Context) error {
	if k == nil || k.entry == nil {
		return opErr("release", "", fmt.Errorf("%w: nil permit", ErrInvalidArgument))
	}
	if err := k.p.handle().check(ctx, "release"); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done {
		return opErr("release", k.p.s.Key(), &permitError{ids: []string{k.id}})
	}
	// Drained, not stopped: a lease whose release fails is still watched,
	// so that LostContext ends at its deadline.
	k.entry.Drain()
	err := k.p.Release(ctx, k.id)
	switch {
	case err == nil:
		k.entry.Stop()
		k.done = true
	case errors.Is(err, ErrUnknownOutcome):
		k.done = true
	case errors.Is(err, ErrNotHeld):
		// Redis has no such permit: it is lost now, not at its lease.
		k.entry.Lose()
		k.done = true
	}
	return err
}
