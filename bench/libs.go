package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// mutex is one owner's handle on one lock of a library, bound to the
// owner's context: every call is made with it. Every measurement ends that
// context some seconds after it should have ended (a deadline in (c), a
// guard against stalls elsewhere), so that no call waits forever.
type mutex interface {
	lock() error
	unlock() error
}

// newMutexFunc makes an owner's mutex on key, bound to ctx.
type newMutexFunc func(ctx context.Context, key string) mutex

// lib is a lock library in one configuration. A process opens it once
// (one client per process, as applications do) and makes a mutex per owner.
type lib struct {
	name     string // column label
	settings string // what the configuration is, for the README table
	// contendedOnly marks a tuned configuration whose settings act only
	// while waiting: measured in (c) only, as its uncontended figures are
	// its defaults'.
	contendedOnly bool
	open          func(e env) (newMutex newMutexFunc, close func(), err error)
	// java names the lock of the real Redisson a row measures through
	// the Java bench (RedissonBench.java): "lock" or "fair"; open is nil.
	java string
	// needs is the server a row needs ("redis", "mysql", "zk", "etcd",
	// "redisson"): without it the row is skipped with a line.
	needs string
	// sends are the Redis commands the row sends itself for its pairs,
	// lower case (its scripts run others inside them): the "Redis µs per
	// call" column lists these; oneOff the ones it sends once per client
	// (set-up, registration), not shown. TestSendsListsTheTopLevelCommands
	// checks both.
	sends, oneOff []string
	// serverOnly marks a row that stands for another client's commands
	// (Redisson's scripts): only its server-side figures mean something.
	serverOnly bool
}

// env is what a process gives a library to open on: its go-redis client
// (whose hook counts the commands), and for libraries with a client of
// their own, the address and the counter to count into.
type env struct {
	rdb  *redis.Client
	addr string
	// addrs are the seed addresses of a Cluster (nil: addr alone).
	addrs []string
	cnt   *counter // nil: not counted
	// srv are the lock servers of the run (srv.Redis is addr).
	srv servers
	// lease is the lease or session timeout every row takes in the
	// failure table (0: the row's own, as in the other workloads).
	lease time.Duration
	// pool is the connection pool of a row with a client of its own
	// (MariaDB); 0: a small default.
	pool int
}

// The rows the targets name.
const (
	rlockName = "goredisson RLock"
	// rueidisTunedName is rueidislock with the settings of its README
	// for one Redis (the --cluster run compares against it).
	rueidisTunedName = "rueidislock tuned"
	naiveName        = "naive SET NX PX"
)

// leaseTTL is the lease of the peers' locks (redsync's default expiry).
const leaseTTL = 8 * time.Second

// allLibs are the libraries and configurations measured; libs the ones
// --libs selects.
var allLibs = []lib{
	{name: rlockName, settings: "watchdog lease (30 s), waiters woken by pub/sub", open: openRLock(false), sends: scriptCalls, oneOff: goredissonOnce},
	{name: "goredisson FairLock", settings: "watchdog lease (30 s), FIFO queue, head woken by pub/sub", open: openRLock(true), sends: scriptCalls, oneOff: goredissonOnce},
	{name: "redsync", settings: "defaults: expiry 8 s, 32 tries, retry delay 50-250 ms random", open: openRedsync(false), sends: setAndScripts},
	{name: "redsync tuned", settings: "expiry 8 s, unlimited tries, retry delay 1 ms", contendedOnly: true, open: openRedsync(true), sends: setAndScripts},
	{name: "redislock", settings: "default NoRetry, caller calls Obtain again at once; TTL 8 s", open: openRedislock(false), sends: scriptCalls},
	{name: "redislock tuned", settings: "LinearBackoff(1 ms), TTL 8 s", contendedOnly: true, open: openRedislock(true), sends: scriptCalls},
	{name: "rueidislock", settings: "defaults: KeyMajority 2 (3 keys), KeyValidity 5 s extended every 2.5 s, waiters woken by client-side-caching invalidations", open: openRueidislock(false), sends: scriptCalls},
	{name: rueidisTunedName, settings: "KeyMajority 1 (1 key) and NoLoopTracking, as its README advises for one Redis >= 7.0.5; TryNextAfter 1 s (the timeout of each acquiring call; 20 ms by default)", open: openRueidislock(true), sends: scriptCalls},
	{name: naiveName, settings: "SET NX PX 8 s, Lua compare-and-delete, polls every 1 ms", open: openNaive, sends: setAndScripts},
	{name: redissonScriptsName, settings: "Redisson's own acquire and release scripts on its layout (no goredisson addition: no cancel floor), with its unlock latch and the latch's DEL after the release, run by go-redis EVALSHA in pipelined batches (redissonscripts.go); only its Redis-side figures are shown; its del per call counts the latch's DEL and the DEL its release script runs", open: openRedissonScripts, sends: redissonSends, oneOff: []string{"script"}, serverOnly: true},
}

// The commands the rows send themselves (lib.sends, lib.oneOff). A script
// call may go out as EVAL once, after NOSCRIPT. goredisson also writes its
// Client's registration (SET, DEL at Close) and reads the server's config
// once. Redisson deletes its unlock latch after each release: that DEL is
// counted with the DEL its release script runs (commandstats has one line
// per command name).
var (
	scriptCalls    = []string{"evalsha", "eval"}
	setAndScripts  = []string{"set", "evalsha", "eval"}
	goredissonOnce = []string{"set", "del", "config"}
	redissonSends  = []string{"evalsha", "eval", "del"}
)

var libs = allLibs

// findSelected returns the library of libs named name.
func findSelected(name string) (lib, error) {
	for _, l := range libs {
		if l.name == name {
			return l, nil
		}
	}
	return lib{}, fmt.Errorf("library %q not selected", name)
}

func findLib(name string) (lib, error) {
	for _, l := range allLibs {
		if l.name == name {
			return l, nil
		}
	}
	return lib{}, fmt.Errorf("unknown library %q", name)
}

// --- goredisson

// rmutex's owner context carries the owner's id (ctxowner) and the
// benchmark's deadline if any.
type rmutex struct {
	l     rlock.Locker
	owner context.Context
	// watch: once locked, watch the hold with rlock.LostContext (the
	// failure table); lost is then its Done channel.
	watch bool
	lost  <-chan struct{}
	stop  context.CancelFunc
}

func (m *rmutex) lock() error {
	err := m.l.Lock(m.owner)
	if err == nil && m.watch {
		lctx, stop := rlock.LostContext(m.owner, m.l)
		m.lost, m.stop = lctx.Done(), stop
	}
	return err
}

func (m *rmutex) unlock() error {
	err := m.l.Unlock(m.owner)
	if m.stop != nil && !m.watch {
		m.stop()
	}
	return err
}

// stopWatch ends the LostContext of a watched hold (the failure table
// reads the loss signal after the unlock returned, so unlock leaves it).
func (m *rmutex) stopWatch() {
	if m.stop != nil {
		m.stop()
	}
}

// lostSignal is closed when goredisson reports the hold lost
// (rlock.LostContext), with watch set.
func (m *rmutex) lostSignal() <-chan struct{} { return m.lost }

var ownerSeq atomic.Int64

func openRLock(fair bool) func(e env) (newMutexFunc, func(), error) {
	return func(e env) (newMutexFunc, func(), error) {
		var opts []rlock.Option
		if e.lease > 0 {
			opts = append(opts, rlock.WithWatchdogTimeout(e.lease))
		}
		c, err := rlock.NewClient(e.rdb, opts...)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, key string) mutex {
			owner := ctxowner.WithID(ctx, "bench-"+strconv.FormatInt(ownerSeq.Add(1), 10))
			if fair {
				return &rmutex{l: c.NewFairLock(key), owner: owner, watch: e.lease > 0}
			}
			return &rmutex{l: c.NewLock(key), owner: owner, watch: e.lease > 0}
		}, func() { _ = c.Close() }, nil
	}
}

// --- redsync

type redsyncMutex struct {
	ctx context.Context
	m   *redsync.Mutex
}

func (m *redsyncMutex) lock() error {
	for {
		err := m.m.LockContext(m.ctx)
		if errors.Is(err, redsync.ErrFailed) && m.ctx.Err() == nil {
			continue // out of tries: a caller that must get the lock tries again
		}
		return err
	}
}

func (m *redsyncMutex) unlock() error {
	_, err := m.m.UnlockContext(m.ctx)
	return err
}

// extend extends the lock by its expiry (redsync's Extend); a lock no
// longer held (the value is gone or another's) reports errNotHeld.
func (m *redsyncMutex) extend() error {
	ok, err := m.m.ExtendContext(m.ctx)
	switch {
	case ok:
		return nil
	case err == nil || errors.Is(err, redsync.ErrExtendFailed):
		return errNotHeld
	}
	return err
}

func openRedsync(tuned bool) func(e env) (newMutexFunc, func(), error) {
	return func(e env) (newMutexFunc, func(), error) {
		rs := redsync.New(goredis.NewPool(e.rdb))
		opts := []redsync.Option{redsync.WithExpiry(leaseOf(e, leaseTTL))}
		if tuned {
			opts = append(opts, redsync.WithTries(1<<30), redsync.WithRetryDelay(time.Millisecond))
		}
		return func(ctx context.Context, key string) mutex {
			return &redsyncMutex{ctx: ctx, m: rs.NewMutex(key, opts...)}
		}, func() {}, nil
	}
}

// --- bsm/redislock

type redislockMutex struct {
	ctx   context.Context
	c     *redislock.Client
	key   string
	ttl   time.Duration
	tuned bool
	held  *redislock.Lock
}

func (m *redislockMutex) lock() error {
	opt := &redislock.Options{}
	if m.tuned {
		opt.RetryStrategy = redislock.LinearBackoff(time.Millisecond)
	}
	for {
		l, err := m.c.Obtain(m.ctx, m.key, m.ttl, opt)
		if errors.Is(err, redislock.ErrNotObtained) && m.ctx.Err() == nil {
			continue
		}
		m.held = l
		return err
	}
}

func (m *redislockMutex) unlock() error {
	if m.held == nil {
		return errNotHeld
	}
	return m.held.Release(m.ctx)
}

// extend refreshes the lock's TTL (redislock's Refresh).
func (m *redislockMutex) extend() error {
	if m.held == nil {
		return errNotHeld
	}
	err := m.held.Refresh(m.ctx, m.ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return errNotHeld
	}
	return err
}

func openRedislock(tuned bool) func(e env) (newMutexFunc, func(), error) {
	return func(e env) (newMutexFunc, func(), error) {
		c := redislock.New(e.rdb)
		return func(ctx context.Context, key string) mutex {
			return &redislockMutex{ctx: ctx, c: c, key: key, ttl: leaseOf(e, leaseTTL), tuned: tuned}
		}, func() {}, nil
	}
}

// --- naive

var (
	naiveRelease = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)
	naiveExtend  = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`)
)

type naiveMutex struct {
	ctx   context.Context
	rdb   *redis.Client
	key   string
	value string
	ttl   time.Duration
}

func (m *naiveMutex) lock() error {
	for {
		ok, err := m.rdb.SetNX(m.ctx, m.key, m.value, m.ttl).Result()
		if err != nil || ok {
			return err
		}
		select {
		case <-time.After(time.Millisecond):
		case <-m.ctx.Done():
			return m.ctx.Err()
		}
	}
}

// unlock deletes the key if it still holds the owner's value; a release
// that deleted nothing (the lock had expired) reports errNotHeld.
func (m *naiveMutex) unlock() error {
	n, err := naiveRelease.Run(m.ctx, m.rdb, []string{m.key}, m.value).Int()
	if err == nil && n == 0 {
		return errNotHeld
	}
	return err
}

// extend resets the TTL if the key still holds the owner's value.
func (m *naiveMutex) extend() error {
	n, err := naiveExtend.Run(m.ctx, m.rdb, []string{m.key}, m.value, m.ttl.Milliseconds()).Int()
	if err == nil && n == 0 {
		return errNotHeld
	}
	return err
}

func openNaive(e env) (newMutexFunc, func(), error) {
	return func(ctx context.Context, key string) mutex {
		return &naiveMutex{ctx: ctx, rdb: e.rdb, key: key, ttl: leaseOf(e, leaseTTL), value: "owner-" + strconv.FormatInt(ownerSeq.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	}, func() {}, nil
}
