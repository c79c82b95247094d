// Command soak runs a mixed lock workload against a real redis-server for
// a given time while injecting random faults, and reports acquisitions,
// faults, violations (must be 0), wait p99 and memory at start and end.
//
//	go run ./internal/verify/soak -d 10m
//	go test -race -run TestSoak ./internal/verify/soak -soak 1m     (what CI runs)
//
// Workers in this process take RLocks, FairLocks, FencedLocks and both
// sides of ReadWriteLocks through six goredisson Clients, four of them
// behind a fault proxy. Every critical section checks, with counters only
// the locks guard, that no other owner is inside (readers may share), and
// that fencing tokens only grow. Faults are shorter than the 3 s lease
// (latency, lost replies, connection resets, partitions of the proxied
// clients, and SIGSTOP of Redis itself), so a lease-based lock must keep
// them all apart: any overlap is a violation.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/faultproxy"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

func main() {
	cfg := Config{}
	flag.DurationVar(&cfg.Duration, "d", time.Minute, "how long to run")
	flag.IntVar(&cfg.Workers, "workers", 48, "worker goroutines")
	flag.IntVar(&cfg.Names, "names", 48, "lock names")
	flag.Int64Var(&cfg.Seed, "seed", time.Now().UnixNano(), "random seed")
	flag.Parse()
	res, err := Run(cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if res.Violations > 0 {
		os.Exit(1)
	}
}

// Config sets up a soak run.
type Config struct {
	Duration time.Duration
	Workers  int
	Names    int
	Seed     int64
}

// Result is what a soak run saw.
type Result struct {
	Acquisitions int64
	Faults       map[string]int
	Violations   int64
	Lost         int64 // holds the watchdog reported lost
	Errors       int64 // lock calls that failed (timeouts under faults)
	WaitP99      time.Duration
	RedisMem     [2]int64 // used_memory at start and at the end
	ClientMem    [2]uint64
}

// name kinds, by index modulo 4.
const (
	kindRLock = iota
	kindFair
	kindFenced
	kindRW
)

type guard struct {
	inside    atomic.Int32 // exclusive holders
	readers   atomic.Int32
	lastToken atomic.Int64
}

// Run runs the soak and writes progress and the summary to out.
func Run(cfg Config, out io.Writer) (Result, error) {
	if cfg.Duration <= 0 || cfg.Workers <= 0 || cfg.Names <= 0 {
		return Result{}, errors.New("soak: duration, workers and names must be positive")
	}
	srv, err := redistest.Start()
	if err != nil {
		return Result{}, err
	}
	defer srv.Close()
	proxy, err := faultproxy.Start(srv.Addr)
	if err != nil {
		return Result{}, err
	}
	defer proxy.Close()
	raw := srv.Client()
	defer raw.Close()
	ctx := context.Background()

	var clients []*rlock.Client
	var rdbs []*redis.Client
	for i := range 6 {
		addr := proxy.Addr
		if i >= 4 {
			addr = srv.Addr
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
			ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolSize: cfg.Workers})
		defer rdb.Close()
		rdbs = append(rdbs, rdb)
		c, err := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(3*time.Second), rlock.WithFairLockWaitTimeout(2*time.Second))
		if err != nil {
			return Result{}, err
		}
		defer c.Close()
		clients = append(clients, c)
	}
	guards := make([]guard, cfg.Names)
	res := Result{Faults: map[string]int{}}
	res.RedisMem[0] = usedMemory(raw)
	res.ClientMem[0] = heapAlloc()
	fmt.Fprintf(out, "soak: %v, %d workers on %d locks (RLock, FairLock, FencedLock, ReadWriteLock), seed %d, redis %s, proxy %s\n",
		cfg.Duration, cfg.Workers, cfg.Names, cfg.Seed, srv.Addr, proxy.Addr)

	var (
		acq, violations, lost, errs atomic.Int64
		waitsMu                     sync.Mutex
		waits                       []time.Duration
	)
	deadline := time.Now().Add(cfg.Duration)
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(w)))
			gen := 0
			var local []time.Duration
			for time.Now().Before(deadline) {
				i := r.IntN(cfg.Names)
				c := clients[r.IntN(len(clients))]
				name := "soak:" + strconv.Itoa(i)
				owner := ctxowner.WithID(ctx, fmt.Sprintf("w%d-%d", w, gen))
				g := &guards[i]
				var lock rlock.Locker
				read := false
				switch i % 4 {
				case kindRLock:
					lock = c.NewLock(name)
				case kindFair:
					lock = c.NewFairLock(name)
				case kindFenced:
					lock = c.NewFencedLock(name)
				case kindRW:
					read = r.IntN(3) > 0
					if read {
						lock = c.NewReadWriteLock(name).ReadLock()
					} else {
						lock = c.NewReadWriteLock(name).WriteLock()
					}
				}
				lctx, cancel := context.WithTimeout(owner, 3*time.Second)
				start := time.Now()
				var token int64
				var err error
				if f, ok := lock.(*rlock.FencedLock); ok {
					token, err = f.LockToken(lctx)
				} else {
					err = lock.Lock(lctx)
				}
				cancel()
				if err != nil {
					errs.Add(1)
					gen++ // the attempt's fate is settled in the background; go on as a new owner
					continue
				}
				local = append(local, time.Since(start))
				held, stop := rlock.LostContext(owner, lock)
				if read {
					if g.inside.Load() > 0 {
						violations.Add(1)
					}
					g.readers.Add(1)
				} else {
					if g.inside.Add(1) > 1 || g.readers.Load() > 0 {
						violations.Add(1)
					}
					if token != 0 {
						if prev := g.lastToken.Swap(token); token <= prev {
							violations.Add(1)
						}
					}
				}
				if r.IntN(10) == 0 {
					time.Sleep(time.Duration(r.IntN(2000)) * time.Microsecond)
				}
				if read {
					g.readers.Add(-1)
				} else {
					g.inside.Add(-1)
				}
				if held.Err() != nil {
					lost.Add(1)
				}
				stop()
				acq.Add(1)
				for {
					uctx, cancel := context.WithTimeout(owner, 3*time.Second)
					err := lock.Unlock(uctx)
					cancel()
					if err == nil || errors.Is(err, rlock.ErrNotHeld) {
						break
					}
				}
			}
			waitsMu.Lock()
			waits = append(waits, local...)
			waitsMu.Unlock()
		}()
	}

	stopFaults := make(chan struct{})
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		r := rand.New(rand.NewPCG(uint64(cfg.Seed), 1<<20))
		for {
			select {
			case <-stopFaults:
				return
			case <-time.After(time.Duration(500+r.IntN(1500)) * time.Millisecond):
			}
			kind := []string{"latency", "lost-replies", "reset", "partition", "redis-pause"}[r.IntN(5)]
			res.Faults[kind]++
			switch kind {
			case "latency":
				proxy.SetLatency(time.Duration(5+r.IntN(20)) * time.Millisecond)
				time.Sleep(500 * time.Millisecond)
				proxy.SetLatency(0)
			case "lost-replies":
				proxy.DropResponses(true)
				time.Sleep(time.Duration(50+r.IntN(150)) * time.Millisecond)
				proxy.DropResponses(false)
			case "reset":
				proxy.ResetConnections()
			case "partition":
				proxy.Partition(true)
				time.Sleep(time.Duration(100+r.IntN(400)) * time.Millisecond)
				proxy.Partition(false)
			case "redis-pause":
				_ = srv.Pause()
				time.Sleep(time.Duration(50+r.IntN(250)) * time.Millisecond)
				_ = srv.Resume()
			}
		}
	}()
	ticker := time.NewTicker(10 * time.Second)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
loop:
	for {
		select {
		case <-done:
			break loop
		case now := <-ticker.C:
			fmt.Fprintf(out, "  %5.0fs  acquisitions %d  violations %d  lost %d  errors %d\n",
				now.Sub(deadline.Add(-cfg.Duration)).Seconds(), acq.Load(), violations.Load(), lost.Load(), errs.Load())
		}
	}
	ticker.Stop()
	close(stopFaults)
	<-faultsDone

	res.Acquisitions, res.Violations, res.Lost, res.Errors = acq.Load(), violations.Load(), lost.Load(), errs.Load()
	slices.Sort(waits)
	if len(waits) > 0 {
		res.WaitP99 = waits[len(waits)*99/100]
	}
	waits = nil // the samples are not the client's memory
	for _, c := range clients {
		_ = c.Close()
	}
	for _, rdb := range rdbs {
		_ = rdb.Close()
	}
	_ = proxy.Close()
	clients, rdbs = nil, nil
	res.RedisMem[1] = usedMemory(raw)
	res.ClientMem[1] = heapAlloc()
	if path := os.Getenv("SOAK_HEAPPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
	left := map[string]int{}
	for _, k := range raw.Keys(ctx, "*").Val() {
		prefix, _, _ := strings.Cut(k, ":")
		left[prefix]++
	}
	var faults []string
	total := 0
	for k, n := range res.Faults {
		faults = append(faults, fmt.Sprintf("%s %d", k, n))
		total += n
	}
	slices.Sort(faults)
	fmt.Fprintf(out, "soak done: %d acquisitions in %v (%.0f/s), %d faults injected (%s), violations %d, leases lost %d, failed lock calls %d, wait p99 %v\n",
		res.Acquisitions, cfg.Duration, float64(res.Acquisitions)/cfg.Duration.Seconds(), total, strings.Join(faults, ", "), res.Violations, res.Lost, res.Errors, res.WaitP99.Round(time.Microsecond))
	fmt.Fprintf(out, "memory: redis used_memory %d at start, %d at the end (keys left by prefix: %v; goredisson_cancel floors, written only by settles of calls whose reply was lost, expire within a minute); client heap %d -> %d bytes (clients closed)\n",
		res.RedisMem[0], res.RedisMem[1], left, res.ClientMem[0], res.ClientMem[1])
	return res, nil
}

func usedMemory(rdb *redis.Client) int64 {
	info, _ := rdb.Info(context.Background(), "memory").Result()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
