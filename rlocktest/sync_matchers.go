package rlocktest

import (
	"context"
	"fmt"

	"github.com/onsi/gomega/types"

	"github.com/goredisson/goredisson/rlock"
)

// syncMatcher is a Gomega matcher whose actual value is one of rlock's
// synchronizers; read returns the number it checks (got) and what else the
// failure message shows.
type syncMatcher struct {
	want string // "to have 3 available permits", ...
	n    int64
	read func(ctx context.Context, actual any) (got int64, more string, err error)
	got  string
}

// Match implements types.GomegaMatcher.
func (m *syncMatcher) Match(actual any) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), MatchTimeout)
	defer cancel()
	got, more, err := m.read(ctx, actual)
	if err != nil {
		return false, err
	}
	m.got = fmt.Sprintf("it has %d", got)
	if more != "" {
		m.got += " (" + more + ")"
	}
	return got == m.n, nil
}

// FailureMessage implements types.GomegaMatcher.
func (m *syncMatcher) FailureMessage(actual any) string {
	return fmt.Sprintf("Expected %s %s, but %s", syncName(actual), m.want, m.got)
}

// NegatedFailureMessage implements types.GomegaMatcher.
func (m *syncMatcher) NegatedFailureMessage(actual any) string {
	return fmt.Sprintf("Expected %s not %s, but %s", syncName(actual), m.want, m.got)
}

// syncName names a synchronizer in failure messages: `semaphore "jobs"`.
func syncName(actual any) string {
	switch s := actual.(type) {
	case *rlock.Semaphore:
		return fmt.Sprintf("semaphore %q", s.Name())
	case *rlock.PermitExpirableSemaphore:
		return fmt.Sprintf("permit-expirable semaphore %q", s.Name())
	case *rlock.CountDownLatch:
		return fmt.Sprintf("count-down latch %q", s.Name())
	}
	return fmt.Sprint(actual)
}

func wrongType(what string, actual any) error {
	return fmt.Errorf("rlocktest: expected %s, got %T", what, actual)
}

// HaveAvailablePermits succeeds when a *rlock.Semaphore or an
// *rlock.PermitExpirableSemaphore has n permits available now (the latter
// after putting back those whose lease ran out) [availablePermits].
//
//	Expect(sem).To(rlocktest.HaveAvailablePermits(3))
func HaveAvailablePermits(n int) types.GomegaMatcher {
	return &syncMatcher{want: fmt.Sprintf("to have %d available permits", n), n: int64(n),
		read: func(ctx context.Context, actual any) (int64, string, error) {
			switch s := actual.(type) {
			case *rlock.Semaphore:
				if s == nil {
					break
				}
				got, err := s.AvailablePermits(ctx)
				return int64(got), "", err
			case *rlock.PermitExpirableSemaphore:
				if s == nil {
					break
				}
				return permitCounts(ctx, s, false)
			}
			return 0, "", wrongType("an *rlock.Semaphore or *rlock.PermitExpirableSemaphore", actual)
		}}
}

// HaveAcquiredPermits succeeds when n permits of an
// *rlock.PermitExpirableSemaphore are taken and neither released nor
// expired [acquiredPermits].
//
//	Expect(sem).To(rlocktest.HaveAcquiredPermits(1))
func HaveAcquiredPermits(n int) types.GomegaMatcher {
	return &syncMatcher{want: fmt.Sprintf("to have %d acquired permits", n), n: int64(n),
		read: func(ctx context.Context, actual any) (int64, string, error) {
			s, ok := actual.(*rlock.PermitExpirableSemaphore)
			if !ok || s == nil {
				return 0, "", wrongType("an *rlock.PermitExpirableSemaphore", actual)
			}
			return permitCounts(ctx, s, true)
		}}
}

// permitCounts reads a permit-expirable semaphore's available or acquired
// permits, and the other count and the total for the message.
func permitCounts(ctx context.Context, s *rlock.PermitExpirableSemaphore, acquired bool) (int64, string, error) {
	avail, err := s.AvailablePermits(ctx)
	if err != nil {
		return 0, "", err
	}
	taken, err := s.AcquiredPermits(ctx)
	if err != nil {
		return 0, "", err
	}
	if acquired {
		return int64(taken), fmt.Sprintf("%d available, %d permits in all", avail, avail+taken), nil
	}
	return int64(avail), fmt.Sprintf("%d acquired, %d permits in all", taken, avail+taken), nil
}

// HaveCount succeeds when an *rlock.CountDownLatch's count is n (0: the
// latch is open) [getCount].
//
//	Expect(latch).To(rlocktest.HaveCount(0))
func HaveCount(n int64) types.GomegaMatcher {
	return &syncMatcher{want: fmt.Sprintf("to have count %d", n), n: n,
		read: func(ctx context.Context, actual any) (int64, string, error) {
			l, ok := actual.(*rlock.CountDownLatch)
			if !ok || l == nil {
				return 0, "", wrongType("an *rlock.CountDownLatch", actual)
			}
			got, err := l.Count(ctx)
			return got, "", err
		}}
}
