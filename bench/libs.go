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

// mutex is one owner's handle on one lock of a library.
type mutex interface {
	lock(ctx context.Context) error
	unlock(ctx context.Context) error
}

// lib is a lock library in one configuration. A process opens it once
// (one client per process, as applications do) and makes a mutex per owner.
type lib struct {
	name     string // column label
	settings string // what the configuration is, for the README table
	tuned    bool   // a tuned configuration, measured in (c) only
	open     func(rdb *redis.Client) (newMutex func(key string) mutex, close func(), err error)
}

// leaseTTL is the lease of the peers' locks (redsync's default expiry).
const leaseTTL = 8 * time.Second

var libs = []lib{
	{name: "goredisson RLock", settings: "watchdog lease (30 s), waiters woken by pub/sub", open: openRLock(false)},
	{name: "goredisson FairLock", settings: "watchdog lease (30 s), FIFO queue, head woken by pub/sub", open: openRLock(true)},
	{name: "redsync", settings: "defaults: expiry 8 s, 32 tries, retry delay 50-250 ms random", open: openRedsync(false)},
	{name: "redsync tuned", settings: "expiry 8 s, unlimited tries, retry delay 1 ms", tuned: true, open: openRedsync(true)},
	{name: "redislock", settings: "default NoRetry, caller calls Obtain again at once; TTL 8 s", open: openRedislock(false)},
	{name: "redislock tuned", settings: "LinearBackoff(1 ms), TTL 8 s", tuned: true, open: openRedislock(true)},
	{name: "naive SET NX PX", settings: "SET NX PX 8 s, Lua compare-and-delete, polls every 1 ms", open: openNaive},
}

func findLib(name string) (lib, error) {
	for _, l := range libs {
		if l.name == name {
			return l, nil
		}
	}
	return lib{}, fmt.Errorf("unknown library %q", name)
}

// --- goredisson

type rmutex struct {
	l     rlock.Locker
	owner context.Context
}

// The owner's context carries its id; the benchmark's contexts carry
// nothing else (no deadline), so they are not combined.
func (m *rmutex) lock(context.Context) error   { return m.l.Lock(m.owner) }
func (m *rmutex) unlock(context.Context) error { return m.l.Unlock(m.owner) }

var ownerSeq atomic.Int64

func openRLock(fair bool) func(rdb *redis.Client) (func(string) mutex, func(), error) {
	return func(rdb *redis.Client) (func(string) mutex, func(), error) {
		c, err := rlock.NewClient(rdb)
		if err != nil {
			return nil, nil, err
		}
		return func(key string) mutex {
			owner := ctxowner.WithID(context.Background(), "bench-"+strconv.FormatInt(ownerSeq.Add(1), 10))
			if fair {
				return &rmutex{l: c.NewFairLock(key), owner: owner}
			}
			return &rmutex{l: c.NewLock(key), owner: owner}
		}, func() { _ = c.Close() }, nil
	}
}

// --- redsync

type redsyncMutex struct{ m *redsync.Mutex }

func (m *redsyncMutex) lock(ctx context.Context) error {
	for {
		err := m.m.LockContext(ctx)
		if errors.Is(err, redsync.ErrFailed) && ctx.Err() == nil {
			continue // out of tries: a caller that must get the lock tries again
		}
		return err
	}
}

func (m *redsyncMutex) unlock(ctx context.Context) error {
	_, err := m.m.UnlockContext(ctx)
	return err
}

func openRedsync(tuned bool) func(rdb *redis.Client) (func(string) mutex, func(), error) {
	return func(rdb *redis.Client) (func(string) mutex, func(), error) {
		rs := redsync.New(goredis.NewPool(rdb))
		opts := []redsync.Option{redsync.WithExpiry(leaseTTL)}
		if tuned {
			opts = append(opts, redsync.WithTries(1<<30), redsync.WithRetryDelay(time.Millisecond))
		}
		return func(key string) mutex { return &redsyncMutex{m: rs.NewMutex(key, opts...)} }, func() {}, nil
	}
}

// --- bsm/redislock

type redislockMutex struct {
	c     *redislock.Client
	key   string
	tuned bool
	held  *redislock.Lock
}

func (m *redislockMutex) lock(ctx context.Context) error {
	opt := &redislock.Options{}
	if m.tuned {
		opt.RetryStrategy = redislock.LinearBackoff(time.Millisecond)
	}
	for {
		l, err := m.c.Obtain(ctx, m.key, leaseTTL, opt)
		if errors.Is(err, redislock.ErrNotObtained) && ctx.Err() == nil {
			continue
		}
		m.held = l
		return err
	}
}

func (m *redislockMutex) unlock(ctx context.Context) error { return m.held.Release(ctx) }

func openRedislock(tuned bool) func(rdb *redis.Client) (func(string) mutex, func(), error) {
	return func(rdb *redis.Client) (func(string) mutex, func(), error) {
		c := redislock.New(rdb)
		return func(key string) mutex { return &redislockMutex{c: c, key: key, tuned: tuned} }, func() {}, nil
	}
}

// --- naive

var naiveRelease = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

type naiveMutex struct {
	rdb   *redis.Client
	key   string
	value string
}

func (m *naiveMutex) lock(ctx context.Context) error {
	for {
		ok, err := m.rdb.SetNX(ctx, m.key, m.value, leaseTTL).Result()
		if err != nil || ok {
			return err
		}
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (m *naiveMutex) unlock(ctx context.Context) error {
	return naiveRelease.Run(ctx, m.rdb, []string{m.key}, m.value).Err()
}

func openNaive(rdb *redis.Client) (func(string) mutex, func(), error) {
	return func(key string) mutex {
		return &naiveMutex{rdb: rdb, key: key, value: "owner-" + strconv.FormatInt(ownerSeq.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	}, func() {}, nil
}
