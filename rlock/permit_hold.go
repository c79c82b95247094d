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

// PermitHold is one permit, as a handle (a Java PermitHandle; docs/api.md).
type PermitHold struct {
	s  *PermitExpirableSemaphore
	id string
	// entry watches the permit's lease (a fixed lease, never renewed): its
	// local deadline, from the send of the acquire that took the permit,
	// less watchdog.Allowance, moved by UpdateLeaseTime.
	entry *watchdog.Entry
	lost  context.Context
	stop  context.CancelFunc
	mu    sync.Mutex // one UpdateLeaseTime at a time: the deadline follows Redis's order
	rel   releaseOnce
}

// noExpiry is how far ahead the local deadline of a permit that never
// expires lies: it ends only at Release, a loss or the Client's Close.
const noExpiry = 100 * 365 * 24 * time.Hour

// permitDeadline is the local deadline of a permit lease sent at sent.
func permitDeadline(sent time.Time, lease time.Duration) time.Time {
	if lease <= 0 {
		return sent.Add(noExpiry)
	}
	return watchdog.Deadline(sent, lease)
}

// AcquirePermit takes a permit of s within wait as a hold, else ErrBusy.
func AcquirePermit(ctx context.Context, s *PermitExpirableSemaphore, wait, lease time.Duration) (*PermitHold, error) {
	return acquirePermit(ctx, "acquirepermit", "tryacquire", s, max(wait, 0), lease)
}

// AcquirePermitWait is AcquirePermit that waits until ctx ends.
func AcquirePermitWait(ctx context.Context, s *PermitExpirableSemaphore, lease time.Duration) (*PermitHold, error) {
	return acquirePermit(ctx, "acquirepermitwait", "acquire", s, -1, lease)
}

// acquirePermit takes the permit as the semaphore's acquire op (wait < 0:
// until ctx ends) and watches its lease from the send of the attempt that
// took it.
func acquirePermit(ctx context.Context, op, acquireOp string, s *PermitExpirableSemaphore, wait, lease time.Duration) (*PermitHold, error) {
	switch {
	case s == nil:
		return nil, opErr(op, "", fmt.Errorf("%w: nil semaphore", ErrInvalidArgument))
	case ctx == nil:
		return nil, opErr(op, s.Name(), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	}
	ids, sent, ok, err := s.acquire(ctx, acquireOp, 1, wait, lease)
	switch {
	case err != nil:
		return nil, err
	case !ok || len(ids) != 1:
		return nil, opErr(op, s.Name(), ErrBusy)
	}
	h := s.handle()
	name, id := h.Key(), ids[0]
	p := &PermitHold{s: s, id: id}
	p.entry = h.WatchPermit(id, permitDeadline(sent, lease))
	p.lost, p.stop = engine.LossContext(context.WithoutCancel(ctx), engine.EntryLoss(p.entry), permitLossCause(name, id), nil)
	return p, nil
}

// permitLossCause is the cause of a permit's loss signal: permitLostError
// ("permit <id> lost ..."), or ErrClosed naming the permit.
func permitLossCause(semaphore, id string) func(error) error {
	return func(why error) error {
		if why == ErrLockLost {
			return opErr("lost", semaphore, &engine.PermitLostError{ID: id})
		}
		return opErr("lost", semaphore, fmt.Errorf("%w: permit %s", why, id))
	}
}

// ID returns the permit's id.
func (p *PermitHold) ID() string {
	if p == nil {
		return ""
	}
	return p.id
}

// Semaphore returns the permit's semaphore.
func (p *PermitHold) Semaphore() *PermitExpirableSemaphore {
	if p == nil {
		return nil
	}
	return p.s
}

// Context returns the permit's loss signal, also ended at Release.
func (p *PermitHold) Context() context.Context {
	if p == nil {
		return nilHoldContext()
	}
	return p.lost
}

// Lost reports whether the permit was lost (its lease ran out) before
// Release.
func (p *PermitHold) Lost() bool {
	return p != nil && errors.Is(context.Cause(p.lost), ErrLockLost)
}

// Held asks Redis whether the permit is still held (LeaseTime finds it).
func (p *PermitHold) Held(ctx context.Context) (bool, error) {
	if p == nil {
		return false, errNilHold("held")
	}
	_, err := p.s.LeaseTime(ctx, p.id)
	if errors.Is(err, ErrNotHeld) {
		return false, nil
	}
	return err == nil, err
}

// UpdateLeaseTime sets the lease and the Context's deadline anew from now;
// false when Redis no longer has the permit (the hold is lost).
func (p *PermitHold) UpdateLeaseTime(ctx context.Context, lease time.Duration) (bool, error) {
	if p == nil {
		return false, errNilHold("updateleasetime")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sent := time.Now()
	ok, err := p.s.UpdateLeaseTime(ctx, p.id, lease)
	next := permitDeadline(sent, lease)
	switch {
	case err == nil && ok:
		p.entry.Reset(next)
	case err == nil:
		p.entry.Lose()
	case errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrClosed):
		// not sent
	case next.Before(p.entry.Deadline()):
		p.entry.Reset(next) // it may have run
	}
	return ok, err
}

// Release gives the permit back and ends the Context, once.
func (p *PermitHold) Release(ctx context.Context) error {
	if p == nil {
		return errNilHold("release")
	}
	return p.rel.do(ctx, p.lost, func(ctx context.Context) error { return p.s.Release(ctx, p.id) }, func() {
		p.stop()
		p.entry.Stop()
	})
}

// Close is Release with a background context.
func (p *PermitHold) Close() error { return p.Release(context.Background()) }
