package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// --- (m) Redis memory per held lock

// memResult is the Redis memory a library's locks take: what n held locks
// add, and what is left once they are released, per lock.
type memResult struct {
	PerLock, LeftPerLock float64 // bytes
}

// memWorkers is the number of goroutines (and connections) that take and
// release the locks of a memory run.
const memWorkers = 16

// redisMemory holds n locks of l on keys of their own, taken by memWorkers
// goroutines of one client, and reads Redis's memory before, while they are
// held, and after their release. The memory is used_memory less the
// buffers of the connected clients (mem_clients_normal), which change with
// the traffic, not with the locks held.
func redisMemory(l lib, addr string, n int, run string) (memResult, error) {
	raw := newRedis(addr, 1, nil)
	defer raw.Close()
	rdb := newRedis(addr, memWorkers+4, nil)
	defer rdb.Close()
	newMutex, closeLib, err := l.open(env{rdb: rdb, addr: addr})
	if err != nil {
		return memResult{}, err
	}
	defer closeLib()
	var progress atomic.Int64
	ctx, stop := withStallGuard(&progress)
	defer stop()
	prefix := "bench:m:" + run + ":"
	ms := make([]mutex, n)
	for i := range ms {
		ms[i] = newMutex(ctx, prefix+strconv.Itoa(i))
	}
	// Warm up connections and scripts on other keys, as many workers as
	// the measured phases use.
	warm := make([]mutex, memWorkers)
	for w := range warm {
		warm[w] = newMutex(ctx, prefix+"warm:"+strconv.Itoa(w))
	}
	call := func(f func() error) error {
		err := f()
		progress.Add(1)
		return stalled(ctx, err)
	}
	if err := inParallel(warm, func(m mutex) error {
		for range 10 {
			if err := call(m.lock); err != nil {
				return err
			}
			if err := call(m.unlock); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return memResult{}, err
	}
	// settle lets what a library does after a call returns (rueidislock
	// takes its further keys in the background) finish before a reading.
	const settle = 300 * time.Millisecond
	time.Sleep(settle)
	before, err := lockMemory(raw)
	if err != nil {
		return memResult{}, err
	}
	if err := inParallel(ms, func(m mutex) error { return call(m.lock) }); err != nil {
		return memResult{}, err
	}
	time.Sleep(settle)
	held, err := lockMemory(raw)
	if err != nil {
		return memResult{}, err
	}
	if err := inParallel(ms, func(m mutex) error { return call(m.unlock) }); err != nil {
		return memResult{}, err
	}
	time.Sleep(settle)
	after, err := lockMemory(raw)
	if err != nil {
		return memResult{}, err
	}
	return memResult{PerLock: float64(held-before) / float64(n), LeftPerLock: float64(after-before) / float64(n)}, nil
}

// inParallel calls fn on every mutex of ms from memWorkers goroutines, and
// returns the first error.
func inParallel(ms []mutex, fn func(mutex) error) error {
	var next atomic.Int64
	var firstErr atomic.Pointer[error] // the first failure (errors of several types may race)
	var wg sync.WaitGroup
	for range memWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(ms)); i = next.Add(1) - 1 {
				if err := fn(ms[i]); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		return *err
	}
	return nil
}

// lockMemory returns Redis's used_memory less mem_clients_normal (INFO
// memory).
func lockMemory(rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		return 0, err
	}
	var used, clients int64 = -1, -1
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "used_memory":
			used, _ = strconv.ParseInt(v, 10, 64)
		case "mem_clients_normal":
			clients, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if used < 0 || clients < 0 {
		return 0, fmt.Errorf("INFO memory without used_memory or mem_clients_normal")
	}
	return used - clients, nil
}
