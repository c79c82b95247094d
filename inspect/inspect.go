// Package inspect reads the state of any lock of Redisson's family (as
// goredisson and Redisson write it) off Redis, without changing it: who
// holds it and how often, its TTL, a fair lock's queue, the subscribers of
// its channels, the last fencing token. rlockctl status and the rlocktest
// matchers print it; operators and tests can use it directly.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/layout"
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
	// KindForeign: the key exists but is not a hash: not a lock of this
	// layout (a redsync or SETNX lock, or another value).
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
	if i.Kind == KindForeign {
		return s + fmt.Sprintf(" (redis type %s)", i.RedisType)
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

// Lock reads the state of the named lock, whatever its type, without
// changing it. Its reads are pipelined, not atomic: under churn the parts
// may come from moments a round trip apart. Subscribers counts both plain
// and sharded subscriptions.
func Lock(ctx context.Context, rdb redis.UniversalClient, name string) (*Info, error) {
	switch {
	case rdb == nil:
		return nil, fmt.Errorf("inspect %q: nil redis client: %w", name, ErrInvalidArgument)
	case name == "":
		return nil, fmt.Errorf("inspect: empty lock name: %w", ErrInvalidArgument)
	case ctx == nil:
		return nil, fmt.Errorf("inspect %q: nil context: %w", name, ErrInvalidArgument)
	}
	pipe := rdb.Pipeline()
	typ := pipe.Type(ctx, name)
	fields := pipe.HGetAll(ctx, name)
	ttl := pipe.PTTL(ctx, name)
	queue := pipe.LRange(ctx, layout.Queue(name), 0, -1)
	timeouts := pipe.Exists(ctx, layout.Timeouts(name))
	token := pipe.Get(ctx, layout.Token(name))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return nil, fmt.Errorf("inspect %q: %w", name, err)
	}
	info := &Info{Name: name, RedisType: typ.Val(), Queue: queue.Val()}
	info.Token, _ = strconv.ParseInt(token.Val(), 10, 64)
	info.classify(fields.Val(), timeouts.Val() > 0)
	info.setTTL(ttl.Val())
	if err := info.countSubscribers(ctx, rdb); err != nil {
		return nil, fmt.Errorf("inspect %q: %w", name, err)
	}
	return info, nil
}

// classify sets the kind, mode and holders from the key's Redis type, its
// hash fields, whether fair-lock timeouts exist, and the token.
func (info *Info) classify(fields map[string]string, timeouts bool) {
	switch info.RedisType {
	case "none":
		info.Kind = KindNone
	case "hash":
		info.Kind = KindReentrant
		for f, v := range fields {
			if f == "mode" {
				info.Kind, info.Mode = KindReadWrite, v
				continue
			}
			n, _ := strconv.Atoi(v)
			info.Holders = append(info.Holders, Holder{Field: f, Count: n})
		}
		sort.Slice(info.Holders, func(a, b int) bool { return info.Holders[a].Field < info.Holders[b].Field })
	default:
		info.Kind = KindForeign
	}
	if info.Kind != KindReentrant && info.Kind != KindNone {
		return
	}
	switch {
	case len(info.Queue) > 0 || timeouts:
		info.Kind = KindFair
	case info.Token > 0 && info.Kind == KindReentrant:
		info.Kind = KindFenced
	}
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

// countSubscribers counts the subscriptions, plain and sharded, to the
// lock's channels (a fair lock's waiters each have their own).
func (info *Info) countSubscribers(ctx context.Context, rdb redis.UniversalClient) error {
	channels := []string{layout.Channel(info.Name)}
	if info.Kind == KindReadWrite {
		channels[0] = layout.RWChannel(info.Name)
	}
	for _, f := range info.Queue {
		channels = append(channels, layout.FairChannel(info.Name, f))
	}
	subs, err := rdb.PubSubNumSub(ctx, channels...).Result()
	if err != nil {
		return err
	}
	// Sharded subscriptions (Redis 7+); an older server has none.
	shard, _ := rdb.PubSubShardNumSub(ctx, channels...).Result()
	for _, ch := range channels {
		info.Subscribers += subs[ch] + shard[ch]
	}
	return nil
}

func isWrongType(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "WRONGTYPE")
}
