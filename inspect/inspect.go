// Package inspect reads the state of any lock or synchronizer of Redisson's
// family (as goredisson and Redisson write it) off Redis, without changing
// it: who holds it and how often, its TTL, a fair lock's queue, a
// semaphore's permits or a latch's count, the subscribers of its channels,
// the last fencing token; it tells a key that is not a lock (KindForeign,
// with the reason) and traces holder fields to the processes of goredisson
// Clients (Processes). rlockctl status and list and the rlocktest matchers
// print it; operators and tests can use it directly.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Kind is the kind of lock Lock reads off the layout.
type Kind string

// The kinds of lock.
const (
	// KindNone: the lock's key does not exist (nobody holds it).
	KindNone Kind = "none"
	// KindReentrant: a hash of holder fields (Lock, SpinLock).
	KindReentrant Kind = "reentrant"
	// KindFenced: a reentrant hash with a fencing-token counter.
	KindFenced Kind = "fenced"
	// KindFair: a reentrant hash with a waiter queue (FairLock).
	KindFair Kind = "fair"
	// KindReadWrite: a hash with a "mode" field (ReadWriteLock).
	KindReadWrite Kind = "read-write"
	// KindFasterMulti: a faster multilock's group hash (value fields,
	// their holders, expire_time and lock_count fields).
	KindFasterMulti Kind = "faster-multilock"
	// KindSemaphore: a counter with a TTL or with waiters on the
	// semaphore channel (a Semaphore, or a PermitExpirableSemaphore with
	// no permit taken).
	KindSemaphore Kind = "semaphore"
	// KindPermitSemaphore: a counter with permits taken ({name}:timeout).
	KindPermitSemaphore Kind = "permit-semaphore"
	// KindLatch: a counter with waiters on the latch channel.
	KindLatch Kind = "latch"
	// KindSemaphoreOrLatch: an integer string that nothing else tells
	// apart: a Semaphore, a CountDownLatch, or a PermitExpirableSemaphore
	// with no permit taken.
	KindSemaphoreOrLatch Kind = "semaphore-or-latch"
	// KindForeign: the key exists but is not a lock or synchronizer of
	// Redisson's layout (a redsync or SETNX lock, an application's hash);
	// Info.Reason says why.
	KindForeign Kind = "foreign"
)

// NoExpiry is the TTL of a lock key without expiry.
const NoExpiry time.Duration = -1

// Info is a snapshot of one lock's state in Redis, for tools, tests and
// operators: rlockctl status and the rlocktest matchers print it.
type Info struct {
	// Name is the lock's name (its Redis key).
	Name string
	// Kind is one of the Kind constants.
	Kind Kind
	// RedisType is the key's Redis type ("none" when it does not exist).
	RedisType string
	// Mode is "read" or "write" for a held ReadWriteLock, else "".
	Mode string
	// Holders are the hash fields holding the lock and their hold counts,
	// sorted by field.
	Holders []Holder
	// TTL is the remaining lease: 0 when unlocked, NoExpiry when the key has
	// no expiry.
	TTL time.Duration
	// Queue lists a fair lock's waiter fields in arrival order.
	Queue []string
	// Subscribers is the number of connections subscribed to the lock's
	// unlock channel (PUBSUB NUMSUB), plus, for a fair lock, to its queued
	// waiters' own channels: clients with waiters, not waiters.
	Subscribers int64
	// Token is the last fencing token issued for the name (0: none).
	Token int64
	// Counter is a synchronizer's integer: a semaphore's available
	// permits, a latch's count.
	Counter int64
	// Permits are a permit semaphore's permits taken (the first
	// MaxPermits), Taken how many there are.
	Permits []Permit
	Taken   int64
	// Reason says why a KindForeign key is not a lock, or how a counter's
	// kind was told.
	Reason string
	// Partial is set when a hash had more than MaxFields fields: Holders
	// lists the first MaxFields.
	Partial bool

	semSubs, latchSubs int64
}

// Permit is one permit taken from a PermitExpirableSemaphore.
type Permit struct {
	// ID is the permit id (hex).
	ID string
	// Lease is its remaining lease (NoExpiry: none).
	Lease time.Duration
}

// Holder is one hash field of a held lock.
type Holder struct {
	// Field is "<client id>:<owner id>" (":write" appended for a writer).
	Field string
	// Count is the hold count (re-entries).
	Count int
}

// Locked reports whether anyone holds the lock.
func (i *Info) Locked() bool { return i != nil && len(i.Holders) > 0 }

// IsLock reports whether the key is a lock (reentrant, fenced, fair,
// read-write or faster multilock), held or not.
func (k Kind) IsLock() bool {
	switch k {
	case KindReentrant, KindFenced, KindFair, KindReadWrite, KindFasterMulti:
		return true
	}
	return false
}

// IsSynchronizer reports whether the key is a semaphore, permit semaphore or
// latch (or one of them).
func (k Kind) IsSynchronizer() bool {
	switch k {
	case KindSemaphore, KindPermitSemaphore, KindLatch, KindSemaphoreOrLatch:
		return true
	}
	return false
}

// Holds returns the sum of all holders' hold counts.
func (i *Info) Holds() int {
	if i == nil {
		return 0
	}
	n := 0
	for _, h := range i.Holders {
		n += h.Count
	}
	return n
}

// String renders the snapshot on one line, e.g.
// `lock "a" reentrant: holders [c1:7=2] ttl 29.5s`.
func (i *Info) String() string {
	if i == nil {
		return "<nil info>"
	}
	s := fmt.Sprintf("lock %q %s", i.Name, i.Kind)
	switch {
	case i.Kind == KindForeign:
		return s + fmt.Sprintf(" (redis type %s): %s", i.RedisType, i.Reason)
	case i.Kind.IsSynchronizer():
		s += fmt.Sprintf(": %d", i.Counter)
		if i.Kind == KindPermitSemaphore {
			s += fmt.Sprintf(" available, %d taken", i.Taken)
		}
		return s
	}
	if i.Mode != "" {
		s += " mode " + i.Mode
	}
	s += ": holders ["
	for n, h := range i.Holders {
		if n > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%d", h.Field, h.Count)
	}
	s += "]"
	switch i.TTL {
	case 0:
	case NoExpiry:
		s += " ttl none"
	default:
		s += " ttl " + i.TTL.Round(time.Millisecond).String()
	}
	if len(i.Queue) > 0 {
		s += fmt.Sprintf(" queue %v", i.Queue)
	}
	if i.Token > 0 {
		s += fmt.Sprintf(" token %d", i.Token)
	}
	return s
}

// ErrInvalidArgument is returned by Lock for a nil client, an empty name or
// a nil context; test for it with errors.Is.
var ErrInvalidArgument = errors.New("invalid argument")

// Lock reads the state of the named lock or synchronizer, whatever its
// type, without changing it. Its reads are pipelined, not atomic: under
// churn the parts may come from moments a round trip apart. Subscribers
// counts both plain and sharded subscriptions.
func Lock(ctx context.Context, rdb redis.UniversalClient, name string) (*Info, error) {
	switch {
	case rdb == nil:
		return nil, fmt.Errorf("inspect %q: nil redis client: %w", name, ErrInvalidArgument)
	case name == "":
		return nil, fmt.Errorf("inspect: empty lock name: %w", ErrInvalidArgument)
	case ctx == nil:
		return nil, fmt.Errorf("inspect %q: nil context: %w", name, ErrInvalidArgument)
	}
	infos, err := Read(ctx, rdb, []string{name})
	if err != nil {
		return nil, fmt.Errorf("inspect %q: %w", name, err)
	}
	return infos[0], nil
}

// setTTL sets the TTL from the key's PTTL.
func (info *Info) setTTL(d time.Duration) {
	if info.RedisType == "none" {
		return
	}
	switch {
	case d == -1 || d == -time.Millisecond:
		info.TTL = NoExpiry
	case d > 0:
		info.TTL = d
	}
}

func isWrongType(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "WRONGTYPE")
}
