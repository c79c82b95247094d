package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/internal/transport"
	"github.com/goredisson/goredisson/watchdog"
)

// The synchronizers' scripts: semaphore.lua (Semaphore), permits.lua
// (PermitExpirableSemaphore, and a kept permit's renewal) and latch.lua
// (CountDownLatch), with their waits. rlock checks each call and reports
// it.

// semaphoreKeys are semaphore.lua's keys.
func (s *SyncHandle) semaphoreKeys() []string {
	return []string{s.name, layout.SemaphoreChannel(s.name)}
}

// permitsKeys are permits.lua's keys.
func (s *SyncHandle) permitsKeys() []string {
	return []string{s.name, layout.PermitTimeouts(s.aux), layout.SemaphoreChannel(s.name), layout.Cancel(s.name)}
}

// latchKeys are latch.lua's keys.
func (s *SyncHandle) latchKeys() []string {
	return []string{s.name, layout.LatchChannel(s.name)}
}

// Semaphore runs a semaphore.lua operation whose outcome the caller may
// lose without harm: ARGV = [op, n, publish command, more...].
func (s *SyncHandle) Semaphore(ctx context.Context, op string, n int, more ...any) (int64, error) {
	return s.run(ctx, semaphoreScript, s.semaphoreKeys(), append([]any{op, n, s.c.pub}, more...)...)
}

// ReleaseSemaphore runs a semaphore.lua release of n permits (op "release"
// or "releaseifexists") as clean-up: an ended ctx does not stop it, it must
// not run twice (see runUnsure).
func (s *SyncHandle) ReleaseSemaphore(ctx context.Context, op string, n int) (int64, error) {
	rctx := cleanupCall(ctx)
	defer rctx.stop()
	return s.runUnsure(rctx, semaphoreScript, s.semaphoreKeys(), op, n, s.c.pub)
}

// AcquireSemaphore takes n permits within wait (0: one attempt; < 0: until
// ctx ends), waiting for release messages between attempts.
func (s *SyncHandle) AcquireSemaphore(ctx context.Context, n int, wait time.Duration) (Acquired, error) {
	var a Acquired
	ok, err := s.wait(ctx, layout.SemaphoreChannel(s.name), wait, func(ctx context.Context) tried {
		a.Attempts++
		ok, reached, err := s.takeSemaphore(ctx, n)
		if reached && !ok && err == nil {
			a.Contended++
		}
		return tried{ok: ok, pause: s.safetyPause(), reached: reached, err: err}
	})
	a.Held = ok
	return a, err
}

// takeSemaphore runs the acquire once. A call its caller stopped waiting
// for is given back in the background once its reply comes.
func (s *SyncHandle) takeSemaphore(ctx context.Context, n int) (ok, reached bool, err error) {
	c := s.c
	o := transport.NewScriptOp(ctx, semaphoreScript, boxAll(s.semaphoreKeys()), "acquire", n, c.pubArg)
	err = c.exec(ctx, o)
	switch {
	case err != nil:
		if reason, ok := transport.Abandoned(err); ok {
			go s.giveBackLost(o, n)
			return false, false, reason
		}
		return false, false, err
	case o.Outcome() == transport.Unknown:
		go s.giveBackLost(o, n)
		return false, false, o.Err
	case o.Outcome() == transport.NotRun:
		return false, false, o.ReplyErr()
	}
	if err := o.ReplyErr(); err != nil {
		return false, true, err
	}
	return o.V == int64(1), true, nil
}

// giveBackLost waits for an acquire whose caller left and gives back the
// permits it took.
func (s *SyncHandle) giveBackLost(lost *transport.Op, n int) {
	c := s.c
	ctx, cancel := CleanupCtx(lost.Ctx)
	defer cancel()
	if !c.awaitLost(ctx, lost) {
		c.Logger().Warn("goredisson: an acquire of a semaphore lost its reply; its permits may have been taken and cannot be given back",
			"semaphore", s.name, "permits", n)
		return
	}
	if lost.V != int64(1) {
		return
	}
	if _, err := s.Semaphore(ctx, "release", n); err != nil {
		c.Logger().Warn("goredisson: could not give back the permits of an acquire whose caller had left",
			"semaphore", s.name, "permits", n, "err", err)
	}
}

// Permits runs a permits.lua operation whose outcome the caller may lose
// without harm: ARGV = [op, publish command, args...].
func (s *SyncHandle) Permits(ctx context.Context, op string, args ...any) (int64, error) {
	return s.run(ctx, permitsScript, s.permitsKeys(), append([]any{op, s.c.pub}, args...)...)
}

// AcquirePermits takes n permits with lease within wait (0: one attempt;
// < 0: until ctx ends), waiting for release messages between attempts, and
// returns their ids and when the attempt that took them was sent: their
// lease runs from no earlier.
func (s *SyncHandle) AcquirePermits(ctx context.Context, n int, wait, lease time.Duration) (ids []string, sent time.Time, a Acquired, err error) {
	a.Held, err = s.wait(ctx, layout.SemaphoreChannel(s.name), wait, func(ctx context.Context) tried {
		a.Attempts++
		var t tried
		sent = time.Now()
		ids, t.pause, t.reached, t.err = s.takePermits(ctx, n, lease)
		if t.reached && ids == nil && t.err == nil {
			a.Contended++
		}
		if t.pause < 0 || t.pause > s.safetyPause() {
			t.pause = s.safetyPause()
		}
		t.ok = ids != nil
		return t
	})
	if !a.Held {
		ids = nil
	}
	return ids, sent, a, err
}

// takePermits makes one attempt with n fresh permit ids; it returns the ids
// when it took the permits, else how long until the nearest permit expires
// (-1: none will).
func (s *SyncHandle) takePermits(ctx context.Context, n int, lease time.Duration) (ids []string, pause time.Duration, reached bool, err error) {
	c := s.c
	raws := make([]any, n)
	buf := make([]byte, 16*n)
	if _, err := rand.Read(buf); err != nil {
		return nil, 0, false, err
	}
	for i := range raws {
		raws[i] = string(buf[16*i : 16*(i+1)])
	}
	o := transport.NewScriptOp(ctx, permitsScript, boxAll(s.permitsKeys()), append([]any{"acquire", c.pubArg, n, lease.Milliseconds()}, raws...)...)
	err = c.exec(ctx, o)
	reason, lost := transport.Abandoned(err)
	switch {
	case lost:
		go s.settlePermits(o, raws)
		return nil, 0, false, reason
	case err != nil:
		return nil, 0, false, err
	case o.Outcome() == transport.Unknown:
		go s.settlePermits(o, raws)
		return nil, 0, false, o.Err
	case o.Outcome() == transport.NotRun || o.ReplyErr() != nil:
		return nil, 0, o.Outcome() == transport.Replied, o.ReplyErr()
	}
	if permitsTaken(o.V) {
		ids = make([]string, n)
		for i := range ids {
			ids[i] = hex.EncodeToString(buf[16*i : 16*(i+1)])
		}
		return ids, 0, true, nil
	}
	switch v, ok := o.V.(int64); {
	case !ok:
		return nil, 0, true, errUnexpected(o.V)
	case v >= 0:
		return nil, time.Duration(v) * time.Millisecond, true, nil
	}
	return nil, -1, true, nil
}

// permitsTaken reports whether v is the reply of an acquire that took its
// permits: "OK", where a refusal replies the ms until the nearest permit
// expires (which may be 1).
func permitsTaken(v any) bool {
	s, ok := v.(string)
	return ok && s == "OK"
}

// settlePermits gives back the permits of an acquire whose caller left:
// once its reply is in, or, if it never comes, by a settle that also makes
// the acquire do nothing should it still arrive.
func (s *SyncHandle) settlePermits(lost *transport.Op, raws []any) {
	c := s.c
	ctx, cancel := CleanupCtx(lost.Ctx)
	defer cancel()
	op := "settle"
	if c.awaitLost(ctx, lost) {
		if !permitsTaken(lost.V) {
			return // it took no permit
		}
		op = "releasemany"
	}
	// Both are idempotent: sent again until one is answered.
	for attempt := 0; ; attempt++ {
		_, err := s.Permits(ctx, op, raws...)
		if err == nil {
			return
		}
		if ctx.Err() != nil || c.sleep(ctx, min(time.Duration(attempt+1)*20*time.Millisecond, 200*time.Millisecond)) != nil {
			c.Logger().Warn("goredisson: could not give back the permits of an acquire whose caller had left; they free themselves at their lease",
				"semaphore", s.name, "err", err)
			return
		}
	}
}

// ReleasePermits runs a release of the permits raws (op "release" or
// "releasemany") as clean-up: an ended ctx does not stop it (it runs
// bounded by cleanupTimeout). A release is idempotent, so one whose reply
// was lost is sent again (within that bound, else ErrUnknownOutcome); a
// single id found gone then counts as released (the lost call released it,
// or it expired and went back).
func (s *SyncHandle) ReleasePermits(ctx context.Context, op string, raws []any) (n int64, err error) {
	rctx := cleanupCall(ctx)
	defer rctx.stop()
	args := append([]any{op, s.c.pub}, raws...)
	lost := false
	for attempt := 0; ; attempt++ {
		n, err = s.runUnsure(rctx, permitsScript, s.permitsKeys(), args...)
		var re transport.ReplyError
		if errors.Is(err, ErrUnknownOutcome) || lost && err != nil && !errors.As(err, &re) {
			lost = true
			if s.c.sleep(rctx, min(time.Duration(attempt+1)*20*time.Millisecond, 200*time.Millisecond)) == nil {
				continue
			}
			if !errors.Is(err, ErrUnknownOutcome) {
				err = unknownOutcome(err)
			}
			return n, err
		}
		if lost && err == nil && n == 0 {
			if op == "release" {
				n = 1 // gone: released by the lost call, or expired and put back
			} else {
				// All or none: released by the lost call, or refused.
				err = fmt.Errorf("%w: a release whose reply was lost was sent again and found the permits gone", ErrUnknownOutcome)
			}
		}
		return n, err
	}
}

// KeepPermit makes the watchdog renew the permit id (raw: its bytes), taken
// by an attempt sent at sent with a watchdog lease, until the returned
// entry is stopped.
func (s *SyncHandle) KeepPermit(id string, raw any, sent time.Time) *watchdog.Entry {
	c := s.c
	return c.wd.Add(watchdog.Lease{Key: s.name, Field: id, Permit: true,
		Data: leaseData{renew: renewPermit, key: s.name, keys: boxAll(s.permitsKeys()), values: []any{raw}}},
		watchdog.Deadline(sent, c.cfg.WatchdogTimeout), true)
}

// WatchPermit watches the lease of the permit id, taken with a fixed lease
// (never renewed), until the returned entry is stopped: it is lost at
// deadline unless Reset moves it (rlock's PermitHold).
func (s *SyncHandle) WatchPermit(id string, deadline time.Time) *watchdog.Entry {
	return s.c.wd.Add(watchdog.Lease{Key: s.name, Field: id, Permit: true,
		Data: leaseData{renew: renewPermit, key: s.name}}, deadline, false)
}

// Latch runs a latch.lua operation whose outcome the caller may lose
// without harm: ARGV = [op, publish command, args...].
func (s *SyncHandle) Latch(ctx context.Context, op string, args ...any) (int64, error) {
	return s.run(ctx, latchScript, s.latchKeys(), append([]any{op, s.c.pub}, args...)...)
}

// CountDown runs latch.lua's count-down as clean-up: an ended ctx does not
// stop it, it must not run twice (see runUnsure).
func (s *SyncHandle) CountDown(ctx context.Context) (int64, error) {
	cctx := cleanupCall(ctx)
	defer cctx.stop()
	return s.runUnsure(cctx, latchScript, s.latchKeys(), "countdown", s.c.pub)
}

// Await waits until the latch's count is zero, within wait (0: one look;
// < 0: until ctx ends), waiting for its messages between looks.
func (s *SyncHandle) Await(ctx context.Context, wait time.Duration) (bool, error) {
	return s.wait(ctx, layout.LatchChannel(s.name), wait, func(ctx context.Context) tried {
		n, err := s.Get(ctx)
		return tried{ok: err == nil && n <= 0, pause: s.safetyPause(), reached: err == nil, err: err}
	})
}
