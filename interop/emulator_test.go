package interop_test

// A Redisson client emulated in Go, for the suite that runs without Java.
//
// It does what Redisson's lock classes (commit 66863978b4a9, 4.7.x) do on the
// wire: it runs testdata/redisson/*.lua (the suite's own restatement of
// Redisson's scripts: same KEYS, ARGV, replies and effects), writes fields
// "<uuid>:<thread id>", subscribes to Redisson's channels and reacts to their
// messages as LockPubSub does:
//
//   - "0" releases ONE permit of the channel's semaphore, kept when no thread
//     is blocked yet, so a thread between its failed attempt and its wait
//     still wakes at once;
//   - "1" releases as many permits as threads are blocked right now, and
//     nothing for a thread that is not blocked yet;
//   - a blocked thread waits at most the TTL its last attempt returned.
//
// Its waiting loops are RedissonLock.lock() and tryLock(wait, lease) (also
// for the fair, read and write locks), RedissonFencedLock's
// tryLockAndGetToken (a negative wait waits forever) and RedissonSpinLock's
// backoff loop. Threads are plain numbers chosen by the spec; calls take a
// context only so that a failing spec cannot hang.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// errIllegalMonitorState is what Redisson throws when a thread unlocks a
// lock it does not hold.
var errIllegalMonitorState = errors.New("IllegalMonitorStateException: attempt to unlock lock, not locked by current thread")

// Redisson's defaults (config/Config).
const (
	redissonWatchdog = 30 * time.Second // lockWatchdogTimeout
	redissonFairWait = 5 * time.Minute  // fairLockWaitTimeout
	// redissonLatchTTL is the unlock latch TTL of the default settings:
	// (timeout 3 s + retry delay 1 s) x 4 attempts.
	redissonLatchTTL = 16 * time.Second
)

// emuScripts are the emulator's Lua scripts by file name (without .lua).
var emuScripts = loadEmuScripts()

func loadEmuScripts() map[string]*redis.Script {
	files, err := filepath.Glob(filepath.Join("testdata", "redisson", "*.lua"))
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("emulator: no scripts in testdata/redisson: %v", err))
	}
	out := make(map[string]*redis.Script, len(files))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".lua")] = redis.NewScript(string(src))
	}
	return out
}

// prefixName and suffixName are Redisson's naming helpers: the braces keep
// every auxiliary key in the lock's Redis Cluster slot.
func prefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

func suffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// redissonEmu is one emulated Redisson instance: one client UUID, one
// subscription service and one renewal task.
type redissonEmu struct {
	rdb      *redis.Client
	id       string
	watchdog time.Duration
	fairWait time.Duration
	pubsub   *lockPubSub
	renewals *renewer
	tids     atomic.Int64
	// sharded is Redisson's sharded pub/sub (a Cluster start of 3.22 to
	// 3.27 that drew it, or shardedSubscriptionMode ON): its scripts
	// SPUBLISH and its waiters SSUBSCRIBE.
	sharded bool
}

// emuOption configures an emulated instance, as Redisson's Config would.
type emuOption func(*redissonEmu)

// emuWatchdog sets lockWatchdogTimeout.
func emuWatchdog(d time.Duration) emuOption { return func(r *redissonEmu) { r.watchdog = d } }

// emuSharded makes the instance use sharded pub/sub.
func emuSharded() emuOption { return func(r *redissonEmu) { r.sharded = true } }

// publishCommand is what the instance's scripts get as their publish
// command (PublishSubscribeService.getPublishCommand).
func (r *redissonEmu) publishCommand() string {
	if r.sharded {
		return "spublish"
	}
	return "publish"
}

// newRedissonEmu starts an emulated instance on rdb; Close stops it.
func newRedissonEmu(rdb *redis.Client, opts ...emuOption) *redissonEmu {
	r := &redissonEmu{rdb: rdb, id: uuid.NewString(), watchdog: redissonWatchdog, fairWait: redissonFairWait}
	for _, o := range opts {
		o(r)
	}
	r.tids.Store(100)
	r.pubsub = &lockPubSub{rdb: rdb, entries: map[string]*psEntry{}, sharded: r.sharded}
	r.renewals = startRenewer(r)
	return r
}

// Close stops the renewal task and every subscription (Redisson's shutdown).
func (r *redissonEmu) Close() {
	r.renewals.close()
	r.pubsub.closeAll()
}

// thread returns a fresh thread id of this instance.
func (r *redissonEmu) thread() int64 { return r.tids.Add(1) }

// field returns the hash field of a thread: getLockName(threadId).
func (r *redissonEmu) field(tid int64) string { return fmt.Sprintf("%s:%d", r.id, tid) }

// lockKind is which of Redisson's lock classes an emuLock behaves as.
type lockKind int

const (
	kindLock   lockKind = iota // RedissonLock
	kindFair                   // RedissonFairLock
	kindRead                   // RedissonReadLock
	kindWrite                  // RedissonWriteLock
	kindFenced                 // RedissonFencedLock
	kindSpin                   // RedissonSpinLock
)

// emuLock is one lock object of an emulated instance, like the RLock that
// redisson.getLock(name) and its siblings return. As in Java, the object
// keeps internalLockLeaseTime: the lease re-applied by an unlock that
// leaves holds.
type emuLock struct {
	r    *redissonEmu
	kind lockKind
	name string

	mu            sync.Mutex
	internalLease time.Duration
	beforeWait    func(tid int64) // test hook: runs right before a thread blocks on its semaphore
}

func (r *redissonEmu) newLock(kind lockKind, name string) *emuLock {
	return &emuLock{r: r, kind: kind, name: name, internalLease: r.watchdog}
}

// getFairLock is redisson.getFairLock(name); the specs make the other
// kinds with newLock.
func (r *redissonEmu) getFairLock(name string) *emuLock { return r.newLock(kindFair, name) }

// field is the hash field the thread holds this lock under.
func (l *emuLock) field(tid int64) string {
	if l.kind == kindWrite {
		return l.r.field(tid) + ":write"
	}
	return l.r.field(tid)
}

// channel is the channel a waiting thread subscribes to.
func (l *emuLock) channel(tid int64) string {
	switch l.kind {
	case kindRead, kindWrite:
		return prefixName("redisson_rwlock", l.name)
	case kindFair:
		return prefixName("redisson_lock__channel", l.name) + ":" + l.r.field(tid)
	}
	return prefixName("redisson_lock__channel", l.name)
}

func (l *emuLock) queueKey() string   { return prefixName("redisson_lock_queue", l.name) }
func (l *emuLock) timeoutKey() string { return prefixName("redisson_lock_timeout", l.name) }
func (l *emuLock) tokenKey() string   { return prefixName("redisson_lock_token", l.name) }

// readTimeoutPrefix is getReadWriteTimeoutNamePrefix(threadId).
func (l *emuLock) readTimeoutPrefix(tid int64) string {
	return suffixName(l.name, l.r.field(tid)) + ":rwlock_timeout"
}

// keyPrefix is getKeyPrefix: the part of the timeout prefix before the field.
func (l *emuLock) keyPrefix(tid int64) string {
	p, _, _ := strings.Cut(l.readTimeoutPrefix(tid), ":"+l.r.field(tid))
	return p
}

// threadWait is the fair lock's threadWaitTime for a call with this wait.
func (l *emuLock) threadWait(wait time.Duration) time.Duration {
	if wait > 0 {
		return wait
	}
	return l.r.fairWait
}

// attempt is one tryAcquire: held, or the TTL hint the script returned, and
// for a fenced lock the token of the acquisition.
func (l *emuLock) attempt(ctx context.Context, tid int64, wait, lease time.Duration) (held bool, ttl time.Duration, token int64, err error) {
	leaseMs := l.r.watchdog.Milliseconds()
	if lease > 0 {
		leaseMs = lease.Milliseconds()
	}
	rdb := l.r.rdb
	var v any
	switch l.kind {
	case kindLock, kindSpin:
		v, err = emuScripts["lock_acquire"].Run(ctx, rdb, []string{l.name}, leaseMs, l.field(tid)).Result()
	case kindFenced:
		v, err = emuScripts["fenced_acquire"].Run(ctx, rdb, []string{l.name, l.tokenKey()}, leaseMs, l.field(tid)).Result()
	case kindFair:
		v, err = emuScripts["fair_acquire"].Run(ctx, rdb, []string{l.name, l.queueKey(), l.timeoutKey()},
			leaseMs, l.field(tid), l.threadWait(wait).Milliseconds(), time.Now().UnixMilli()).Result()
	case kindRead:
		v, err = emuScripts["read_acquire"].Run(ctx, rdb, []string{l.name, l.readTimeoutPrefix(tid)},
			leaseMs, l.field(tid), l.field(tid)+":write").Result()
	case kindWrite:
		v, err = emuScripts["write_acquire"].Run(ctx, rdb, []string{l.name}, leaseMs, l.field(tid)).Result()
	}
	switch {
	case errors.Is(err, redis.Nil):
		held, err = true, nil
	case err != nil:
		return false, 0, 0, err
	case l.kind == kindFenced:
		pair := v.([]any)
		if pair[0].(int64) == -1 {
			held, token = true, pair[1].(int64)
		} else {
			ttl = time.Duration(pair[0].(int64)) * time.Millisecond
		}
	default:
		ttl = time.Duration(v.(int64)) * time.Millisecond
	}
	if held {
		l.acquired(tid, lease)
	}
	return held, ttl, token, nil
}

// acquired records a new hold as Redisson does: a fixed lease becomes the
// object's internalLockLeaseTime, a watchdog lease is scheduled for renewal.
func (l *emuLock) acquired(tid int64, lease time.Duration) {
	if lease > 0 {
		l.mu.Lock()
		l.internalLease = lease
		l.mu.Unlock()
		return
	}
	if l.kind == kindSpin {
		l.mu.Lock()
		l.internalLease = l.r.watchdog
		l.mu.Unlock()
	}
	l.r.renewals.add(l, tid)
}

// Lock is lock() / lock(lease): it waits until the thread holds the lock.
func (l *emuLock) Lock(ctx context.Context, tid int64, lease time.Duration) error {
	switch l.kind {
	case kindSpin:
		_, err := l.spin(ctx, tid, -1, lease)
		return err
	case kindFenced:
		_, _, err := l.TryLockToken(ctx, tid, -1, lease)
		return err
	}
	held, _, _, err := l.attempt(ctx, tid, -1, lease)
	if err != nil || held {
		return err
	}
	entry, err := l.r.pubsub.subscribe(ctx, l.channel(tid))
	if err != nil {
		return err
	}
	defer l.r.pubsub.unsubscribe(entry)
	for {
		held, ttl, _, err := l.attempt(ctx, tid, -1, lease)
		if err != nil || held {
			return err
		}
		l.hookBeforeWait(tid)
		if ttl >= 0 {
			entry.latch.tryAcquire(ctx, ttl)
		} else {
			entry.latch.tryAcquire(ctx, -1)
		}
		if ctx.Err() != nil {
			l.abandon(tid, -1)
			return ctx.Err()
		}
	}
}

// TryLock is tryLock(wait, lease): one attempt when wait <= 0, else it
// waits up to wait. A fair waiter that runs out gives up its place.
func (l *emuLock) TryLock(ctx context.Context, tid int64, wait, lease time.Duration) (bool, error) {
	switch l.kind {
	case kindSpin:
		return l.spin(ctx, tid, wait, lease)
	case kindFenced:
		_, ok, err := l.TryLockToken(ctx, tid, max(wait, 0), lease)
		return ok, err
	}
	remain := wait
	start := time.Now()
	held, _, _, err := l.attempt(ctx, tid, wait, lease)
	if err != nil || held {
		return held, err
	}
	if remain -= time.Since(start); remain <= 0 {
		return false, l.acquireFailed(ctx, tid, wait)
	}
	start = time.Now()
	sctx, cancel := context.WithTimeout(ctx, remain)
	entry, err := l.r.pubsub.subscribe(sctx, l.channel(tid))
	cancel()
	if err != nil {
		return false, l.acquireFailed(ctx, tid, wait)
	}
	defer l.r.pubsub.unsubscribe(entry)
	if remain -= time.Since(start); remain <= 0 {
		return false, l.acquireFailed(ctx, tid, wait)
	}
	for {
		start = time.Now()
		held, ttl, _, err := l.attempt(ctx, tid, wait, lease)
		if err != nil || held {
			return held, err
		}
		if remain -= time.Since(start); remain <= 0 {
			return false, l.acquireFailed(ctx, tid, wait)
		}
		start = time.Now()
		l.hookBeforeWait(tid)
		if ttl >= 0 && ttl < remain {
			entry.latch.tryAcquire(ctx, ttl)
		} else {
			entry.latch.tryAcquire(ctx, remain)
		}
		if ctx.Err() != nil {
			l.abandon(tid, wait)
			return false, ctx.Err()
		}
		if remain -= time.Since(start); remain <= 0 {
			return false, l.acquireFailed(ctx, tid, wait)
		}
	}
}

// TryLockToken is RedissonFencedLock.tryLockAndGetToken(wait, lease): a
// negative wait waits until held. Woken by "0" like any RLock waiter.
func (l *emuLock) TryLockToken(ctx context.Context, tid int64, wait, lease time.Duration) (int64, bool, error) {
	remain := wait
	if wait < 0 {
		remain = time.Duration(1<<63 - 1)
	}
	start := time.Now()
	held, _, token, err := l.attempt(ctx, tid, wait, lease)
	if err != nil || held {
		return token, held, err
	}
	if remain -= time.Since(start); remain <= 0 {
		return 0, false, nil
	}
	entry, err := l.r.pubsub.subscribe(ctx, l.channel(tid))
	if err != nil {
		return 0, false, err
	}
	defer l.r.pubsub.unsubscribe(entry)
	for {
		start = time.Now()
		held, ttl, token, err := l.attempt(ctx, tid, wait, lease)
		if err != nil || held {
			return token, held, err
		}
		l.hookBeforeWait(tid)
		if ttl >= 0 && ttl < remain {
			entry.latch.tryAcquire(ctx, ttl)
		} else {
			entry.latch.tryAcquire(ctx, remain)
		}
		if ctx.Err() != nil {
			return 0, false, ctx.Err()
		}
		if remain -= time.Since(start); remain <= 0 {
			return 0, false, nil
		}
	}
}

// spin is RedissonSpinLock's loop: exponential backoff from 1 ms, doubling
// plus a small random term, up to 128 ms; no subscription. wait < 0 waits
// until held.
func (l *emuLock) spin(ctx context.Context, tid int64, wait, lease time.Duration) (bool, error) {
	start := time.Now()
	next, fails := time.Millisecond, 0
	for {
		held, _, _, err := l.attempt(ctx, tid, wait, lease)
		if err != nil || held {
			return held, err
		}
		if wait >= 0 && time.Since(start) >= wait {
			return false, nil
		}
		sleep := next
		if next < 128*time.Millisecond {
			fails++
			next = min(128*time.Millisecond, 2*next+time.Duration(rand.IntN(fails))*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(sleep):
		}
	}
}

// hookBeforeWait runs the spec's hook, if any.
func (l *emuLock) hookBeforeWait(tid int64) {
	l.mu.Lock()
	f := l.beforeWait
	l.mu.Unlock()
	if f != nil {
		f(tid)
	}
}

// acquireFailed is acquireFailedAsync: a fair waiter leaves the queue.
func (l *emuLock) acquireFailed(ctx context.Context, tid int64, wait time.Duration) error {
	if l.kind != kindFair {
		return nil
	}
	err := emuScripts["fair_giveup"].Run(ctx, l.r.rdb, []string{l.queueKey(), l.timeoutKey()},
		l.r.field(tid), l.threadWait(wait).Milliseconds()).Err()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// abandon tidies up after a spec cancelled a wait (Java has no such thing;
// it only keeps a failing spec from leaving a queue entry behind).
func (l *emuLock) abandon(tid int64, wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.acquireFailed(ctx, tid, wait)
}

// Unlock is unlock(): IllegalMonitorStateException when the thread holds
// nothing. The latch key is deleted once the reply is in, as Redisson does.
func (l *emuLock) Unlock(ctx context.Context, tid int64) error {
	latch := prefixName("redisson_unlock_latch", l.name) + ":" + uuid.NewString()
	l.mu.Lock()
	leaseMs := l.internalLease.Milliseconds()
	l.mu.Unlock()
	latchMs := redissonLatchTTL.Milliseconds()
	rdb := l.r.rdb
	var v any
	var err error
	switch l.kind {
	case kindLock, kindFenced:
		v, err = emuScripts["lock_release"].Run(ctx, rdb, []string{l.name, l.channel(tid), latch},
			"0", leaseMs, l.field(tid), l.r.publishCommand(), latchMs).Result()
	case kindSpin:
		v, err = emuScripts["spin_release"].Run(ctx, rdb, []string{l.name, latch}, leaseMs, l.field(tid), latchMs).Result()
	case kindFair:
		v, err = emuScripts["fair_release"].Run(ctx, rdb,
			[]string{l.name, l.queueKey(), l.timeoutKey(), prefixName("redisson_lock__channel", l.name), latch},
			"0", leaseMs, l.field(tid), time.Now().UnixMilli(), l.r.publishCommand(), latchMs).Result()
	case kindRead:
		v, err = emuScripts["read_release"].Run(ctx, rdb,
			[]string{l.name, l.channel(tid), l.readTimeoutPrefix(tid), l.keyPrefix(tid), latch},
			"0", l.field(tid), l.r.publishCommand(), latchMs).Result()
	case kindWrite:
		v, err = emuScripts["write_release"].Run(ctx, rdb, []string{l.name, l.channel(tid), latch},
			"1", leaseMs, l.field(tid), l.r.publishCommand(), latchMs).Result()
	}
	if err == nil || errors.Is(err, redis.Nil) {
		rdb.Del(ctx, latch)
	}
	l.r.renewals.cancel(l, tid)
	switch {
	case errors.Is(err, redis.Nil):
		l.resetLease()
		return errIllegalMonitorState
	case err != nil:
		return err
	}
	if v.(int64) == 1 {
		l.resetLease()
	}
	return nil
}

// resetLease is cancelExpirationRenewal's reset of internalLockLeaseTime.
func (l *emuLock) resetLease() {
	l.mu.Lock()
	l.internalLease = l.r.watchdog
	l.mu.Unlock()
}

// ForceUnlock is forceUnlock(): whoever holds it.
func (l *emuLock) ForceUnlock(ctx context.Context) (bool, error) {
	l.r.renewals.cancelAll(l)
	l.resetLease()
	rdb := l.r.rdb
	var n int64
	var err error
	switch l.kind {
	case kindLock, kindFenced:
		n, err = emuScripts["lock_forceunlock"].Run(ctx, rdb, []string{l.name, l.channel(0)}, "0", l.r.publishCommand()).Int64()
	case kindSpin:
		n, err = emuScripts["spin_forceunlock"].Run(ctx, rdb, []string{l.name}).Int64()
	case kindFair:
		n, err = emuScripts["fair_forceunlock"].Run(ctx, rdb,
			[]string{l.name, l.queueKey(), l.timeoutKey(), prefixName("redisson_lock__channel", l.name)},
			"0", time.Now().UnixMilli(), l.r.publishCommand()).Int64()
	case kindRead:
		n, err = emuScripts["read_forceunlock"].Run(ctx, rdb, []string{l.name, l.channel(0)}, "0", l.r.publishCommand()).Int64()
	case kindWrite:
		n, err = emuScripts["write_forceunlock"].Run(ctx, rdb, []string{l.name, l.channel(0)}, "1", l.r.publishCommand()).Int64()
	}
	return n == 1, err
}

// IsLocked is isLocked(): the key exists; the read side asks its script,
// the write side reads the mode.
func (l *emuLock) IsLocked(ctx context.Context) (bool, error) {
	rdb := l.r.rdb
	switch l.kind {
	case kindRead:
		n, err := emuScripts["read_islocked"].Run(ctx, rdb, []string{l.name}).Int64()
		return n == 1, err
	case kindWrite:
		mode, err := rdb.HGet(ctx, l.name, "mode").Result()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return mode == "write", err
	}
	n, err := rdb.Exists(ctx, l.name).Result()
	return n == 1, err
}

// HoldCount is getHoldCount() of the thread.
func (l *emuLock) HoldCount(ctx context.Context, tid int64) (int, error) {
	n, err := l.r.rdb.HGet(ctx, l.name, l.field(tid)).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// RemainTTL is remainTimeToLive(): the PTTL in ms (-2 no key, -1 no expiry).
func (l *emuLock) RemainTTL(ctx context.Context) (int64, error) {
	d, err := l.r.rdb.Do(ctx, "pttl", l.name).Int64()
	return d, err
}

// lockPubSub is Redisson's LockPubSub over one subscription service: one
// entry (subscription plus semaphore) per channel, shared by the threads
// waiting on it and dropped when the last one leaves.
type lockPubSub struct {
	rdb     *redis.Client
	sharded bool // SSUBSCRIBE

	mu      sync.Mutex
	entries map[string]*psEntry
}

// psEntry is RedissonLockEntry: the channel's semaphore.
type psEntry struct {
	channel string
	refs    int
	ready   chan struct{} // closed once the subscription is confirmed (or failed)
	err     error
	ps      *redis.PubSub
	latch   *semaphore
	done    chan struct{} // closed when the reader goroutine has finished
	seen    atomic.Int64  // messages handled
}

// subscribe joins the channel's entry, subscribing (and waiting for Redis
// to confirm) when it is the first.
func (p *lockPubSub) subscribe(ctx context.Context, channel string) (*psEntry, error) {
	p.mu.Lock()
	if e, ok := p.entries[channel]; ok {
		e.refs++
		p.mu.Unlock()
		<-e.ready
		if e.err != nil {
			p.unsubscribe(e)
			return nil, e.err
		}
		return e, nil
	}
	e := &psEntry{channel: channel, refs: 1, ready: make(chan struct{}), latch: &semaphore{}, done: make(chan struct{})}
	p.entries[channel] = e
	p.mu.Unlock()

	var ps *redis.PubSub
	if p.sharded {
		ps = p.rdb.SSubscribe(ctx, channel)
	} else {
		ps = p.rdb.Subscribe(ctx, channel)
	}
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		e.err = err
		close(e.done)
		close(e.ready)
		p.unsubscribe(e)
		return nil, err
	}
	e.ps = ps
	go func() {
		defer close(e.done)
		for m := range ps.Channel() {
			onLockMessage(e.latch, m.Payload)
			e.seen.Add(1)
		}
	}()
	close(e.ready)
	return e, nil
}

// onLockMessage is LockPubSub.onMessage for the blocking API.
func onLockMessage(latch *semaphore, payload string) {
	switch payload {
	case "0":
		latch.release(1)
	case "1":
		latch.release(latch.queueLength())
	}
}

// unsubscribe leaves the entry; the last one out unsubscribes.
func (p *lockPubSub) unsubscribe(e *psEntry) {
	p.mu.Lock()
	e.refs--
	last := e.refs == 0
	if last && p.entries[e.channel] == e {
		delete(p.entries, e.channel)
	}
	p.mu.Unlock()
	if last && e.ps != nil {
		_ = e.ps.Close()
		<-e.done
	}
}

// blocked returns how many threads are blocked on the channel's semaphore.
func (p *lockPubSub) blocked(channel string) int {
	p.mu.Lock()
	e := p.entries[channel]
	p.mu.Unlock()
	if e == nil {
		return 0
	}
	return e.latch.queueLength()
}

// handled returns how many messages the channel's entry has handled.
func (p *lockPubSub) handled(channel string) int64 {
	p.mu.Lock()
	e := p.entries[channel]
	p.mu.Unlock()
	if e == nil {
		return 0
	}
	return e.seen.Load()
}

// closeAll drops every subscription (waiters still blocked time out).
func (p *lockPubSub) closeAll() {
	p.mu.Lock()
	entries := p.entries
	p.entries = map[string]*psEntry{}
	p.mu.Unlock()
	for _, e := range entries {
		<-e.ready
		if e.ps != nil {
			_ = e.ps.Close()
			<-e.done
		}
	}
}

// semaphore is java.util.concurrent.Semaphore as Redisson's lock entry uses
// it: permits released with nobody blocked are kept for the next acquirer.
type semaphore struct {
	mu      sync.Mutex
	permits int
	blocked []chan struct{}
}

// tryAcquire takes a permit, blocking up to d (d < 0: until one comes or
// ctx ends). It reports whether it got one.
func (s *semaphore) tryAcquire(ctx context.Context, d time.Duration) bool {
	s.mu.Lock()
	if s.permits > 0 {
		s.permits--
		s.mu.Unlock()
		return true
	}
	if d == 0 {
		s.mu.Unlock()
		return false
	}
	w := make(chan struct{}, 1)
	s.blocked = append(s.blocked, w)
	s.mu.Unlock()
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w:
		return true
	case <-timeout:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range s.blocked {
		if b == w {
			s.blocked = append(s.blocked[:i], s.blocked[i+1:]...)
			return false
		}
	}
	return true // a permit was handed over while timing out
}

// release adds n permits and hands them to blocked threads, oldest first.
func (s *semaphore) release(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.permits += n
	for s.permits > 0 && len(s.blocked) > 0 {
		s.permits--
		s.blocked[0] <- struct{}{}
		s.blocked = s.blocked[1:]
	}
}

// queueLength is getQueueLength(): threads blocked right now.
func (s *semaphore) queueLength() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.blocked)
}

// renewer is Redisson's renewal scheduler: every lockWatchdogTimeout/3 one
// batched script renews the RLock-layout holds (LockTask) and one the read
// holds (ReadLockTask) that this instance took with a watchdog lease.
type renewer struct {
	r *redissonEmu

	mu    sync.Mutex
	locks map[string]*renewEntry
	reads map[string]*renewEntry

	stop chan struct{}
	done chan struct{}
}

// renewEntry is LockEntry: the threads holding one lock name, in order,
// with how many acquisitions each made.
type renewEntry struct {
	order  []int64
	counts map[int64]int
	fields map[int64]string
	prefix string
}

func startRenewer(r *redissonEmu) *renewer {
	w := &renewer{r: r, locks: map[string]*renewEntry{}, reads: map[string]*renewEntry{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *renewer) loop() {
	defer close(w.done)
	t := time.NewTicker(w.r.watchdog / 3)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.renew()
		}
	}
}

func (w *renewer) close() {
	close(w.stop)
	<-w.done
}

func (w *renewer) table(l *emuLock) map[string]*renewEntry {
	if l.kind == kindRead {
		return w.reads
	}
	return w.locks
}

// add is scheduleExpirationRenewal(threadId).
func (w *renewer) add(l *emuLock, tid int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.table(l)
	e, ok := t[l.name]
	if !ok {
		e = &renewEntry{counts: map[int64]int{}, fields: map[int64]string{}, prefix: l.keyPrefix(tid)}
		t[l.name] = e
	}
	if e.counts[tid] == 0 {
		e.order = append(e.order, tid)
		e.fields[tid] = l.field(tid)
	}
	e.counts[tid]++
}

// cancel is cancelExpirationRenewal(threadId): one acquisition less.
func (w *renewer) cancel(l *emuLock, tid int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.table(l)
	e, ok := t[l.name]
	if !ok || e.counts[tid] == 0 {
		return
	}
	if e.counts[tid]--; e.counts[tid] == 0 {
		delete(e.counts, tid)
		delete(e.fields, tid)
		for i, x := range e.order {
			if x == tid {
				e.order = append(e.order[:i], e.order[i+1:]...)
				break
			}
		}
	}
	if len(e.order) == 0 {
		delete(t, l.name)
	}
}

// cancelAll is cancelExpirationRenewal(null): the whole name.
func (w *renewer) cancelAll(l *emuLock) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.table(l), l.name)
}

// renew runs one round of both batched scripts and drops the names whose
// fields are gone.
func (w *renewer) renew() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease := w.r.watchdog.Milliseconds()
	w.mu.Lock()
	var lockKeys, readKeys []string
	lockArgs, readArgs := []any{lease}, []any{lease}
	for name, e := range w.locks {
		lockKeys = append(lockKeys, name)
		lockArgs = append(lockArgs, e.fields[e.order[0]])
	}
	for name, e := range w.reads {
		readKeys = append(readKeys, name, e.prefix)
		readArgs = append(readArgs, len(e.order))
		for _, tid := range e.order {
			readArgs = append(readArgs, e.fields[tid])
		}
	}
	w.mu.Unlock()
	if len(lockKeys) > 0 {
		res, err := emuScripts["lock_renew"].Run(ctx, w.r.rdb, lockKeys, lockArgs...).Int64Slice()
		if err == nil {
			w.drop(w.locks, lockKeys, 1, res)
		}
	}
	if len(readKeys) > 0 {
		res, err := emuScripts["read_renew"].Run(ctx, w.r.rdb, readKeys, readArgs...).Int64Slice()
		if err == nil {
			w.drop(w.reads, readKeys, 2, res)
		}
	}
}

func (w *renewer) drop(t map[string]*renewEntry, keys []string, stride int, res []int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, ok := range res {
		if ok == 0 {
			delete(t, keys[i*stride])
		}
	}
}
