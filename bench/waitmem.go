package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// Memory per waiter (part w of the default run, and BenchmarkWaiterMemory):
// n waiters parked on locks held elsewhere (keys written by another
// connection, held for 10 minutes), all on one name or each on a name of its
// own, for goredisson RLock and rueidislock tuned (KeyMajority 1,
// NoLoopTracking, TryNextAfter 1 s, as in the other rows). The figure is
// the process's HeapAlloc+StackInuse growth per waiter, read after two GCs,
// from before the waiters' handles were made to when Redis has seen no
// command for a second. Each waiter has a lock handle of its own. A row
// runs in a process of its own ("bench waitmem"): a process reuses the
// goroutines and stacks of an earlier row, which made a second row look up
// to 1.5 KB cheaper.

// waitmemRows are the rows part w measures.
var waitmemRows = []string{rlockName, rueidisTunedName}

// waitmemResult is what a "bench waitmem" process reports.
type waitmemResult struct {
	Heap, Stack int64 // growth over all waiters, bytes
	Err         string
}

// parkWaiters parks n waiters of row (one of waitmemRows) on names names
// (1: all on one) at addr, keys under prefix, and returns the heap and stack
// growth; it deletes the keys it wrote.
func parkWaiters(row, addr, prefix string, n, names int) (heap, stack int64, err error) {
	switch row {
	case rlockName:
		return parkRLock(addr, prefix, n, names)
	case rueidisTunedName:
		return parkRueidislock(addr, prefix, n, names)
	}
	return 0, 0, fmt.Errorf("no waiter memory measurement for %q", row)
}

// holdElsewhere writes the keys that make names held by another process
// (hold returns the key of name i, after adding its writes to p), and
// returns a func that deletes them.
func holdElsewhere(rdb *redis.Client, names int, hold func(p redis.Pipeliner, i int) string) (func(), error) {
	ctx := context.Background()
	p := rdb.Pipeline()
	keys := make([]string, names)
	for i := range names {
		keys[i] = hold(p, i)
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, err
	}
	return func() {
		for len(keys) > 0 {
			k := min(len(keys), 1000)
			_ = rdb.Del(ctx, keys[:k]...).Err()
			keys = keys[k:]
		}
	}, nil
}

func parkRLock(addr, prefix string, n, names int) (heap, stack int64, err error) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	name := func(i int) string { return prefix + strconv.Itoa(i%names) }
	release, err := holdElsewhere(rdb, names, func(p redis.Pipeliner, i int) string {
		p.HSet(ctx, name(i), "elsewhere:1", 1)
		p.PExpire(ctx, name(i), 10*time.Minute)
		return name(i)
	})
	if err != nil {
		return 0, 0, err
	}
	defer release()
	c, err := rlock.NewClient(rdb)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	warm, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_ = c.NewLock(name(0)).Lock(ctxowner.WithID(warm, "warm"))
	cancel()
	return park(rdb, n, func(ctx context.Context, n int) []func() error {
		waits := make([]func() error, n)
		for i := range n {
			l, owner := c.NewLock(name(i)), ctxowner.WithID(ctx, "w"+strconv.Itoa(i))
			waits[i] = func() error { return l.Lock(owner) }
		}
		return waits
	})
}

func parkRueidislock(addr, prefix string, n, names int) (heap, stack int64, err error) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	name := func(i int) string { return prefix + strconv.Itoa(i%names) }
	release, err := holdElsewhere(rdb, names, func(p redis.Pipeliner, i int) string {
		k := "rueidislock:0:" + name(i)
		p.Set(ctx, k, "elsewhere", 10*time.Minute)
		return k
	})
	if err != nil {
		return 0, 0, err
	}
	defer release()
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		NoLoopTracking: true,
		TryNextAfter:   time.Second,
	})
	if err != nil {
		return 0, 0, err
	}
	defer l.Close()
	warm, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, _, _ = l.WithContext(warm, name(0))
	cancel()
	return park(rdb, n, func(ctx context.Context, n int) []func() error {
		waits := make([]func() error, n)
		for i := range n {
			key := name(i)
			waits[i] = func() error {
				_, _, err := l.WithContext(ctx, key)
				return err
			}
		}
		return waits
	})
}

// park makes n waits (each must block until ctx ends), runs each on a
// goroutine of its own, waits until they all wait, and returns the heap and
// stack growth. What a waiter needs (a lock handle, an owner, a name) is
// made before the goroutines start, and counted; each goroutine only calls
// its wait, so that the parked stack is the library's.
func park(rdb *redis.Client, n int, prepare func(ctx context.Context, n int) []func() error) (heap, stack int64, err error) {
	before := redistest.MemAfterGC()
	ctx, stop := context.WithCancel(context.Background())
	waits := prepare(ctx, n)
	var wg sync.WaitGroup
	ended := make(chan error, n)
	for _, wait := range waits {
		wg.Add(1)
		go waitAndTell(ctx, &wg, ended, wait)
	}
	quiet := redistest.WaitQuiet(rdb, 2*time.Minute)
	after := redistest.MemAfterGC()
	stop()
	wg.Wait()
	close(ended)
	if quiet != nil {
		return 0, 0, fmt.Errorf("the waiters did not settle: %w", quiet)
	}
	if err, ok := <-ended; ok {
		return 0, 0, fmt.Errorf("a waiter ended while the lock was held elsewhere: %w", err)
	}
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), int64(after.StackInuse) - int64(before.StackInuse), nil
}

// waitAndTell runs wait and sends its error if it ended before ctx.
func waitAndTell(ctx context.Context, wg *sync.WaitGroup, ended chan<- error, wait func() error) {
	defer wg.Done()
	err := wait()
	if ctx.Err() == nil {
		ended <- err
	}
}

// runWaitmem is "bench waitmem ROW NAMES ADDR N PREFIX" (ROW a slug): one
// measurement in this process, its waitmemResult as JSON on stdout.
func runWaitmem(args []string) int {
	if len(args) != 5 {
		fmt.Fprintln(os.Stderr, "bench waitmem: ROW NAMES ADDR N PREFIX")
		return 2
	}
	names, err1 := strconv.Atoi(args[1])
	n, err2 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil || names < 1 || n < 1 {
		fmt.Fprintln(os.Stderr, "bench waitmem: NAMES and N are positive numbers")
		return 2
	}
	var res waitmemResult
	res.Heap, res.Stack, err1 = parkWaiters(unslug(args[0]), args[2], args[4], n, names)
	if err1 != nil {
		res.Err = err1.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// waiterMemory measures row in a child process on a private redis-server
// of its own (on addr with --redis) and returns bytes per waiter: total,
// heap and stack.
func waiterMemory(row string, n, names int, addr, id string) (map[string]float64, error) {
	if addr == "" {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		defer s.Close()
		addr = s.Addr
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "waitmem", slug(row), strconv.Itoa(names), addr, strconv.Itoa(n), "bench:w:"+id+":")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("waitmem process: %w", err)
	}
	var res waitmemResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &res); err != nil {
		return nil, fmt.Errorf("waitmem output %q: %w", out, err)
	}
	if res.Err != "" {
		return nil, fmt.Errorf("%s", res.Err)
	}
	return map[string]float64{"B/waiter": float64(res.Heap+res.Stack) / float64(n),
		"heap": float64(res.Heap) / float64(n), "stack": float64(res.Stack) / float64(n)}, nil
}
