// Package watchdog keeps the leases of held locks alive.
//
// One Scheduler serves a whole client: a single goroutine and a single timer,
// whatever the number of leases (no goroutine or timer per lock). Each lease
// is renewed every interval (Redisson: lockWatchdogTimeout / 3). Leases that
// fall due close together (within a tenth of the interval) are renewed in the
// same batch, and a batch is handed to the RenewFunc in chunks of at most
// MaxBatch leases, each meant to be one pipelined round trip; a last chunk
// that is not full takes in the leases due next (up to half an interval
// early), so that n leases cost about n/MaxBatch round trips per interval.
//
// Renewal of a lease stops when its holder calls Entry.Stop (last unlock),
// when the Scheduler is closed, or when a renewal reports the lease lost (the
// key expired, was deleted, or is held by someone else). A loss closes the
// entry's Lost channel and is logged; Entry.Err tells why.
package watchdog

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// ErrLost is the reason of an entry whose renewal found the lease gone: it
// expired, was force-unlocked, or another owner holds the lock.
var ErrLost = errors.New("watchdog: lease lost")

// ErrClosed is the reason of entries still watched when the Scheduler closed.
var ErrClosed = errors.New("watchdog: scheduler closed")

// MaxBatch is the largest number of leases handed to one RenewFunc call.
const MaxBatch = 1000

// Lease names one held lease. The Scheduler only passes it to the RenewFunc.
type Lease struct {
	Key   string // the lock's Redis key
	Field string // the holder's field in the lock hash
	Data  any    // anything the RenewFunc needs (lease length, script kind)
}

// Status is the outcome of renewing one lease.
type Status int

const (
	// Renewed: the lease was extended.
	Renewed Status = iota
	// Lost: the holder no longer holds the lease; renewal stops.
	Lost
	// Failed: renewal could not be done now (Redis unreachable); it is
	// retried soon.
	Failed
)

// RenewFunc renews leases, ideally in one round trip, and returns one Status
// per lease in order. An error fails the whole batch.
type RenewFunc func(ctx context.Context, leases []Lease) ([]Status, error)

// Scheduler renews leases on one goroutine. Create it with New.
type Scheduler struct {
	renew    RenewFunc
	interval time.Duration
	retry    time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	due    dueHeap
	closed bool
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	rounds int64     // RenewFunc calls made, for tests and benchmarks
	armed  time.Time // when the run loop's timer fires next (zero: not armed)
}

// Entry is one watched lease.
type Entry struct {
	s       *Scheduler
	lease   Lease
	when    time.Time
	index   int // position in the heap, -1 when not in it
	stopped bool
	lost    chan struct{}
	err     error
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

// New starts a Scheduler that renews every lease each interval. It panics if
// interval is not positive (callers validate user input first).
func New(renew RenewFunc, interval time.Duration, opts ...Option) *Scheduler {
	if interval <= 0 {
		panic("watchdog: interval must be positive")
	}
	s := &Scheduler{
		renew:    renew,
		interval: interval,
		retry:    min(interval/2, time.Second),
		log:      slog.Default(),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	go s.run()
	return s
}

// Interval returns the renewal interval.
func (s *Scheduler) Interval() time.Duration { return s.interval }

// Add starts watching a lease; its first renewal is one interval from now.
// On a closed Scheduler the entry is returned already lost with ErrClosed.
func (s *Scheduler) Add(l Lease) *Entry {
	e := &Entry{s: s, lease: l, index: -1, lost: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		e.stopped = true
		e.err = ErrClosed
		close(e.lost)
		return e
	}
	e.when = time.Now().Add(s.interval)
	heap.Push(&s.due, e)
	// Wake the loop only when its timer would fire too late for this entry:
	// a lock taken and released over and over costs no goroutine wake-up.
	if s.armed.IsZero() || e.when.Before(s.armed) {
		s.poke()
	}
	return e
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Len returns the number of leases being watched.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.due {
		if !e.stopped {
			n++
		}
	}
	return n
}

// Rounds returns how many RenewFunc calls (round trips) the Scheduler made.
func (s *Scheduler) Rounds() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rounds
}

// Stop ends the watch without signalling a loss. It is idempotent.
func (e *Entry) Stop() {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	e.stopped = true
	if e.index >= 0 {
		heap.Remove(&s.due, e.index)
	}
}

// Lost returns a channel closed when the lease is lost or the Scheduler
// closed while the lease was still watched. It is never closed by Stop.
func (e *Entry) Lost() <-chan struct{} { return e.lost }

// Err returns why Lost was closed (ErrLost or ErrClosed), or nil.
func (e *Entry) Err() error {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.err
}

// Lease returns the watched lease.
func (e *Entry) Lease() Lease { return e.lease }

// lose marks the entry lost. Called with mu held.
func (e *Entry) lose(err error) {
	if e.stopped {
		return
	}
	e.stopped = true
	e.err = err
	if e.index >= 0 {
		heap.Remove(&e.s.due, e.index)
	}
	close(e.lost)
}

// Close stops renewing. Every lease still watched is reported lost with
// ErrClosed (it will expire within one lease). Close waits for a renewal in
// progress to finish. Later calls do nothing.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	for len(s.due) > 0 {
		s.due[0].lose(ErrClosed)
	}
	s.mu.Unlock()
}

func (s *Scheduler) run() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		next := time.Hour
		if len(s.due) > 0 {
			next = time.Until(s.due[0].when)
		}
		next = max(next, 0)
		s.armed = time.Now().Add(next)
		s.mu.Unlock()
		timer.Reset(next)
		select {
		case <-s.stop:
			return
		case <-s.wake:
			continue
		case <-timer.C:
		}
		s.tick()
	}
}

// tick renews every lease due now or within a tenth of the interval. When
// the last chunk of the batch is not full, it is filled with the leases due
// next, up to half an interval early: renewing them a little early costs
// nothing, and it saves them a round trip of their own a moment later.
func (s *Scheduler) tick() {
	now := time.Now()
	horizon := now.Add(s.interval / 10)
	fill := now.Add(s.interval / 2)
	s.mu.Lock()
	var batch []*Entry
	for len(s.due) > 0 && (!s.due[0].when.After(horizon) || (len(batch)%MaxBatch != 0 && !s.due[0].when.After(fill))) {
		e := heap.Pop(&s.due).(*Entry)
		batch = append(batch, e)
	}
	s.mu.Unlock()

	for start := 0; start < len(batch); start += MaxBatch {
		chunk := batch[start:min(start+MaxBatch, len(batch))]
		s.renewChunk(chunk)
	}
}

func (s *Scheduler) renewChunk(chunk []*Entry) {
	leases := make([]Lease, len(chunk))
	for i, e := range chunk {
		leases[i] = e.lease
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.interval)
	statuses, err := s.renew(ctx, leases)
	cancel()
	if err == nil && len(statuses) != len(chunk) {
		err = errors.New("watchdog: renew returned a wrong number of statuses")
	}

	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rounds++
	for i, e := range chunk {
		if e.stopped {
			continue
		}
		st := Failed
		if err == nil {
			st = statuses[i]
		}
		switch st {
		case Renewed:
			e.when = now.Add(s.interval)
		case Lost:
			s.log.Warn("goredisson: lock lost, watchdog stops renewing it",
				"key", e.lease.Key, "field", e.lease.Field)
			e.lose(ErrLost)
			continue
		default:
			if err != nil {
				s.log.Warn("goredisson: lease renewal failed, retrying",
					"key", e.lease.Key, "field", e.lease.Field, "err", err)
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

// dueHeap orders entries by their next renewal time.
type dueHeap []*Entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].when.Before(h[j].when) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *dueHeap) Push(x any) {
	e := x.(*Entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
