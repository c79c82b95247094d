// Package watchdog keeps the leases of held locks alive and tells their
// holders when a lease is lost. It serves package rlock (one Scheduler per
// rlock.Client) and is not meant for use on its own.
//
// One Scheduler serves a whole client: a single goroutine with its timer for
// the renewals, and one timer for the deadlines, whatever the number of
// leases (no goroutine or timer per lock). A renewed
// lease is extended every third of its length (Redisson: lockWatchdogTimeout
// / 3). Leases that fall due close together (within a tenth of the interval)
// are renewed in the same batch, and a batch is handed to the RenewFunc in
// chunks of at most maxBatch leases, each meant to be one pipelined round
// trip; a last chunk that is not full takes in the leases due next (up to
// half an interval early), so that n leases cost about n/maxBatch round
// trips per interval.
//
// Every watched lease, renewed or fixed, has a local deadline: the time on
// this process's monotonic clock before which Redis cannot have expired it,
// counted from the moment the last acquisition or renewal that Redis
// confirmed was sent (see Deadline). When the deadline passes without a newer
// confirmation, the lease is lost, before any other client can take the lock
// (given the clock-rate allowance of Deadline), even while Redis cannot be
// reached: every look at the entry after the deadline (IsLost, Lost, Err,
// AfterLost) finds it lost, whatever goroutine the Go scheduler runs first
// after the process was paused, and a timer of the Scheduler's own at the
// earliest deadline closes Lost then without anyone looking (also while a
// renewal is in flight, or the renewing goroutine waits on Redis). A
// renewal, or a re-entry's Confirm, recorded after the deadline has passed
// does not revive the lease. A renewal that finds the lease gone (it
// expired, was deleted, or is held by someone else) loses it too. A lost
// lease is final: renewal stops.
package watchdog

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"
)

// epoch is the origin of the monotonic readings an Entry keeps in an atomic
// (its deadline, for the lock-free look of IsLost).
var epoch = time.Now()

// mono returns t as nanoseconds since epoch on the monotonic clock (when t
// has a monotonic reading, as every time.Now() and its sums have).
func mono(t time.Time) int64 { return int64(t.Sub(epoch)) }

// monoNow is mono(time.Now()), from the monotonic clock alone.
func monoNow() int64 { return int64(time.Since(epoch)) }

// never is the monotonic deadline of an entry stopped without a loss.
const never = math.MaxInt64

// errLost is the reason of an entry whose lease was lost: its local deadline
// passed without a confirmed renewal, or a renewal found it gone (it expired,
// was force-unlocked, or another owner holds the lock).
var errLost = errors.New("watchdog: lease lost")

// ErrClosed is the reason of entries still watched when the Scheduler closed.
var ErrClosed = errors.New("watchdog: closed")

// maxBatch is the largest number of leases handed to one RenewFunc call.
const maxBatch = 1000

// driftFactor and driftFloor make the allowance of Deadline: a lease of
// length d is taken to end d*driftFactor + driftFloor before it would on a
// clock running at exactly Redis's rate, as in the Redlock description. The
// factor covers clocks that run up to 1 % apart, far more than NTP lets real
// clocks drift; the floor covers the delay of the timer that signals the
// loss.
const (
	driftFactor = 0.01
	driftFloor  = 2 * time.Millisecond
)

// Allowance is how much earlier than lease after the send a lease is taken
// to end: 1 % of it plus 2 ms (for clocks that run up to 1 % apart, and
// the timer that signals the loss).
func Allowance(lease time.Duration) time.Duration {
	return time.Duration(float64(lease)*driftFactor) + driftFloor
}

// Deadline returns the local deadline of a lease of length lease whose
// acquisition or renewal was sent at sent: Redis runs the command no earlier
// than it was sent, so the key lives at least until sent+lease on Redis's
// clock; less the allowance, that is a time before which no other client can
// take the lock.
func Deadline(sent time.Time, lease time.Duration) time.Time {
	return sent.Add(lease - Allowance(lease))
}

// Lease names one held lease. The Scheduler only passes it to the RenewFunc.
type Lease struct {
	Key   string // the lock's Redis key
	Field string // the holder's field in the lock hash
	Data  any    // anything the RenewFunc needs (script kind)
	// Permit marks a semaphore's permit (Key the semaphore, Field the
	// permit id), not a lock's hold: the log lines say "permit".
	Permit bool
}

// noun is what the lease keeps, in log lines: "lock" or "permit".
func (l Lease) noun() string {
	if l.Permit {
		return "permit"
	}
	return "lock"
}

// logArgs names the lease in log lines: a lock's key and holder field, or a
// semaphore's key and permit id.
func (l Lease) logArgs(more ...any) []any {
	if l.Permit {
		return append([]any{"semaphore", l.Key, "permit", l.Field}, more...)
	}
	return append([]any{"key", l.Key, "field", l.Field}, more...)
}

// Status is the outcome of renewing one lease.
type Status int

const (
	// Renewed: the lease was extended.
	Renewed Status = iota
	// Lost: the holder no longer holds the lease; renewal stops.
	Lost
	// Failed: renewal could not be done now (Redis unreachable); it is
	// retried soon, until the lease's deadline.
	Failed
)

// RenewFunc renews leases, ideally in one round trip, and returns one Status
// per lease in order. An error fails the whole batch.
type RenewFunc func(ctx context.Context, leases []Lease) ([]Status, error)

// Scheduler renews leases on one goroutine and watches their deadlines with
// a timer. Create it with New.
type Scheduler struct {
	renew    RenewFunc
	lease    time.Duration
	interval time.Duration
	retry    time.Duration
	log      *slog.Logger
	onLost   func(Lease, error)

	mu       sync.Mutex
	due      dueHeap
	inflight map[*Entry]struct{} // popped for a renewal that is running
	closed   bool
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	rounds   int64     // RenewFunc calls made (for the package's tests)
	armed    time.Time // when the run loop's timer fires next (zero: not armed)
	justLost []*Entry  // lost and not yet passed to onLost
	// byDeadline holds every watched entry (due or in flight) by local
	// deadline; expiry, armed for expiryAt (zero: not armed), loses those
	// whose deadline passed, independently of the run loop, which may be
	// waiting on a renewal.
	byDeadline deadlineHeap
	expiry     *time.Timer
	expiryAt   time.Time
}

// Option configures a Scheduler.
type Option func(*Scheduler)

// WithLogger sets where losses and renewal failures are logged.
// Default: slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(s *Scheduler) {
		if l != nil {
			s.log = l
		}
	}
}

// WithOnLost sets a function called with each lease that is lost (and the
// reason: ErrClosed, or another error for a lost lease), on the Scheduler's goroutine (or Close's),
// after the Lost channel closed. It must not block.
func WithOnLost(f func(Lease, error)) Option {
	return func(s *Scheduler) { s.onLost = f }
}

// New starts a Scheduler that renews leases of length lease every lease/3.
// It panics if lease is shorter than 3ns (callers validate user input
// first).
func New(renew RenewFunc, lease time.Duration, opts ...Option) *Scheduler {
	if lease/3 <= 0 {
		panic("watchdog: lease must be positive")
	}
	s := &Scheduler{
		renew:    renew,
		lease:    lease,
		interval: lease / 3,
		retry:    min(lease/6, time.Second),
		log:      slog.Default(),
		inflight: make(map[*Entry]struct{}),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	s.expiry = time.AfterFunc(time.Hour, s.expire)
	s.expiry.Stop()
	go s.run()
	return s
}

// Add starts watching a lease that lasts until deadline unless renewed.
// With renew set, the Scheduler renews it every interval, the first time one
// interval from now, and moves the deadline forward with each renewal that
// Redis confirms. On a closed Scheduler the entry is returned already lost
// with ErrClosed.
func (s *Scheduler) Add(l Lease, deadline time.Time, renew bool) *Entry {
	e := &Entry{s: s, lease: l, index: -1, dindex: -1}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		e.stopped = true
		e.err = ErrClosed
		e.gone.Store(true)
		return e
	}
	e.renewed = renew
	e.deadline = deadline
	e.dl.Store(mono(deadline))
	e.when = time.Now().Add(s.interval)
	heap.Push(&s.due, e)
	heap.Push(&s.byDeadline, e)
	s.armExpiry()
	s.pokeFor(e)
	return e
}

// setDeadline moves a watched entry's local deadline. Called with mu held.
func (s *Scheduler) setDeadline(e *Entry, deadline time.Time) {
	e.deadline = deadline
	e.dl.Store(mono(deadline))
	if e.dindex >= 0 {
		heap.Fix(&s.byDeadline, e.dindex)
		s.armExpiry()
	}
}

// armExpiry sets the expiry timer for the earliest deadline, unless it is
// armed for that time or earlier already. Called with mu held.
func (s *Scheduler) armExpiry() {
	if len(s.byDeadline) == 0 || s.closed {
		return
	}
	d := s.byDeadline[0].deadline
	if !s.expiryAt.IsZero() && !d.Before(s.expiryAt) {
		return
	}
	s.expiryAt = d
	s.expiry.Reset(time.Until(d))
}

// expire is the expiry timer's function: it loses every entry whose
// deadline has passed, whatever the run loop is doing, and arms the timer
// for the next deadline.
func (s *Scheduler) expire() {
	s.mu.Lock()
	s.expiryAt = time.Time{}
	if s.closed {
		s.mu.Unlock()
		return
	}
	now := time.Now()
	for len(s.byDeadline) > 0 && s.expireLocked(s.byDeadline[0], now) {
	}
	s.armExpiry()
	s.mu.Unlock()
	s.notify()
}

// expireLocked loses e if it is watched and its deadline is not after now,
// and reports whether it did. Called with mu held; the caller sees to
// notify (see notifySoon).
func (s *Scheduler) expireLocked(e *Entry, now time.Time) bool {
	if e.stopped || e.deadline.After(now) {
		return false
	}
	switch {
	case e.drained: // given up by its holder: quiet
	case e.renewed:
		n := e.lease.noun()
		s.log.Warn("goredisson: "+n+" lease ran out without a confirmed renewal; the "+n+" is lost",
			e.lease.logArgs()...)
	default: // a fixed lease ending as asked
		s.log.Debug("goredisson: fixed lease ended", e.lease.logArgs()...)
	}
	e.lose(errLost)
	return true
}

// notifySoon has the run loop call onLost for the entries lost so far: for
// losses found by a caller that may hold its own locks (a ledger's), which
// onLost may take.
func (s *Scheduler) notifySoon() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pokeFor wakes the loop when its timer would fire too late for e: a lock
// taken and released over and over costs no goroutine wake-up. Called with
// mu held.
func (s *Scheduler) pokeFor(e *Entry) {
	if s.armed.IsZero() || e.next().Before(s.armed) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Len returns the number of leases being watched.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.due) + len(s.inflight)
}

// notify calls onLost for the entries lost since the last call. Called
// without mu.
func (s *Scheduler) notify() {
	if s.onLost == nil {
		return
	}
	s.mu.Lock()
	lost := s.justLost
	s.justLost = nil
	s.mu.Unlock()
	for _, e := range lost {
		s.onLost(e.lease, e.err)
	}
}

// Close stops renewing and reports every lease still watched as lost with
// ErrClosed (each expires in Redis within one lease). It does not wait for a
// renewal in progress, which may be stuck on an unresponsive Redis: that one
// finishes in the background and changes nothing. Later calls do nothing.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.stop)
	s.expiry.Stop()
	for len(s.due) > 0 {
		s.due[0].lose(ErrClosed)
	}
	for e := range s.inflight {
		e.lose(ErrClosed)
	}
	s.mu.Unlock()
	s.notify()
}

// Done returns a channel closed when the Scheduler's goroutine has ended
// (after Close, once a renewal in progress has returned).
func (s *Scheduler) Done() <-chan struct{} { return s.done }

func (s *Scheduler) run() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		next := time.Hour
		if len(s.due) > 0 {
			next = time.Until(s.due[0].next())
		}
		next = max(next, 0)
		s.armed = time.Now().Add(next)
		s.mu.Unlock()
		timer.Reset(next)
		select {
		case <-s.stop:
			return
		case <-s.wake:
			s.notify() // losses found by IsLost, Stop, Confirm or Reset
			continue
		case <-timer.C:
		}
		s.tick()
	}
}

// tick loses every lease whose deadline has passed and renews every renewed
// lease due now or within a tenth of the interval. When the last chunk of
// the batch is not full, it is filled with the leases due next, up to half
// an interval early: renewing them a little early costs nothing, and it
// saves them a round trip of their own a moment later.
func (s *Scheduler) tick() {
	now := time.Now()
	horizon := now.Add(s.interval / 10)
	fill := now.Add(s.interval / 2)
	s.mu.Lock()
	var batch []*Entry
	for len(s.due) > 0 {
		e := s.due[0]
		if s.expireLocked(e, now) {
			continue
		}
		if !e.renewed || e.next().After(fill) || (e.next().After(horizon) && len(batch)%maxBatch == 0) {
			break
		}
		heap.Pop(&s.due)
		s.inflight[e] = struct{}{}
		batch = append(batch, e)
	}
	s.mu.Unlock()

	s.notify()
	for start := 0; start < len(batch); start += maxBatch {
		s.renewChunk(batch[start:min(start+maxBatch, len(batch))])
		s.notify()
	}
}

func (s *Scheduler) renewChunk(chunk []*Entry) {
	leases := make([]Lease, len(chunk))
	for i, e := range chunk {
		leases[i] = e.lease
	}
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), s.interval)
	statuses, err := s.renew(ctx, leases)
	cancel()
	if err == nil && len(statuses) != len(chunk) {
		err = errors.New("watchdog: renew returned a wrong number of statuses")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// Read under mu: a renewal counts only if it is recorded before the
	// deadline passes (IsLost's looks take mu to lose a lease).
	now := time.Now()
	s.rounds++
	for i, e := range chunk {
		delete(s.inflight, e)
		if e.stopped {
			continue
		}
		st := Failed
		if err == nil {
			st = statuses[i]
		}
		switch st {
		case Renewed:
			if s.expireLocked(e, now) {
				// Confirmed too late (the process was paused, or the
				// reply slow): the deadline passed first, and a look
				// then had to see the loss. Not revived.
				continue
			}
			s.setDeadline(e, Deadline(sent, s.lease))
			e.when = now.Add(s.interval)
		case Lost:
			if e.drained {
				e.lose(errLost)
				continue
			}
			s.log.Warn("goredisson: "+e.lease.noun()+" lost, watchdog stops renewing it", e.lease.logArgs()...)
			e.lose(errLost)
			continue
		default:
			if s.expireLocked(e, now) {
				continue
			}
			if err != nil {
				s.log.Warn("goredisson: lease renewal failed, retrying", e.lease.logArgs("err", err)...)
			}
			e.when = now.Add(s.retry)
		}
		if s.closed {
			e.lose(ErrClosed)
			continue
		}
		heap.Push(&s.due, e)
	}
}
