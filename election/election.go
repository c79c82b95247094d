// Package election is leader election on goredisson's locks, modeled on
// etcd's client/v3/concurrency.Election: Campaign blocks until this
// candidate leads and returns a context that ends when leadership is lost;
// Resign gives it up; Leader and ObserveTerms tell who leads, in which
// term. It runs on a *rlock.Lock, *rlock.MultiLock or *rlock.RedLock (any
// rlock.Locker) held with a watchdog lease, and keeps the leader's record
// (value, term, lease) in a key of its own, "<lock key>:leader"
// (rlock.KeyOf), beside Redisson's lock layout (docs/election.md).
//
// Candidates may run on different watchdog timeouts (a rolling deploy that
// changes it) up to WithMaxLease: a new leader waits out the lease its
// predecessor recorded, so the predecessor's context has ended before the
// new one leads. A record is trusted only by the Redis process that wrote
// it: after a restart or a failover, which may have brought back older
// data, the successor waits as if there were none.
package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/cluster"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/watchdog"
)

// ErrNotLeader is the error of Resign by a candidate that does not lead.
var ErrNotLeader = errors.New("not the leader")

// ErrNoLeader is the error of Leader when nobody leads.
var ErrNoLeader = errors.New("no leader")

// DefaultMaxLease is WithMaxLease's default: Redisson's and goredisson's
// default watchdog timeout.
const DefaultMaxLease = 30 * time.Second

// endTimeout bounds the write of a term's end after a loss.
const endTimeout = 5 * time.Second

// Election is one candidate in the election on a lock. Its methods are safe
// for concurrent use; one Campaign at a time.
type Election struct {
	l       rlock.Locker
	rdb     redis.UniversalClient
	key     string
	lockKey string // the lock's key for Leader's read: a *Lock's or *FencedLock's, else ""
	channel string // where terms are published
	id      string
	holder  string          // the candidate's lock owner, ctxowner.Of(owner)
	owner   context.Context // the candidate's owner, alive as long as it leads
	lease   time.Duration   // the candidate's own watchdog timeout
	// maxLease is WithMaxLease; seen is the longest lease this candidate
	// has read in a record (ns): both bound the wait without a record.
	maxLease time.Duration
	seen     atomic.Int64

	log  *slog.Logger
	poll time.Duration // Observe's reads when it may not subscribe
	// warned once: a refused PUBLISH, a refused INFO (see warn).
	pubWarned, infoWarned atomic.Bool

	mu   sync.Mutex
	busy bool  // a Campaign runs or the candidate leads
	term *term // while leading
}

type term struct {
	rec       record // the leader record written when the term began
	ctx       context.Context
	stop      context.CancelFunc
	resigning atomic.Bool
}

// Option configures an Election.
type Option func(*Election)

// WithKey sets the key that holds the leader's record (default "<lock
// key>:leader", the key under WithNameMapper; on a Redis Cluster, for a
// lock name without a hash tag, "{<lock key>}:leader", so that it is in the
// lock's slot). For a *Lock or *FencedLock on a Redis Cluster it must be in
// the lock's slot: give it the lock's hash tag.
func WithKey(key string) Option { return func(e *Election) { e.key = key } }

// WithMaxLease sets the longest watchdog timeout any candidate of this
// election may run on (default DefaultMaxLease, 30 s). A candidate that
// takes the lock and finds no record of the previous leader it can trust
// (a first election; Redis that lost the leader key with the lock, a
// restart without persistence; a record written by another Redis process
// or before a failover, which may be older than the last one written)
// waits this long before it leads, since the previous leader, if there was
// one, may believe it leads until then. New refuses a lock whose watchdog
// timeout (rlock.WatchdogTimeout) exceeds it: raise it on every candidate
// before raising any candidate's timeout above it.
func WithMaxLease(d time.Duration) Option { return func(e *Election) { e.maxLease = d } }

// DefaultPollInterval is WithPollInterval's default.
const DefaultPollInterval = 500 * time.Millisecond

// WithPollInterval sets how often Observe and ObserveTerms read the leader
// when Redis refuses their subscription to the election's channel (an ACL
// user without the channel, docs/layout.md): default DefaultPollInterval.
// While subscribed they are told of each term by a message and do not
// poll.
func WithPollInterval(d time.Duration) Option { return func(e *Election) { e.poll = d } }

// WithLogger sets where the Election logs what it cannot return: once each,
// a refused PUBLISH (the record is written, but observers are not told), a
// refused INFO (every hand-over waits WithMaxLease), a refused
// subscription (Observe polls). Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(e *Election) { e.log = l } }

// New returns a candidate in the election on l, keeping the leader's record
// on rdb. For a *Lock or *FencedLock, rdb must reach the lock's Redis (Leader
// reads the lock and the record in one script). A nil lock or client, a bad
// option, or a lock whose watchdog timeout exceeds WithMaxLease is
// rlock.ErrInvalidArgument.
func New(rdb redis.UniversalClient, l rlock.Locker, opts ...Option) (*Election, error) {
	if rdb == nil || l == nil {
		return nil, &rlock.Error{Op: "election", Err: fmt.Errorf("%w: nil lock or Redis client", rlock.ErrInvalidArgument)}
	}
	id := uuid.NewString()
	e := &Election{l: l, rdb: rdb, id: id, maxLease: DefaultMaxLease, poll: DefaultPollInterval,
		owner: ctxowner.WithID(context.Background(), "election:"+id)}
	e.holder = ctxowner.Of(e.owner)
	switch l.(type) {
	case *rlock.Lock, *rlock.FencedLock:
		e.lockKey = rlock.KeyOf(l)
	}
	for _, o := range opts {
		if o != nil {
			o(e)
		}
	}
	if err := e.settle(); err != nil {
		return nil, &rlock.Error{Op: "election", Lock: l.Name(), Err: fmt.Errorf("%w: %w", rlock.ErrInvalidArgument, err)}
	}
	e.channel = "goredisson_election__channel:" + e.key
	return e, nil
}

// settle completes the options: the default key, the candidate's lease.
func (e *Election) settle() error {
	_, onCluster := e.rdb.(*redis.ClusterClient)
	if e.key == "" {
		e.key = rlock.KeyOf(e.l) + ":leader"
		if onCluster && e.lockKey != "" && cluster.Slot(e.key) != cluster.Slot(e.lockKey) {
			e.key = "{" + e.lockKey + "}:leader"
		}
	}
	if e.maxLease <= 0 {
		return fmt.Errorf("max lease %v: must be positive", e.maxLease)
	}
	if e.poll <= 0 {
		return fmt.Errorf("poll interval %v: must be positive", e.poll)
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if onCluster && e.lockKey != "" && cluster.Slot(e.key) != cluster.Slot(e.lockKey) {
		return fmt.Errorf("leader key %q is not in the slot of lock key %q: give it the lock's hash tag", e.key, e.lockKey)
	}
	lease, ok := rlock.WatchdogTimeout(e.l)
	if !ok {
		lease = e.maxLease // a Locker of another package: assume the longest
	}
	if lease > e.maxLease {
		// A successor that finds no record it can trust waits the max
		// lease: this candidate's context could outlive that wait.
		return fmt.Errorf("the lock's watchdog timeout %v exceeds the election's max lease %v: a successor that finds no record of this leader (Redis lost or rolled back the leader key) would lead while this one may still believe it leads; set WithMaxLease(%v) or more on every candidate first, or lower the lock's Client's WithWatchdogTimeout", lease, e.maxLease, lease)
	}
	e.lease = lease
	return nil
}

func (e *Election) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return &rlock.Error{Op: op, Lock: e.l.Name(), Err: err}
}

// Campaign blocks until this candidate leads with value, or ctx ends (ctx
// bounds only the wait, as etcd's does: end it on shutdown). It returns a
// context that ends, with a cause wrapping rlock.ErrLockLost, when
// leadership is lost, and is cancelled by Resign. A candidate that takes
// the lock waits out the previous leader before it leads: not at all after
// a Resign, the lease the previous leader recorded (its watchdog timeout)
// after a crash, a stop or a cut, and, without a record it can trust (a
// first election; Redis that lost its data; a record that another Redis
// process wrote, or that was written before a restart or a failover, which
// may have brought back older data), the longest lease it knows of
// (WithMaxLease, or a longer lease recorded); so the previous leader's
// context has ended by then (docs/election.md). The limit: a rollback of
// the record within one Redis process (an operator's RESTORE or SET of the
// key, DEBUG RELOAD of an older RDB) cannot be told from the record
// itself. An empty value is rlock.ErrInvalidArgument.
func (e *Election) Campaign(ctx context.Context, value string) (context.Context, error) {
	switch {
	case ctx == nil:
		return nil, e.fail("campaign", fmt.Errorf("%w: nil context", rlock.ErrInvalidArgument))
	case value == "":
		return nil, e.fail("campaign", fmt.Errorf("%w: empty value", rlock.ErrInvalidArgument))
	}
	e.mu.Lock()
	if e.busy {
		e.mu.Unlock()
		return nil, e.fail("campaign", fmt.Errorf("%w: this candidate already campaigns or leads", rlock.ErrInvalidArgument))
	}
	e.busy = true
	e.mu.Unlock()
	t, err := e.campaign(ctx, value)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.busy = false
		return nil, e.fail("campaign", err)
	}
	e.term = t
	return t.ctx, nil
}

func (e *Election) campaign(ctx context.Context, value string) (*term, error) {
	wait := ctxowner.WithID(ctx, "election:"+e.id)
	for {
		e.learn(ctx)
		if err := e.l.Lock(wait); err != nil {
			if ctx.Err() == nil && errors.Is(err, rlock.ErrLockLost) {
				continue // confirmed past its lease (a stall): given back, so campaign again
			}
			return nil, err
		}
		// The leadership context is the LostContext itself: its Err and
		// Done are the loss signal's own checks.
		lead, stop := rlock.LostContext(e.owner, e.l)
		rec, err := e.handover(ctx, lead, value)
		if err == nil {
			return e.begin(rec, lead, stop), nil
		}
		stop()
		uerr := e.l.Unlock(e.owner)
		if ctx.Err() != nil || !errors.Is(err, rlock.ErrLockLost) {
			return nil, errors.Join(err, ignoreNotHeld(uerr))
		}
		// Lost during the handover: campaign again.
	}
}

// learn reads the leader key before the candidate waits for the lock: the
// lease of a leader it sees is one more it knows of, should Redis lose the
// record later.
func (e *Election) learn(ctx context.Context) {
	if raw, err := e.rdb.Get(ctx, e.key).Result(); err == nil {
		if r, ok := parseRecord(raw); ok {
			e.saw(r)
		}
	}
}

// saw notes the lease of a leader or pending record.
func (e *Election) saw(r record) {
	if r.state != stateLeader && r.state != statePending {
		return
	}
	for {
		old := e.seen.Load()
		if int64(r.lease) <= old || e.seen.CompareAndSwap(old, int64(r.lease)) {
			return
		}
	}
}

// unknownWait is the wait of a candidate that finds no record: the longest
// lease it knows of.
func (e *Election) unknownWait() time.Duration {
	return max(e.maxLease, e.lease, time.Duration(e.seen.Load()))
}

// handover marks the key pending, waits out the lease the mark names, and
// writes the leader record if the mark is still there (no other candidate
// took the lock meanwhile).
func (e *Election) handover(ctx, lead context.Context, value string) (record, error) {
	reply, err := takeScript.Run(lead, e.rdb, []string{e.key}, e.holder, value, uuid.NewString(),
		e.unknownWait().Milliseconds(), e.channel).StringSlice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("election: unexpected reply %q", reply)
	}
	if err != nil {
		return record{}, causeOr(lead, err)
	}
	e.refused(reply[1])
	pend, ok := parseRecord(reply[0])
	if !ok {
		return record{}, fmt.Errorf("election: unreadable mark %q", reply[0])
	}
	e.wrote(pend)
	e.saw(pend)
	if err := waitOut(ctx, lead, pend.lease); err != nil {
		return record{}, err
	}
	rec, swapped, err := e.swap(lead, pend, pend.with(stateLeader, pend.term+1, e.lease))
	switch {
	case swapped && lead.Err() != nil:
		e.end(rec) // recorded, but the hold was lost meanwhile: say so
		return record{}, context.Cause(lead)
	case err != nil:
		return record{}, causeOr(lead, err)
	case !swapped:
		return record{}, fmt.Errorf("%w: another candidate took the lock during the handover", rlock.ErrLockLost)
	}
	return rec, nil
}

// waitOut waits lease, and the clock rate allowance of a lease both ways
// (the previous leader's clock may run slow and this one's fast), unless
// ctx or lead ends first.
func waitOut(ctx, lead context.Context, lease time.Duration) error {
	if lease <= 0 {
		return lead.Err()
	}
	t := time.NewTimer(lease + watchdog.Allowance(lease))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-lead.Done():
		return context.Cause(lead)
	}
}

// causeOr returns lead's cause once it has ended, else err.
func causeOr(lead context.Context, err error) error {
	if lead.Err() != nil {
		return context.Cause(lead)
	}
	return err
}

// swap replaces the record from by to, written with the server's identity,
// if the key still holds from: it returns the record written.
func (e *Election) swap(ctx context.Context, from, to record) (record, bool, error) {
	reply, err := swapScript.Run(ctx, e.rdb, []string{e.key}, from.raw, to.head(), to.value, e.channel).StringSlice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("election: unexpected reply %q", reply)
	}
	if err != nil || reply[0] == "" {
		return record{}, false, err
	}
	e.refused(reply[1])
	rec, ok := parseRecord(reply[0])
	if !ok {
		return record{}, true, fmt.Errorf("election: unreadable record %q", reply[0])
	}
	e.wrote(rec)
	return rec, true, nil
}

// refused logs, once per Election, a PUBLISH Redis refused in a script
// that wrote the record (what: "<channel>: <error>"; "" when published).
func (e *Election) refused(what string) {
	if what == "" || !e.pubWarned.CompareAndSwap(false, true) {
		return
	}
	e.log.Warn("goredisson: the Redis user may not publish on the election's channel: the leader record is written, but other candidates' Observe and ObserveTerms are not told of new terms; grant the channel (docs/layout.md, ACL users)",
		"lock", e.l.Name(), "refused", what)
}

// wrote logs, once per Election, a record written where INFO was refused:
// no record can be told to be this Redis process's, so every hand-over
// waits as if there were none.
func (e *Election) wrote(r record) {
	if r.server != unknownServer || !e.infoWarned.CompareAndSwap(false, true) {
		return
	}
	e.log.Warn("goredisson: the Redis user may not run INFO in the election's scripts: a candidate cannot tell a leader record of this Redis process from one brought back by a restart or a failover, so every hand-over, a Resign's too, waits WithMaxLease; grant +info (docs/layout.md, ACL users)",
		"lock", e.l.Name(), "max lease", e.maxLease)
}

// begin starts a term: when its context ends other than by Resign (a loss,
// the Client closed), the record says the term ended, so that a successor
// need not wait out its lease.
func (e *Election) begin(rec record, lead context.Context, stop context.CancelFunc) *term {
	t := &term{rec: rec, ctx: lead, stop: stop}
	go func() {
		<-lead.Done()
		if !t.resigning.Load() {
			e.end(rec)
		}
	}()
	return t
}

// end replaces the leader record rec, whose context has ended, by its end.
func (e *Election) end(rec record) {
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	_, _, _ = e.swap(ctx, rec, rec.with(stateEnded, rec.term, 0))
}

func ignoreNotHeld(err error) error {
	if errors.Is(err, rlock.ErrNotHeld) {
		return nil
	}
	return err
}

// Resign gives up leadership: the context Campaign returned ends, the key
// says the leader resigned (so the next leader need not wait a lease), and
// the lock is released. By a candidate that does not lead, ErrNotLeader;
// after a loss, ErrNotLeader too (nothing is left to give up).
func (e *Election) Resign(ctx context.Context) error {
	if ctx == nil {
		return e.fail("resign", fmt.Errorf("%w: nil context", rlock.ErrInvalidArgument))
	}
	e.mu.Lock()
	t := e.term
	if t == nil {
		e.mu.Unlock()
		return e.fail("resign", ErrNotLeader)
	}
	e.term, e.busy = nil, false
	e.mu.Unlock()
	t.resigning.Store(true)
	lost := t.ctx.Err() != nil
	t.stop() // the context ends before the key says "resigned"
	var errs []error
	if !lost {
		_, _, err := e.swap(ctx, t.rec, t.rec.with(stateResigned, t.rec.term, 0))
		errs = append(errs, err)
	}
	uerr := e.l.Unlock(e.owner)
	if lost || errors.Is(uerr, rlock.ErrNotHeld) {
		return e.fail("resign", fmt.Errorf("%w: leadership was lost before Resign", ErrNotLeader))
	}
	return e.fail("resign", errors.Join(append(errs, uerr)...))
}

// Term is one leader's term, as LeaderTerm and ObserveTerms report it.
type Term struct {
	// Value is the leader's value (Campaign's).
	Value string
	// Rev numbers the election's terms, as etcd's revisions do: 1 for the
	// first leader since the leader key was made, one more for each new
	// term, a re-election of the same candidate too. It starts again at 1
	// in a new Epoch.
	Rev int64
	// Epoch identifies the leader key's life: it changes when Redis lost
	// the key, or when a candidate took over from a record it could not
	// trust (written by another Redis process: after a restart or a
	// failover), so that terms of equal Rev are told apart.
	Epoch string
	// Lease is the leader's watchdog timeout: how long after its last
	// renewal it may still believe it leads.
	Lease time.Duration
}

func (r record) public() Term {
	return Term{Value: r.value, Rev: r.term, Epoch: r.epoch, Lease: r.lease}
}

// Leader returns the current leader's value: ErrNoLeader when nobody leads
// (the lock is free, its holder has not taken office yet, or the leader
// resigned or lost the lock).
func (e *Election) Leader(ctx context.Context) (string, error) {
	t, err := e.LeaderTerm(ctx)
	return t.Value, err
}

// LeaderTerm returns the current leader's term; ErrNoLeader as Leader. For
// a *Lock or *FencedLock it reads the record and the lock in one script, so
// a leader whose hold is gone (taken over, force-unlocked, expired) is not
// reported; for a MultiLock or RedLock, whose locks may live elsewhere, it
// reads the record alone: a leader whose hold was lost shows until a
// successor takes the lock or the leader's context ends (docs/election.md).
func (e *Election) LeaderTerm(ctx context.Context) (Term, error) {
	if ctx == nil {
		return Term{}, e.fail("leader", fmt.Errorf("%w: nil context", rlock.ErrInvalidArgument))
	}
	keys := []string{e.key}
	if e.lockKey != "" {
		keys = append(keys, e.lockKey)
	}
	raw, err := readScript.Run(ctx, e.rdb, keys).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return Term{}, e.fail("leader", ErrNoLeader)
	case err != nil:
		return Term{}, e.fail("leader", err)
	}
	r, ok := parseRecord(raw)
	if !ok || r.state != stateLeader {
		return Term{}, e.fail("leader", ErrNoLeader)
	}
	e.saw(r)
	return r.public(), nil
}
