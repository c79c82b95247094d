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
	"slices"
	"sync"
	"sync/atomic"
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

// Entry is one watched lease.
type Entry struct {
	s        *Scheduler
	lease    Lease
	renewed  bool      // renewed by the Scheduler (else a fixed lease)
	deadline time.Time // local deadline (see Deadline)
	when     time.Time // next renewal, for a renewed lease
	index    int       // position in the due heap, -1 when not in it
	dindex   int       // position in byDeadline, -1 when not in it
	stopped  bool      // no longer watched: lost, or stopped
	drained  bool      // given up by its holder (Drain): its loss is quiet
	// lost is Lost's channel, made on its first call (most holds never
	// ask); gone says the lease is lost (Lost is closed), set under s.mu.
	lost atomic.Pointer[chan struct{}]
	gone atomic.Bool
	// dl is deadline as mono gives it, for IsLost's look without s.mu
	// (never once stopped without a loss); set under s.mu.
	dl    atomic.Int64
	err   error
	after []*afterLost // AfterLost's functions, run at the loss
}

// afterLost is one function registered with AfterLost.
type afterLost struct{ f func() }

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

// Confirm records a new acquisition of a watched lease (a re-entry) whose
// lease lasts until deadline: the lease's deadline moves to it if that is
// later (a re-entry extends a lease, never shortens it), and with renew set
// the Scheduler renews it from now on (a renewed lease stays renewed). It
// does nothing to a lease that is already lost or stopped, and loses one
// whose deadline has passed (a lost lease is final).
func (e *Entry) Confirm(deadline time.Time, renew bool) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.stopped {
		return
	}
	if s.expireLocked(e, time.Now()) {
		s.notifySoon()
		return
	}
	if deadline.After(e.deadline) {
		s.setDeadline(e, deadline)
	}
	if renew && !e.renewed {
		e.renewed = true
		e.when = time.Now().Add(s.interval)
	}
	if e.index >= 0 {
		heap.Fix(&s.due, e.index)
		s.pokeFor(e)
	}
}

// Reset sets the deadline of a watched fixed lease to deadline, earlier or
// later (the holder set the lease anew, see rlock's Extend). It does
// nothing to a renewed lease, or one already lost or stopped, loses one
// whose deadline has passed, and reports whether it was set.
func (e *Entry) Reset(deadline time.Time) bool {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.stopped || e.renewed {
		return false
	}
	if s.expireLocked(e, time.Now()) {
		s.notifySoon()
		return false
	}
	s.setDeadline(e, deadline)
	if e.index >= 0 {
		heap.Fix(&s.due, e.index)
		s.pokeFor(e)
	}
	return true
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

// next is when the loop must look at the entry: its next renewal or its
// deadline, whichever comes first.
func (e *Entry) next() time.Time {
	if e.renewed && e.when.Before(e.deadline) {
		return e.when
	}
	return e.deadline
}

// Len returns the number of leases being watched.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.due) + len(s.inflight)
}

// Stop ends the watch without signalling a loss, unless the lease's local
// deadline has passed already: then it is lost (as the first look after the
// deadline would have found it). A stopped lease is never lost: IsLost
// stays false, Lost stays open, and AfterLost's functions are dropped. It
// is idempotent.
func (e *Entry) Stop() {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.stopped {
		return
	}
	if s.expireLocked(e, time.Now()) {
		s.notifySoon()
		return
	}
	e.stopped = true
	e.dl.Store(never)
	e.after = nil
	if e.index >= 0 {
		heap.Remove(&s.due, e.index)
	}
	if e.dindex >= 0 {
		heap.Remove(&s.byDeadline, e.dindex)
	}
}

// Drain stops renewing a lease its holder gave up without knowing that
// Redis dropped it (its release failed): it is still watched, and Lost
// closes at its deadline, or at Lose, without a log line or a WithOnLost
// call.
func (e *Entry) Drain() {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.stopped {
		return
	}
	e.drained, e.renewed = true, false
	if e.index >= 0 {
		heap.Fix(&s.due, e.index)
		s.pokeFor(e)
	}
}

// Lose ends the watch of a lease its holder found lost some other way (its
// client saw Redis count fewer holds than it did), as a renewal that finds
// the lease gone does: Lost closes and the WithOnLost function
// is called. It does nothing to a lease already stopped or lost.
func (e *Entry) Lose() {
	s := e.s
	s.mu.Lock()
	e.lose(errLost)
	s.mu.Unlock()
	s.notify()
}

// Lost returns a channel closed when the lease is lost or the Scheduler
// closed while the lease was still watched. It is never closed by Stop. Asked
// after the local deadline, it is closed.
func (e *Entry) Lost() <-chan struct{} {
	e.IsLost()
	if p := e.lost.Load(); p != nil {
		return *p
	}
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if p := e.lost.Load(); p != nil {
		return *p
	}
	ch := make(chan struct{})
	if e.gone.Load() {
		close(ch)
	}
	e.lost.Store(&ch)
	return ch
}

// IsLost reports whether the lease is lost (Lost is closed). Once its local
// deadline has passed it is, at the first look, whatever ran before: the
// look loses it (as the Scheduler's timer would). It costs two atomic loads
// and a reading of the monotonic clock while the lease is watched and its
// deadline ahead, and is safe to call in a tight loop.
func (e *Entry) IsLost() bool {
	if e.gone.Load() {
		return true
	}
	if monoNow() < e.dl.Load() {
		return false
	}
	s := e.s
	s.mu.Lock()
	lost := s.expireLocked(e, time.Now())
	s.mu.Unlock()
	if lost {
		s.notifySoon()
	}
	return e.gone.Load()
}

// Err returns why Lost was closed, or nil: ErrClosed when the Scheduler
// closed, another error when the lease was lost.
func (e *Entry) Err() error {
	e.IsLost()
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.err
}

// AfterLost arranges for f to run on a goroutine of its own when the lease
// is lost (at once if it is lost already, or its deadline has passed). A
// lease stopped without a loss never runs it. The returned stop unregisters
// f; it reports whether it stopped f from being run.
func (e *Entry) AfterLost(f func()) (stop func() bool) {
	no := func() bool { return false }
	if e.IsLost() {
		go f()
		return no
	}
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case e.gone.Load():
		go f()
		return no
	case e.stopped:
		return no
	}
	a := &afterLost{f: f}
	e.after = append(e.after, a)
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		i := slices.Index(e.after, a)
		if i < 0 {
			return false
		}
		e.after = slices.Delete(e.after, i, i+1)
		return true
	}
}

// Deadline returns the lease's current local deadline.
func (e *Entry) Deadline() time.Time {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.deadline
}

// lose marks the entry lost and queues it for the onLost callback (see
// notify). Called with mu held.
func (e *Entry) lose(err error) {
	if e.stopped {
		return
	}
	e.stopped = true
	e.err = err
	if e.index >= 0 {
		heap.Remove(&e.s.due, e.index)
	}
	if e.dindex >= 0 {
		heap.Remove(&e.s.byDeadline, e.dindex)
	}
	e.gone.Store(true)
	if p := e.lost.Load(); p != nil {
		close(*p)
	}
	for _, a := range e.after {
		go a.f()
	}
	e.after = nil
	if e.s.onLost != nil && !e.drained {
		e.s.justLost = append(e.s.justLost, e)
	}
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

// entryHeap is a heap of entries in the order O gives, each entry knowing
// its position (O's index field); dueHeap orders them by when the loop must
// look at them next, deadlineHeap by local deadline.
type entryHeap[O entryOrder] []*Entry

// entryOrder is the order of an entryHeap and the field an entry keeps its
// position in (-1 when not in the heap).
type entryOrder interface {
	less(a, b *Entry) bool
	index(e *Entry) *int
}

type byNext struct{}

func (byNext) less(a, b *Entry) bool { return a.next().Before(b.next()) }
func (byNext) index(e *Entry) *int   { return &e.index }

type byDeadline struct{}

func (byDeadline) less(a, b *Entry) bool { return a.deadline.Before(b.deadline) }
func (byDeadline) index(e *Entry) *int   { return &e.dindex }

type (
	dueHeap      = entryHeap[byNext]
	deadlineHeap = entryHeap[byDeadline]
)

func (h entryHeap[O]) Len() int           { return len(h) }
func (h entryHeap[O]) Less(i, j int) bool { var o O; return o.less(h[i], h[j]) }
func (h entryHeap[O]) Swap(i, j int) {
	var o O
	h[i], h[j] = h[j], h[i]
	*o.index(h[i]) = i
	*o.index(h[j]) = j
}
func (h *entryHeap[O]) Push(x any) {
	var o O
	e := x.(*Entry)
	*o.index(e) = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap[O]) Pop() any {
	var o O
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*o.index(e) = -1
	*h = old[:len(old)-1]
	return e
}
