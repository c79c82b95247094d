package inspect

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/inspectaux"
	"github.com/goredisson/goredisson/internal/layout"
)

// Bounds of what Read reads of one key.
const (
	// MaxFields is the most hash fields read of one key (Info.Partial).
	MaxFields = 1000
	// MaxPermits is the most permits listed of a permit semaphore.
	MaxPermits = 100
	// maxQueue is the most fair-lock waiters listed.
	maxQueue = 100
	// maxCounter is the longest string read as a counter (an int64).
	maxCounter = 20
	// neverMs is the permit expiry score Redisson writes for "never".
	neverMs = 922337203685477
)

// Read reads many keys as Lock reads one, in a few pipelined round trips
// for all of them (rlockctl list reads each SCAN batch so). names must not
// be empty strings.
func Read(ctx context.Context, rdb redis.UniversalClient, names []string) ([]*Info, error) {
	return read(ctx, rdb, names, nil)
}

func init() {
	inspectaux.Lock = func(ctx context.Context, rdb redis.UniversalClient, name, aux string) (any, error) {
		if aux == "" {
			return nil, fmt.Errorf("inspect %q: empty auxiliary name: %w", name, ErrInvalidArgument)
		}
		infos, err := read(ctx, rdb, []string{name}, []string{aux})
		if err != nil {
			return nil, fmt.Errorf("inspect %q: %w", name, err)
		}
		return infos[0], nil
	}
}

// read is Read, with a fair lock's queue and timeouts read under aux[i]
// (the name Redisson derives them from) when aux is not nil.
func read(ctx context.Context, rdb redis.UniversalClient, names, aux []string) ([]*Info, error) {
	switch {
	case rdb == nil:
		return nil, fmt.Errorf("inspect: nil redis client: %w", ErrInvalidArgument)
	case ctx == nil:
		return nil, fmt.Errorf("inspect: nil context: %w", ErrInvalidArgument)
	}
	for _, n := range names {
		if n == "" {
			return nil, fmt.Errorf("inspect: empty lock name: %w", ErrInvalidArgument)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	type first struct {
		typ      *redis.StatusCmd
		ttl      *redis.DurationCmd
		strlen   *redis.IntCmd
		queue    *redis.StringSliceCmd
		timeouts *redis.IntCmd
		token    *redis.StringCmd
		taken    *redis.IntCmd
	}
	pipe := rdb.Pipeline()
	now := pipe.Time(ctx)
	rs := make([]first, len(names))
	for i, n := range names {
		q := n
		if aux != nil {
			q = aux[i]
		}
		rs[i] = first{typ: pipe.Type(ctx, n), ttl: pipe.PTTL(ctx, n), strlen: pipe.StrLen(ctx, n),
			queue: pipe.LRange(ctx, layout.Queue(q), 0, maxQueue-1), timeouts: pipe.Exists(ctx, layout.Timeouts(q)),
			token: pipe.Get(ctx, layout.Token(n)), taken: pipe.ZCard(ctx, layout.PermitTimeouts(n))}
	}
	if err := execTolerant(ctx, pipe); err != nil {
		return nil, err
	}
	infos := make([]*Info, len(names))
	type second struct {
		hscan *redis.ScanCmd
		get   *redis.StringCmd
		perms *redis.ZSliceCmd
	}
	ss := make([]second, len(names))
	pipe = rdb.Pipeline()
	for i, n := range names {
		info := &Info{Name: n, RedisType: rs[i].typ.Val(), Queue: rs[i].queue.Val(), Taken: rs[i].taken.Val()}
		info.Token, _ = strconv.ParseInt(rs[i].token.Val(), 10, 64)
		infos[i] = info
		switch info.RedisType {
		case "hash":
			ss[i].hscan = pipe.HScan(ctx, n, 0, "", 256)
		case "string":
			if rs[i].strlen.Val() <= maxCounter {
				ss[i].get = pipe.Get(ctx, n)
			}
		}
		if info.Taken > 0 {
			ss[i].perms = pipe.ZRangeWithScores(ctx, layout.PermitTimeouts(n), 0, MaxPermits-1)
		}
	}
	if err := execTolerant(ctx, pipe); err != nil {
		return nil, err
	}
	nowMs := now.Val().UnixMilli()
	for i, info := range infos {
		switch {
		case ss[i].hscan != nil:
			fields, err := hashFields(ctx, rdb, info, ss[i].hscan)
			if err != nil {
				return nil, err
			}
			info.classifyHash(fields)
		case info.RedisType == "string":
			info.classifyString(ss[i].get)
		case info.RedisType == "none":
			info.Kind = KindNone
		default:
			info.Kind = KindForeign
			info.Reason = "not a lock: a Redis " + info.RedisType + ", not a lock or synchronizer"
		}
		if info.Kind == KindReentrant || info.Kind == KindNone {
			switch {
			case len(info.Queue) > 0 || rs[i].timeouts.Val() > 0:
				info.Kind = KindFair
			case info.Token > 0 && info.Kind == KindReentrant:
				info.Kind = KindFenced
			}
		}
		if layout.Auxiliary(info.Name) && info.Kind != KindNone {
			info.Kind = KindForeign
			info.Holders = nil
			info.Reason = "not a lock: an auxiliary key of a lock or synchronizer (docs/layout.md): ask for the lock's own name"
		}
		info.setTTL(rs[i].ttl.Val())
		if info.Kind.IsLock() && info.TTL == NoExpiry {
			info.notALock("a hash without a TTL (every lock's hash carries its lease as its TTL)")
		}
		if ss[i].perms != nil {
			for _, z := range ss[i].perms.Val() {
				p := Permit{ID: hex.EncodeToString([]byte(fmt.Sprint(z.Member))), Lease: NoExpiry}
				if z.Score < neverMs {
					p.Lease = time.Duration(int64(z.Score)-nowMs) * time.Millisecond
				}
				info.Permits = append(info.Permits, p)
			}
		}
	}
	if err := countSubscribers(ctx, rdb, infos); err != nil {
		return nil, err
	}
	for _, info := range infos {
		info.tell()
	}
	return infos, nil
}

// execTolerant runs a pipeline of reads; a missing key (redis.Nil) or a
// key of another type (WRONGTYPE) is an answer, not an error.
func execTolerant(ctx context.Context, pipe redis.Pipeliner) error {
	cmds, err := pipe.Exec(ctx)
	if err == nil {
		return nil
	}
	for _, c := range cmds {
		if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) && !isWrongType(e) {
			return e
		}
	}
	return nil
}

// hashFields returns the hash's fields and values, the first MaxFields of
// a larger hash (then info.Partial).
func hashFields(ctx context.Context, rdb redis.UniversalClient, info *Info, first *redis.ScanCmd) (map[string]string, error) {
	fields := map[string]string{}
	kv, cursor := first.Val()
	for {
		for j := 0; j+1 < len(kv); j += 2 {
			fields[kv[j]] = kv[j+1]
		}
		if cursor == 0 {
			return fields, nil
		}
		if len(fields) >= MaxFields {
			info.Partial = true
			return fields, nil
		}
		var err error
		if kv, cursor, err = rdb.HScan(ctx, info.Name, cursor, "", 256).Result(); err != nil {
			if isWrongType(err) {
				return fields, nil
			}
			return nil, err
		}
	}
}

// holderField reports whether f reads as "<client id>:<owner id>".
func holderField(f string) bool {
	i := strings.IndexByte(f, ':')
	return i > 0 && i < len(f)-1
}

// holdCount parses a hold count: a positive integer.
func holdCount(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	return n, err == nil && n > 0
}

// notALock marks the key foreign, saying why.
func (info *Info) notALock(format string, args ...any) {
	info.Kind, info.Mode, info.Holders = KindForeign, "", nil
	info.Reason = "not a lock: " + fmt.Sprintf(format, args...)
}

// classifyHash sets the kind, mode and holders of a hash: a read-write lock
// (a "mode" field), a faster multilock's group, or a lock whose every field
// is "<client id>:<owner id>" with a positive hold count; anything else is
// not a lock.
func (info *Info) classifyHash(fields map[string]string) {
	keys := make([]string, 0, len(fields))
	for f := range fields {
		keys = append(keys, f)
	}
	sort.Strings(keys)
	info.Kind = KindReentrant
	if mode, ok := fields["mode"]; ok {
		if mode != "read" && mode != "write" {
			info.notALock("a hash whose field \"mode\" is %q, not read or write", mode)
			return
		}
		info.Kind, info.Mode = KindReadWrite, mode
	} else {
		for _, f := range keys {
			if strings.HasSuffix(f, ":expire_time") || strings.HasSuffix(f, ":lock_count") {
				info.classifyFaster(fields, keys)
				return
			}
		}
	}
	for _, f := range keys {
		if f == "mode" && info.Kind == KindReadWrite {
			continue
		}
		n, ok := holdCount(fields[f])
		switch {
		case !holderField(f):
			info.notALock("a hash whose field %q is not <client id>:<owner id>", f)
			return
		case !ok:
			info.notALock("a hash whose field %q holds %q, not a hold count", f, fields[f])
			return
		}
		info.Holders = append(info.Holders, Holder{Field: f, Count: n})
	}
}

// classifyFaster reads a faster multilock's group hash: a value field
// holds its holder's field, with <value>:<holder>:expire_time and
// <value>:<holder>:lock_count beside it. A holder's Count is the number of
// values it holds.
func (info *Info) classifyFaster(fields map[string]string, keys []string) {
	info.Kind = KindFasterMulti
	values := map[string]int{}
	for _, f := range keys {
		v := fields[f]
		if strings.HasSuffix(f, ":expire_time") || strings.HasSuffix(f, ":lock_count") {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				info.notALock("a hash whose field %q holds %q, not a number", f, v)
				return
			}
			continue
		}
		if !holderField(v) {
			info.notALock("a hash whose field %q holds %q, not a holder field <client id>:<owner id>", f, v)
			return
		}
		values[v]++
	}
	for h, n := range values {
		info.Holders = append(info.Holders, Holder{Field: h, Count: n})
	}
	sort.Slice(info.Holders, func(a, b int) bool { return info.Holders[a].Field < info.Holders[b].Field })
}

// classifyString reads a string: an integer is a synchronizer's counter
// (which one, tell decides), anything else is not a lock.
func (info *Info) classifyString(get *redis.StringCmd) {
	if get != nil {
		if n, err := strconv.ParseInt(get.Val(), 10, 64); err == nil {
			info.Counter = n
			info.Kind = KindSemaphoreOrLatch
			if info.Taken > 0 {
				info.Kind = KindPermitSemaphore
			}
			return
		}
	}
	info.Kind = KindForeign
	info.Reason = "not a lock: a string that is not an integer counter (a SETNX or redsync lock, or another value)"
}

// tell decides what a counter is, as far as the data allows: Redisson's
// latch never has a TTL; waiters show on their type's channel.
func (info *Info) tell() {
	if info.Kind != KindSemaphoreOrLatch {
		return
	}
	switch {
	case info.TTL > 0:
		info.Kind, info.Reason = KindSemaphore, "a counter with a TTL (Redisson's latch has none)"
	case info.semSubs > 0 && info.latchSubs == 0:
		info.Kind, info.Reason = KindSemaphore, "waiters on its semaphore channel"
	case info.latchSubs > 0 && info.semSubs == 0:
		info.Kind, info.Reason = KindLatch, "waiters on its latch channel"
	default:
		info.Reason = "an integer counter: a Semaphore, a CountDownLatch and a PermitExpirableSemaphore with no permit taken look the same in Redis"
	}
	if info.Kind == KindSemaphore {
		info.Reason += "; a PermitExpirableSemaphore with no permit taken looks the same"
	}
}

// channels returns the channels whose subscribers count for info.
func (info *Info) channels() []string {
	switch info.Kind {
	case KindForeign:
		return nil
	case KindReadWrite:
		return []string{layout.RWChannel(info.Name)}
	case KindSemaphore, KindPermitSemaphore:
		return []string{layout.SemaphoreChannel(info.Name)}
	case KindLatch:
		return []string{layout.LatchChannel(info.Name)}
	case KindSemaphoreOrLatch:
		return []string{layout.SemaphoreChannel(info.Name), layout.LatchChannel(info.Name)}
	}
	out := []string{layout.Channel(info.Name)}
	for _, f := range info.Queue {
		out = append(out, layout.FairChannel(info.Name, f))
	}
	return out
}

// countSubscribers counts the subscriptions, plain and sharded, to each
// key's channels (a fair lock's waiters each have their own), in one
// PUBSUB NUMSUB and one PUBSUB SHARDNUMSUB for all.
func countSubscribers(ctx context.Context, rdb redis.UniversalClient, infos []*Info) error {
	var all []string
	for _, info := range infos {
		all = append(all, info.channels()...)
	}
	if len(all) == 0 {
		return nil
	}
	subs, err := rdb.PubSubNumSub(ctx, all...).Result()
	if err != nil {
		return err
	}
	// Sharded subscriptions (Redis 7+); an older server has none.
	shard, _ := rdb.PubSubShardNumSub(ctx, all...).Result()
	for _, info := range infos {
		chs := info.channels()
		for _, ch := range chs {
			info.Subscribers += subs[ch] + shard[ch]
		}
		if info.Kind == KindSemaphoreOrLatch {
			info.semSubs = subs[chs[0]] + shard[chs[0]]
			info.latchSubs = subs[chs[1]] + shard[chs[1]]
		}
	}
	return nil
}
