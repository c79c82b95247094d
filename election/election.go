// Package election is leader election on goredisson's locks, modeled on
// etcd's client/v3/concurrency.Election: Campaign blocks until this
// candidate leads and returns a context that ends when leadership is lost;
// Resign gives it up; Leader and Observe tell who leads. It runs on a
// *rlock.Lock, *rlock.MultiLock or *rlock.RedLock (any rlock.Locker) held
// with a watchdog lease, and keeps the leader's value in a key of its own,
// "<lock key>:leader" (rlock.KeyOf), beside Redisson's lock layout
// (docs/election.md).
package election

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// ErrNotLeader is the error of Resign by a candidate that does not lead.
var ErrNotLeader = errors.New("not the leader")

// ErrNoLeader is the error of Leader when nobody leads.
var ErrNoLeader = errors.New("no leader")

// The leader key's values: a leader's record is "<candidate id>\n<value>";
// pending+record is a candidate that holds the lock and waits out its
// handover; resigned is left by a leader that resigned.
const (
	pending  = "\x01"
	resigned = ""
)

// Election is one candidate in the election on a lock. Its methods are safe
// for concurrent use; one Campaign at a time.
type Election struct {
	l     rlock.Locker
	rdb   redis.UniversalClient
	key   string
	id    string
	owner context.Context // the candidate's owner, alive as long as it leads
	poll  time.Duration

	mu   sync.Mutex
	busy bool  // a Campaign runs or the candidate leads
	term *term // while leading
}

type term struct {
	record string
	ctx    context.Context
	stop   context.CancelFunc
}

// Option configures an Election.
type Option func(*Election)

// WithKey sets the key that holds the leader's value (default
// "<lock key>:leader", the key under WithNameMapper); on a Redis Cluster
// give it the lock's hash tag.
func WithKey(key string) Option { return func(e *Election) { e.key = key } }

// WithPollInterval sets how often Observe reads the leader (default 500 ms).
func WithPollInterval(d time.Duration) Option { return func(e *Election) { e.poll = d } }

// New returns a candidate in the election on l, keeping the leader's value
// on rdb. A nil lock or client, or a bad option, is rlock.ErrInvalidArgument.
func New(rdb redis.UniversalClient, l rlock.Locker, opts ...Option) (*Election, error) {
	if rdb == nil || l == nil {
		return nil, &rlock.Error{Op: "election", Err: fmt.Errorf("%w: nil lock or Redis client", rlock.ErrInvalidArgument)}
	}
	id := uuid.NewString()
	e := &Election{l: l, rdb: rdb, key: rlock.KeyOf(l) + ":leader", id: id, poll: 500 * time.Millisecond,
		owner: ctxowner.WithID(context.Background(), "election:"+id)}
	for _, o := range opts {
		if o != nil {
			o(e)
		}
	}
	if e.key == "" || e.poll <= 0 {
		return nil, &rlock.Error{Op: "election", Lock: l.Name(), Err: fmt.Errorf("%w: empty key or poll interval <= 0", rlock.ErrInvalidArgument)}
	}
	return e, nil
}

func (e *Election) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return &rlock.Error{Op: op, Lock: e.l.Name(), Err: err}
}

// Campaign blocks until this candidate leads with value, or ctx ends (ctx
// bounds only the wait). It returns a context that ends, with a cause
// wrapping rlock.ErrLockLost, when leadership is lost, and is cancelled by
// Resign. A candidate that takes the lock without finding the previous
// leader's Resign (a first election, a leader that stopped or was cut off,
// Redis that lost its data) waits one lease before it leads, so that the
// previous leader's context has ended (docs/election.md). An empty value is
// rlock.ErrInvalidArgument.
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
	t, err := e.campaign(ctx, e.id+"\n"+value)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.busy = false
		return nil, e.fail("campaign", err)
	}
	e.term = t
	return t.ctx, nil
}

func (e *Election) campaign(ctx context.Context, record string) (*term, error) {
	wait := ctxowner.WithID(ctx, "election:"+e.id)
	for {
		if err := e.l.Lock(wait); err != nil {
			return nil, err
		}
		lead, stop := rlock.LostContext(e.owner, e.l)
		err := e.handover(ctx, lead, record)
		if err == nil {
			return &term{record: record, ctx: lead, stop: stop}, nil
		}
		stop()
		uerr := e.l.Unlock(e.owner)
		if ctx.Err() != nil || !errors.Is(err, rlock.ErrLockLost) {
			return nil, errors.Join(err, ignoreNotHeld(uerr))
		}
		// Lost during the handover: campaign again.
	}
}

// handover marks the key pending, waits out the previous leader's lease
// unless it resigned, and writes the record.
func (e *Election) handover(ctx, lead context.Context, record string) error {
	prev, err := e.rdb.SetArgs(lead, e.key, pending+record, redis.SetArgs{Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		prev, err = pending, nil // no trace: wait
	case lead.Err() != nil:
		return context.Cause(lead)
	case err != nil:
		return err
	}
	if prev != resigned {
		lease, err := e.l.RemainTTL(e.owner)
		if err != nil {
			if lead.Err() != nil {
				return context.Cause(lead)
			}
			return err
		}
		if lease == rlock.NoExpiry || lease <= 0 {
			lease = 30 * time.Second
		}
		t := time.NewTimer(lease)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-lead.Done():
			return context.Cause(lead)
		}
	}
	if err := lead.Err(); err != nil {
		return context.Cause(lead)
	}
	return e.rdb.Set(lead, e.key, record, 0).Err()
}

func ignoreNotHeld(err error) error {
	if errors.Is(err, rlock.ErrNotHeld) {
		return nil
	}
	return err
}

// resignScript leaves the resigned mark if the key still holds the record.
var resignScript = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('set', KEYS[1], '') return 1 end return 0`)

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
	lost := t.ctx.Err() != nil
	t.stop()
	var errs []error
	if !lost {
		errs = append(errs, resignScript.Run(ctx, e.rdb, []string{e.key}, t.record).Err())
	}
	uerr := e.l.Unlock(e.owner)
	if lost || errors.Is(uerr, rlock.ErrNotHeld) {
		return e.fail("resign", fmt.Errorf("%w: leadership was lost before Resign", ErrNotLeader))
	}
	return e.fail("resign", errors.Join(append(errs, uerr)...))
}

// Leader returns the current leader's value: ErrNoLeader when the lock is
// free or its holder has not taken office yet.
func (e *Election) Leader(ctx context.Context) (string, error) {
	if ctx == nil {
		return "", e.fail("leader", fmt.Errorf("%w: nil context", rlock.ErrInvalidArgument))
	}
	locked, err := e.l.IsLocked(ctx)
	if err != nil {
		return "", err
	}
	v, err := e.rdb.Get(ctx, e.key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", e.fail("leader", ErrNoLeader)
	case err != nil:
		return "", e.fail("leader", err)
	}
	_, value, ok := strings.Cut(v, "\n")
	if !locked || !ok || strings.HasPrefix(v, pending) {
		return "", e.fail("leader", ErrNoLeader)
	}
	return value, nil
}

// Observe returns a channel of leader values: the current one, then each
// new one, read every poll interval (WithPollInterval); it closes when ctx
// ends. A time without a leader sends nothing.
func (e *Election) Observe(ctx context.Context) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		t := time.NewTicker(e.poll)
		defer t.Stop()
		last := ""
		for {
			if v, err := e.Leader(ctx); err == nil && v != last {
				select {
				case ch <- v:
					last = v
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}
