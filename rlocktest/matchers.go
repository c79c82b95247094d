package rlocktest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onsi/gomega/types"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/rlock"
)

// MatchTimeout bounds the Redis calls a matcher makes.
const MatchTimeout = 5 * time.Second

// lockMatcher is a Gomega matcher whose actual value is an rlock.Locker.
type lockMatcher struct {
	want string // "to be locked", ...
	// wantFor, when set, words want for the lock at hand (Match sets it).
	wantFor func(l rlock.Locker) string
	// check decides; info is the lock's state read once by Match for both
	// the check and the message (nil when the lock cannot be inspected or
	// the read failed with infoErr).
	check func(ctx context.Context, l rlock.Locker, info *inspect.Info, infoErr error) (ok bool, got string, err error)
	got   string
}

// Match implements types.GomegaMatcher.
func (m *lockMatcher) Match(actual any) (bool, error) {
	l, ok := actual.(rlock.Locker)
	if !ok || l == nil {
		return false, fmt.Errorf("rlocktest: expected an rlock.Locker, got %T", actual)
	}
	if m.wantFor != nil {
		m.want = m.wantFor(l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), MatchTimeout)
	defer cancel()
	info, infoErr := rlock.Inspect(ctx, l)
	if errors.Is(infoErr, rlock.ErrInvalidArgument) {
		info = nil // not a single-key lock: nothing to show
	}
	ok, got, err := m.check(ctx, l, info, infoErr)
	if err != nil {
		return false, err
	}
	m.got = got
	if info != nil {
		m.got += "\n    " + describe(info)
	}
	return ok, nil
}

// FailureMessage implements types.GomegaMatcher.
func (m *lockMatcher) FailureMessage(actual any) string {
	return fmt.Sprintf("Expected lock %q %s, but %s", name(actual), m.want, m.got)
}

// NegatedFailureMessage implements types.GomegaMatcher.
func (m *lockMatcher) NegatedFailureMessage(actual any) string {
	return fmt.Sprintf("Expected lock %q not %s, but %s", name(actual), m.want, m.got)
}

func name(actual any) string {
	if l, ok := actual.(rlock.Locker); ok && l != nil {
		return l.Name()
	}
	return fmt.Sprint(actual)
}

// describe renders a lock's state as the failure messages show it.
func describe(info *inspect.Info) string {
	s := fmt.Sprintf("state in Redis: %s", info.Kind)
	if info.Mode != "" {
		s += ", mode " + info.Mode
	}
	s += ", hash fields {"
	for n, h := range info.Holders {
		if n > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q: %d", h.Field, h.Count)
	}
	s += "}"
	switch info.TTL {
	case 0:
		s += ", no key"
	case inspect.NoExpiry:
		s += ", TTL none (key never expires)"
	default:
		s += ", TTL " + info.TTL.Round(time.Millisecond).String()
	}
	if len(info.Queue) > 0 {
		s += fmt.Sprintf(", %d queued %v", len(info.Queue), info.Queue)
	}
	return s
}

// BeLocked succeeds when anyone holds the lock.
//
//	Expect(lock).To(rlocktest.BeLocked())
func BeLocked() types.GomegaMatcher {
	return &lockMatcher{want: "to be locked", check: func(ctx context.Context, l rlock.Locker, _ *inspect.Info, _ error) (bool, string, error) {
		ok, err := l.IsLocked(ctx)
		return ok, fmt.Sprintf("IsLocked returned %v", ok), err
	}}
}

// BeHeldBy succeeds when the owner carried by ctx (a ctxowner owner, else
// the calling goroutine) holds the lock. Its failure message names the hash
// field it expected, "<client id>:<owner>" (for a MultiLock or RedLock, the
// owner), next to the fields that hold the lock in Redis.
//
//	Expect(lock).To(rlocktest.BeHeldBy(owner))
func BeHeldBy(ctx context.Context) types.GomegaMatcher {
	return &lockMatcher{wantFor: func(l rlock.Locker) string {
		if field, err := rlock.HolderField(ctx, l); err == nil {
			return fmt.Sprintf("to be held by field %q", field)
		}
		return fmt.Sprintf("to be held by owner %q", ctxowner.Of(ctx))
	}, check: func(_ context.Context, l rlock.Locker, _ *inspect.Info, _ error) (bool, string, error) {
		cctx, cancel := context.WithTimeout(ctx, MatchTimeout)
		defer cancel()
		ok, err := l.IsHeldByCurrent(cctx)
		return ok, fmt.Sprintf("IsHeldByCurrent returned %v", ok), err
	}}
}

// HaveTotalHoldCount succeeds when the holds of all holders of the lock
// add up to n (not the caller's own count, Lock.HoldCount): a lock taken
// twice by one owner has 2; a read lock held once by each of three readers
// has 3; an unlocked lock has 0. It needs a lock that can be inspected
// (every single-key lock type of package rlock).
func HaveTotalHoldCount(n int) types.GomegaMatcher {
	return &lockMatcher{want: fmt.Sprintf("to have a total hold count (all holders) of %d", n), check: func(_ context.Context, l rlock.Locker, info *inspect.Info, infoErr error) (bool, string, error) {
		if errors.Is(infoErr, rlock.ErrInvalidArgument) {
			return false, "", fmt.Errorf("rlocktest: HaveTotalHoldCount needs a single-key lock, got %T", l)
		}
		if infoErr != nil {
			return false, "", infoErr
		}
		return info.Holds() == n, fmt.Sprintf("all holders hold it %d times", info.Holds()), nil
	}}
}

// HaveHoldCount is HaveTotalHoldCount.
//
// Deprecated: it reads like Lock.HoldCount (the caller's own count); use
// HaveTotalHoldCount.
func HaveHoldCount(n int) types.GomegaMatcher { return HaveTotalHoldCount(n) }

// HaveTTLWithin succeeds when the lock is held with a remaining lease in
// (0, d]: it fails for an unlocked lock and for a key without expiry.
func HaveTTLWithin(d time.Duration) types.GomegaMatcher {
	return &lockMatcher{want: fmt.Sprintf("to have a TTL within %v", d), check: func(ctx context.Context, l rlock.Locker, _ *inspect.Info, _ error) (bool, string, error) {
		ttl, err := l.RemainTTL(ctx)
		if err != nil {
			return false, "", err
		}
		got := "the TTL is " + ttl.String()
		switch ttl {
		case 0:
			got = "it is not held"
		case rlock.NoExpiry:
			got = "its key has no expiry"
		}
		return ttl > 0 && ttl <= d, got, nil
	}}
}
