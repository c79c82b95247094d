package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"

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
// (the name Redisson derives them from) when aux is not nil. It reads
// every key in two pipelined round trips: the first asks each key what
// tells its layout (probe), the second what the layout it points to holds
// (ask); then each layout's reader fills the key's Info (classify).
func read(ctx context.Context, rdb redis.UniversalClient, names, aux []string) ([]*Info, error) {
	if err := checkRead(ctx, rdb, names); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, nil
	}
	keys := newKeys(names, aux)
	pipe := rdb.Pipeline()
	now := pipe.Time(ctx)
	for _, k := range keys {
		k.probe(ctx, pipe)
	}
	if err := execTolerant(ctx, pipe); err != nil {
		return nil, err
	}
	pipe = rdb.Pipeline()
	for _, k := range keys {
		k.ask(ctx, pipe)
	}
	if err := execTolerant(ctx, pipe); err != nil {
		return nil, err
	}
	infos := make([]*Info, len(keys))
	for i, k := range keys {
		if err := k.classify(ctx, rdb, now.Val().UnixMilli()); err != nil {
			return nil, err
		}
		infos[i] = k.info
	}
	if err := countSubscribers(ctx, rdb, infos); err != nil {
		return nil, err
	}
	for _, info := range infos {
		info.tell()
	}
	return infos, nil
}

// checkRead refuses bad input to read before any command.
func checkRead(ctx context.Context, rdb redis.UniversalClient, names []string) error {
	switch {
	case rdb == nil:
		return fmt.Errorf("inspect: nil redis client: %w", ErrInvalidArgument)
	case ctx == nil:
		return fmt.Errorf("inspect: nil context: %w", ErrInvalidArgument)
	}
	for _, n := range names {
		if n == "" {
			return fmt.Errorf("inspect: empty lock name: %w", ErrInvalidArgument)
		}
	}
	return nil
}

// newKeys returns the keys to read, a fair lock's queue and timeouts
// under aux[i] when aux is not nil.
func newKeys(names, aux []string) []*key {
	keys := make([]*key, len(names))
	for i, n := range names {
		q := n
		if aux != nil {
			q = aux[i]
		}
		keys[i] = &key{info: &Info{Name: n}, queueName: q}
	}
	return keys
}

// key is one key that read reads: its Info, and the replies of both round
// trips.
type key struct {
	info *Info
	// queueName is the name a fair lock's queue and timeouts derive from.
	queueName string

	// The first round trip, asked of every key: its type, TTL and length
	// (a counter is a short string), a fair lock's queue and timeouts, the
	// fencing token, the permits taken of a permit semaphore.
	typ      *redis.StatusCmd
	ttl      *redis.DurationCmd
	strlen   *redis.IntCmd
	queue    *redis.StringSliceCmd
	timeouts *redis.IntCmd
	token    *redis.StringCmd
	taken    *redis.IntCmd

	// The second round trip, asked by the layouts the first points to: a
	// hash's fields, a counter's value, the permits' leases.
	hscan *redis.ScanCmd
	get   *redis.StringCmd
	perms *redis.ZSliceCmd
}

// probe queues the first round trip's reads of k.
func (k *key) probe(ctx context.Context, pipe redis.Pipeliner) {
	n, q := k.info.Name, k.queueName
	k.typ, k.ttl, k.strlen = pipe.Type(ctx, n), pipe.PTTL(ctx, n), pipe.StrLen(ctx, n)
	k.queue, k.timeouts = pipe.LRange(ctx, layout.Queue(q), 0, maxQueue-1), pipe.Exists(ctx, layout.Timeouts(q))
	k.token, k.taken = pipe.Get(ctx, layout.Token(n)), pipe.ZCard(ctx, layout.PermitTimeouts(n))
}

// ask notes the first round trip's answers in k's Info and queues the
// second round trip's reads: a hash's fields, a short string's value, the
// permits taken.
func (k *key) ask(ctx context.Context, pipe redis.Pipeliner) {
	info := k.info
	info.RedisType, info.Queue, info.Taken = k.typ.Val(), k.queue.Val(), k.taken.Val()
	info.Token, _ = strconv.ParseInt(k.token.Val(), 10, 64)
	switch info.RedisType {
	case "hash":
		k.hscan = pipe.HScan(ctx, info.Name, 0, "", 256)
	case "string":
		if k.strlen.Val() <= maxCounter {
			k.get = pipe.Get(ctx, info.Name)
		}
	}
	if info.Taken > 0 {
		k.perms = pipe.ZRangeWithScores(ctx, layout.PermitTimeouts(info.Name), 0, MaxPermits-1)
	}
}

// classify fills k's Info from both round trips, one layout after the
// other: the key's own (a lock's hash, a synchronizer's counter, none or
// foreign), then what the keys beside it add (a fair lock's queue, a
// fenced lock's token, a permit semaphore's permits). nowMs is the
// server's time of the first round trip.
func (k *key) classify(ctx context.Context, rdb redis.UniversalClient, nowMs int64) error {
	info := k.info
	switch {
	case k.hscan != nil:
		fields, err := hashFields(ctx, rdb, info, k.hscan)
		if err != nil {
			return err
		}
		info.classifyHash(fields)
	case info.RedisType == "string":
		info.classifyString(k.get)
	case info.RedisType == "none":
		info.Kind = KindNone
	default:
		info.Kind = KindForeign
		info.Reason = "not a lock: a Redis " + info.RedisType + ", not a lock or synchronizer"
	}
	info.classifyFairOrFenced(k.timeouts.Val())
	info.classifyAuxiliary()
	info.setTTL(k.ttl.Val())
	if info.Kind.IsLock() && info.TTL == NoExpiry {
		info.notALock("a hash without a TTL (every lock's hash carries its lease as its TTL)")
	}
	info.readPermits(k.perms, nowMs)
	return nil
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
