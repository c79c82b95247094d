package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The row "Redisson's scripts (server cost only)": what Redisson's own
// acquire and release cost Redis, measured without Java. The scripts are
// written here from the protocol as ../shared/design/redisson-protocol.md
// states it (RLock's acquire, and its release with the unlock latch), on
// Redisson's layout: the lock hash, the unlock channel, the latch key. They
// have none of goredisson's additions (no cancel floor read, no settle
// modes). As Redisson's client does, the latch is deleted by a command of
// its own once the release's reply arrived. The commands go out through
// go-redis as EVALSHA, in pipelined batches of whatever calls are waiting
// (one batch in flight, as goredisson's flusher sends them), so that in (b)
// the server reads and writes batches as it does for goredisson and
// rueidislock: the row compares the scripts' cost, not the batching. Its
// client-side figures are go-redis's and this batcher's, not Redisson's,
// and are not shown.
//
// The interop suite has its own restatement of Redisson's scripts
// (interop/testdata/redisson), for effects, not cost: its acquire asks
// HEXISTS before EXISTS, one call more than Redisson's on a free lock. This
// row needs Redisson's calls in Redisson's order, and bench/ is a module of
// its own (go:embed cannot reach ../interop), so it keeps these two.

const redissonScriptsName = "Redisson's scripts (server cost only)"

// redissonAcquireLua: KEYS[1] the lock hash; ARGV[1] lease ms, ARGV[2] the
// holder field. Takes a free lock or re-enters the holder's; nil when held
// now, else the lock's PTTL.
const redissonAcquireLua = `
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
`

// redissonReleaseLua: KEYS[1] the lock hash, KEYS[2] the unlock channel,
// KEYS[3] the unlock latch; ARGV[1] the unlock message, ARGV[2] lease ms,
// ARGV[3] the holder field, ARGV[4] the publish command, ARGV[5] the latch's
// TTL ms. A retried request reads its first answer from the latch; nil when
// the holder held nothing; 0 when holds remain, 1 when the lock was freed
// (and the message published).
const redissonReleaseLua = `
local answered = redis.call('get', KEYS[3])
if answered ~= false then
    return tonumber(answered)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
`

var (
	redissonAcquire = redis.NewScript(redissonAcquireLua)
	redissonRelease = redis.NewScript(redissonReleaseLua)
)

const (
	redissonLease = 30 * time.Second // the watchdog's default lease
	// redissonLatchTTL is (command timeout + retry delay) × retry attempts
	// at Redisson's defaults, in the order of magnitude (only its size on
	// the wire matters here).
	redissonLatchTTL = 12000
)

// openRedissonScripts opens the row on e.rdb: the scripts loaded, one
// batcher for the process, one Redisson-like instance id.
func openRedissonScripts(e env) (newMutexFunc, func(), error) {
	ctx := context.Background()
	for _, s := range []*redis.Script{redissonAcquire, redissonRelease} {
		if err := s.Load(ctx, e.rdb).Err(); err != nil {
			return nil, nil, err
		}
	}
	id, err := randomHex(16)
	if err != nil {
		return nil, nil, err
	}
	instance := id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:] // a UUID's shape
	b := newBatcher(e.rdb)
	return func(ctx context.Context, key string) mutex {
		return &redissonScriptsMutex{ctx: ctx, b: b, key: key,
			field: instance + ":" + strconv.FormatInt(ownerSeq.Add(1), 10), lease: leaseOf(e, redissonLease)}
	}, b.close, nil
}

type redissonScriptsMutex struct {
	ctx        context.Context
	b          *batcher
	key, field string
	lease      time.Duration
}

func (m *redissonScriptsMutex) lock() error {
	for {
		cmd := m.b.do(m.ctx, func(p redis.Pipeliner) redis.Cmder {
			return p.EvalSha(m.ctx, redissonAcquire.Hash(), []string{m.key}, m.lease.Milliseconds(), m.field)
		})
		err := cmd.Err()
		if err == redis.Nil {
			return nil // held
		}
		if err != nil {
			return err
		}
		select { // held by another: Redisson would wait for the unlock message
		case <-time.After(time.Millisecond):
		case <-m.ctx.Done():
			return m.ctx.Err()
		}
	}
}

func (m *redissonScriptsMutex) unlock() error {
	req, err := randomHex(16)
	if err != nil {
		return err
	}
	latch := "redisson_unlock_latch:{" + m.key + "}:" + req
	cmd := m.b.do(m.ctx, func(p redis.Pipeliner) redis.Cmder {
		return p.EvalSha(m.ctx, redissonRelease.Hash(), []string{m.key, "redisson_lock__channel:{" + m.key + "}", latch},
			0, m.lease.Milliseconds(), m.field, "PUBLISH", redissonLatchTTL)
	})
	err = cmd.Err()
	if err == redis.Nil {
		return errNotHeld
	}
	if err != nil {
		return err
	}
	return m.b.do(m.ctx, func(p redis.Pipeliner) redis.Cmder { return p.Del(m.ctx, latch) }).Err()
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// batcher sends the calls waiting for it as one go-redis pipeline, one
// pipeline at a time.
type batcher struct {
	rdb  *redis.Client
	in   chan *batchOp
	stop chan struct{}
	wg   sync.WaitGroup
}

type batchOp struct {
	build func(redis.Pipeliner) redis.Cmder
	cmd   redis.Cmder
	done  chan struct{}
}

// maxBatch bounds a pipeline.
const maxBatch = 128

func newBatcher(rdb *redis.Client) *batcher {
	b := &batcher{rdb: rdb, in: make(chan *batchOp, maxBatch), stop: make(chan struct{})}
	b.wg.Add(1)
	go b.loop()
	return b
}

// do queues one command (build adds it to the pipeline) and returns it once
// its batch was sent and read, or failed with ctx's error.
func (b *batcher) do(ctx context.Context, build func(redis.Pipeliner) redis.Cmder) redis.Cmder {
	op := &batchOp{build: build, done: make(chan struct{})}
	select {
	case b.in <- op:
	case <-ctx.Done():
		return redis.NewStatusResult("", ctx.Err())
	case <-b.stop:
		return redis.NewStatusResult("", redis.ErrClosed)
	}
	<-op.done
	return op.cmd
}

func (b *batcher) loop() {
	defer b.wg.Done()
	ops := make([]*batchOp, 0, maxBatch)
	for {
		select {
		case op := <-b.in:
			ops = append(ops[:0], op)
		case <-b.stop:
			return
		}
	fill:
		for len(ops) < maxBatch {
			select {
			case op := <-b.in:
				ops = append(ops, op)
			default:
				break fill
			}
		}
		p := b.rdb.Pipeline()
		for _, op := range ops {
			op.cmd = op.build(p)
		}
		_, _ = p.Exec(context.Background()) // each command's own error is its caller's
		for _, op := range ops {
			close(op.done)
		}
	}
}

func (b *batcher) close() {
	close(b.stop)
	b.wg.Wait()
}
