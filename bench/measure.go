package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// counter counts the commands a process sends and its round trips (a
// pipeline is one), on the wire of the connections newRedis's dialer makes
// (wirecount.go).
type counter struct {
	cmds, trips atomic.Int64
	dials       atomic.Int64 // connection set-up commands (HELLO, CLIENT SETINFO), not counted
	trace       bool         // log every pipeline (-v, watchdog runs)
	mu          sync.Mutex
	times       []time.Time // when each pipeline was sent
}

// newRedis returns a go-redis client counting into cnt.
func newRedis(addr string, pool int, cnt *counter) *redis.Client {
	opt := &redis.Options{Addr: addr, PoolSize: pool}
	if cnt != nil {
		// Counted on the wire (wirecount.go), so that connections dialed
		// from these options by the library (goredisson's inline lane)
		// count too.
		opt.Dialer = cnt.dialer()
	}
	return redis.NewClient(opt)
}

// --- physical limit

// pingRTT returns the PING round trip p50 and p99 over n pings.
func pingRTT(addr string, n int) (p50, p99 time.Duration, err error) {
	rdb := newRedis(addr, 1, nil)
	defer rdb.Close()
	ctx := context.Background()
	d := make([]time.Duration, 0, n)
	for i := 0; i < n+100; i++ {
		start := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			return 0, 0, err
		}
		if i >= 100 {
			d = append(d, time.Since(start))
		}
	}
	return pct(d, 50), pct(d, 99), nil
}

// benchClients is the number of connections of redis-benchmark: as many
// as the goroutines of (b).
const benchClients = 64

// setRPS runs redis-benchmark SET (benchClients connections, no pipelining,
// 200,000 requests) against addr and returns its requests per second and
// its summary line.
func setRPS(addr string) (float64, string, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return 0, "", fmt.Errorf("redis-benchmark not installed: %w", err)
	}
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(bin, "-h", host, "-p", port, "-t", "set", "-c", strconv.Itoa(benchClients), "-n", "200000", "-q").Output()
	if err != nil {
		return 0, "", fmt.Errorf("redis-benchmark: %w", err)
	}
	// -q rewrites a progress line with \r and ends with the summary:
	// "SET: 151057.41 requests per second, p50=0.175 msec".
	for _, l := range strings.FieldsFunc(string(out), func(r rune) bool { return r == '\r' || r == '\n' }) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "SET: "); ok && strings.Contains(rest, "requests per second") {
			rps, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return rps, strings.TrimSpace(l), err
		}
	}
	return 0, "", fmt.Errorf("redis-benchmark: no SET summary in %q", out)
}

// --- hung calls

// stallTimeout is how long a measurement may go without any lock or unlock
// call returning: then its context is cancelled, and the calls still
// waiting fail (a hung call is an error of the library, not a figure).
const stallTimeout = 10 * time.Second

var errStalled = fmt.Errorf("no lock or unlock call returned for %v (a call hung)", stallTimeout)

// withStallGuard returns a context cancelled with cause errStalled once
// progress has not moved for stallTimeout, and its stop function.
func withStallGuard(progress *atomic.Int64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(stallTimeout / 20)
		defer t.Stop()
		last, since := progress.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if p := progress.Load(); p != last {
					last, since = p, now
				} else if now.Sub(since) >= stallTimeout {
					cancel(errStalled)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// stalled returns err, or errStalled if ctx was cancelled by its guard.
func stalled(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errStalled) {
		return fmt.Errorf("%w: %v", cause, err)
	}
	return err
}

// --- (a) uncontended pairs

type pairsResult struct {
	PerSec   float64
	P50, P99 time.Duration
	// Allocs and Bytes are the process's heap allocations per pair over
	// the measured pairs (runtime.MemStats Mallocs and TotalAlloc, as
	// testing.AllocsPerRun reads them): the library's and its client's,
	// background goroutines included.
	Allocs, Bytes float64
	// CPU is the process's user+system CPU time per pair (getrusage) over
	// the measured pairs, in microseconds: the library's, its client's and
	// their background goroutines'.
	CPU float64
}

func uncontended(l lib, addr string, n int, run string) (pairsResult, error) {
	return uncontendedOn(l, servers{Redis: addr}, n, 0, run)
}

// openLib opens l in this process on the servers of srv, with a go-redis
// client of pool connections counting into cnt (nil: not counted); the
// returned close closes both.
func openLib(l lib, srv servers, pool int, cnt *counter, lease time.Duration) (newMutexFunc, func(), error) {
	if l.open == nil {
		return nil, nil, fmt.Errorf("%s runs in the Java bench, not in Go", l.name)
	}
	rdb := newRedis(srv.Redis, pool, cnt)
	newMutex, closeLib, err := l.open(env{rdb: rdb, addr: srv.Redis, cnt: cnt, srv: srv, lease: lease, pool: pool})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return newMutex, func() { closeLib(); rdb.Close() }, nil
}

// uncontendedOn measures n pairs (a tenth more as warm-up), or as many as
// fit in maxDur when it is not 0 (at least 10).
func uncontendedOn(l lib, srv servers, n int, maxDur time.Duration, run string) (pairsResult, error) {
	newMutex, closeLib, err := openLib(l, srv, 4, nil, 0)
	if err != nil {
		return pairsResult{}, err
	}
	defer closeLib()
	var progress atomic.Int64
	ctx, stop := withStallGuard(&progress)
	defer stop()
	m := newMutex(ctx, "bench:a:"+run)
	pair := func() error {
		if err := m.lock(); err != nil {
			return stalled(ctx, err)
		}
		err := m.unlock()
		progress.Add(1)
		return stalled(ctx, err)
	}
	for range n / 10 { // warms up connections and scripts
		if err := pair(); err != nil {
			return pairsResult{}, err
		}
	}
	lat := make([]time.Duration, 0, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := cpuTime()
	began := time.Now()
	for range n {
		if maxDur > 0 && len(lat) >= 10 && time.Since(began) >= maxDur {
			break
		}
		start := time.Now()
		if err := pair(); err != nil {
			return pairsResult{}, err
		}
		lat = append(lat, time.Since(start))
	}
	n = len(lat)
	cpu = cpuTime() - cpu
	runtime.ReadMemStats(&after)
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	return pairsResult{
		PerSec: float64(n) / total.Seconds(), P50: pct(lat, 50), P99: pct(lat, 99),
		Allocs: float64(after.Mallocs-before.Mallocs) / float64(n),
		Bytes:  float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
		CPU:    float64(cpu.Microseconds()) / float64(n),
	}, nil
}

// --- (b) many goroutines on keys of their own

func parallelOwnKeys(l lib, addr string, goroutines int, d time.Duration, run string) (float64, error) {
	return parallelOwnKeysOn(l, servers{Redis: addr}, goroutines, 200*time.Millisecond, d, run)
}

// parallelOwnKeysOn runs goroutines owners on keys of their own for warm,
// then counts their pairs for d.
func parallelOwnKeysOn(l lib, srv servers, goroutines int, warm, d time.Duration, run string) (float64, error) {
	newMutex, closeLib, err := openLib(l, srv, goroutines+8, nil, 0)
	if err != nil {
		return 0, err
	}
	defer closeLib()
	var pairs, progress atomic.Int64
	ctx, stop := withStallGuard(&progress)
	defer stop()
	var firstErr atomic.Value
	start := time.Now().Add(warm)
	end := start.Add(d)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := newMutex(ctx, "bench:b:"+run+":"+strconv.Itoa(g))
			for now := time.Now(); now.Before(end); now = time.Now() {
				err := m.lock()
				if err == nil {
					err = m.unlock()
				}
				progress.Add(1)
				if err != nil {
					firstErr.CompareAndSwap(nil, stalled(ctx, err))
					return
				}
				if !now.Before(start) { // until the start, warm-up
					pairs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, err
	}
	return float64(pairs.Load()) / d.Seconds(), nil
}

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
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range memWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(ms)); i = next.Add(1) - 1 {
				if err := fn(ms[i]); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return err
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

// --- (c) one key, contended

// section is one critical section: when its owner asked for the lock, got
// it, and its unlock returned (wall clock, ns: comparable across processes
// of one machine).
type section struct {
	Worker               int
	Asked, Got, Released int64
}

// workerResult is what a contending process reports.
type workerResult struct {
	Sections []section
	Cmds     int64
	Errors   int
	Err      string
}

// contendSpec describes a contention run.
type contendSpec struct {
	Lib         string
	Addr        string
	Srv         servers // the other servers (Srv.Redis is Addr)
	Key         string
	Workers     int // goroutines in this process
	FirstWorker int
	Hold, Think time.Duration
	Start, End  int64 // wall clock ns
}

// contendGrace is how long after a contention run's end a lock call may
// still wait.
const contendGrace = 10 * time.Second

// contend runs spec's workers in this process, all on one lock.
func contend(spec contendSpec) workerResult {
	l, err := findAnyLib(spec.Lib)
	if err != nil {
		return workerResult{Err: err.Error()}
	}
	var cnt counter
	srv := spec.Srv
	srv.Redis = spec.Addr
	rdb := newRedis(spec.Addr, 2, nil)
	defer rdb.Close()
	newMutex, closeLib, err := openLib(l, srv, spec.Workers+4, &cnt, 0)
	if err != nil {
		return workerResult{Err: err.Error()}
	}
	defer closeLib()
	// A lock call still waiting contendGrace after the end fails with the
	// deadline (an error of the run) rather than hanging the benchmark.
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, spec.End).Add(contendGrace))
	defer cancel()
	results := make([][]section, spec.Workers)
	var errs atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	if err := rdb.Ping(ctx).Err(); err != nil {
		return workerResult{Err: err.Error()}
	}
	time.Sleep(time.Until(time.Unix(0, spec.Start)))
	before := cnt.cmds.Load()
	for w := range spec.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := newMutex(ctx, spec.Key)
			id := spec.FirstWorker + w
			for time.Now().UnixNano() < spec.End {
				s := section{Worker: id, Asked: time.Now().UnixNano()}
				if err := m.lock(); err != nil {
					if ctx.Err() != nil {
						err = fmt.Errorf("lock call still waiting %v after the run's end: %w", contendGrace, err)
					}
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				s.Got = time.Now().UnixNano()
				time.Sleep(spec.Hold)
				if err := m.unlock(); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				s.Released = time.Now().UnixNano()
				results[w] = append(results[w], s)
				if spec.Think > 0 {
					time.Sleep(spec.Think)
				}
			}
		}()
	}
	wg.Wait()
	out := workerResult{Cmds: cnt.cmds.Load() - before, Errors: int(errs.Load())}
	if e, ok := firstErr.Load().(string); ok {
		out.Err = e
	}
	for _, r := range results {
		out.Sections = append(out.Sections, r...)
	}
	return out
}

// runWorkerProcess is the entry point of a contending child process: it
// reads a contendSpec as JSON from stdin and writes a workerResult.
func runWorkerProcess() int {
	var spec contendSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		fmt.Fprintln(os.Stderr, "bench worker:", err)
		return 2
	}
	res := contend(spec)
	w := bufio.NewWriter(os.Stdout)
	if err := json.NewEncoder(w).Encode(res); err != nil {
		return 1
	}
	_ = w.Flush()
	return 0
}

// contendResult are the figures of one contention run.
type contendResult struct {
	AcqPerSec        float64
	GapP50, GapP99   time.Duration
	Retake           float64 // share of acquisitions by the owner that released just before
	WaitP99, WaitMax time.Duration
	Fairness         float64 // max/min acquisitions per worker (Inf: a worker starved)
	CmdsPerAcq       float64
	RedisCPU         float64 // Redis CPU seconds per wall second
	Errors           int
	Overlaps         int // sections that began before the previous one could have ended
	Err              string
	acquisitions     int
}

// contended runs one contention configuration, in goroutines of this
// process (procs 0) or in procs child processes of one worker each.
func contended(l lib, addr string, goroutines, procs int, hold, think, d time.Duration, run string) (contendResult, error) {
	raw := newRedis(addr, 2, nil)
	defer raw.Close()
	key := "bench:c:" + run
	lead := 300 * time.Millisecond
	if procs > 0 {
		lead = 1500 * time.Millisecond // child processes start and connect first
	}
	start := time.Now().Add(lead)
	spec := contendSpec{Lib: l.name, Addr: addr, Key: key, Hold: hold, Think: think, Start: start.UnixNano(), End: start.Add(d).UnixNano()}
	statsBefore, cpuBefore, err := redisSide(raw)
	if err != nil {
		return contendResult{}, err
	}
	var parts []workerResult
	if procs == 0 {
		spec.Workers = goroutines
		parts = append(parts, contend(spec))
	} else {
		parts, err = contendInProcesses(spec, procs)
		if err != nil {
			return contendResult{}, err
		}
	}
	statsAfter, cpuAfter, err := redisSide(raw)
	if err != nil {
		return contendResult{}, err
	}
	if verbose {
		var ran []string
		for name, n := range statsAfter {
			if d := n - statsBefore[name]; d > 0 {
				ran = append(ran, fmt.Sprintf("%s=%d", name, d))
			}
		}
		slices.Sort(ran)
		logf("    redis commands (incl. inside scripts): %s", strings.Join(ran, " "))
	}
	workers := goroutines
	if procs > 0 {
		workers = procs
	}
	res, err := summarize(l.name, parts, workers, hold, d)
	var cmds int64
	for _, p := range parts {
		cmds += p.Cmds
	}
	cmds += subscribeCalls(statsAfter) - subscribeCalls(statsBefore)
	res.RedisCPU = (cpuAfter - cpuBefore) / time.Since(start).Seconds()
	if err != nil {
		return res, err
	}
	res.CmdsPerAcq = float64(cmds) / float64(res.acquisitions)
	return res, nil
}

// summarize computes the figures of a contention run from the critical
// sections its workers (numbered 0 to workers-1) report.
func summarize(name string, parts []workerResult, workers int, hold, d time.Duration) (contendResult, error) {
	var all []section
	res := contendResult{}
	for _, p := range parts {
		all = append(all, p.Sections...)
		res.Errors += p.Errors
		if p.Err != "" && res.Err == "" {
			res.Err = p.Err
		}
	}
	if len(all) == 0 {
		return res, fmt.Errorf("%s: no acquisition (%s)", name, res.Err)
	}
	res.acquisitions = len(all)
	slices.SortFunc(all, func(a, b section) int { return int(a.Got - b.Got) })
	perWorker := make([]int, workers)
	var gaps, waits []time.Duration
	retakes := 0
	for i, s := range all {
		if s.Worker >= 0 && s.Worker < workers {
			perWorker[s.Worker]++
		}
		waits = append(waits, time.Duration(s.Got-s.Asked))
		if i == 0 {
			continue
		}
		prev := all[i-1]
		if s.Got < prev.Got+int64(hold) {
			res.Overlaps++
		}
		if s.Worker == prev.Worker {
			retakes++
			continue
		}
		if s.Asked < prev.Released { // it was waiting when the lock was released
			gaps = append(gaps, time.Duration(s.Got-prev.Released))
		}
	}
	res.AcqPerSec = float64(len(all)) / d.Seconds()
	res.GapP50, res.GapP99 = pct(gaps, 50), pct(gaps, 99)
	res.Retake = float64(retakes) / float64(max(1, len(all)-1))
	res.WaitP99, res.WaitMax = pct(waits, 99), slices.Max(waits)
	lo, hi := slices.Min(perWorker), slices.Max(perWorker)
	res.Fairness = float64(hi) / float64(max(lo, 0))
	return res, nil
}

// contendInProcesses runs one worker in each of procs child processes.
func contendInProcesses(spec contendSpec, procs int) ([]workerResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	type child struct {
		cmd *exec.Cmd
		out strings.Builder
	}
	children := make([]*child, procs)
	for i := range children {
		s := spec
		s.Workers, s.FirstWorker = 1, i
		in, _ := json.Marshal(s)
		c := &child{cmd: exec.Command(self, "worker")}
		c.cmd.Stdin = strings.NewReader(string(in))
		c.cmd.Stdout = &c.out
		c.cmd.Stderr = os.Stderr
		if err := c.cmd.Start(); err != nil {
			return nil, err
		}
		children[i] = c
	}
	var parts []workerResult
	for _, c := range children {
		if err := c.cmd.Wait(); err != nil {
			return nil, fmt.Errorf("worker process: %w", err)
		}
		var r workerResult
		if err := json.Unmarshal([]byte(c.out.String()), &r); err != nil {
			return nil, fmt.Errorf("worker output: %w", err)
		}
		parts = append(parts, r)
	}
	return parts, nil
}

// redisSide reads what only Redis can count: the calls of every command
// (INFO commandstats; commands run inside scripts count too) and Redis's
// CPU seconds (INFO cpu).
func redisSide(rdb *redis.Client) (calls map[string]int64, cpu float64, err error) {
	ctx := context.Background()
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, 0, err
	}
	calls = map[string]int64{}
	for _, line := range strings.Split(stats, "\n") {
		if name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls="); ok {
			calls[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		}
	}
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return nil, 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			cpu += f
		}
	}
	return calls, cpu, nil
}

// subscribeCalls sums the (un)subscribe commands of calls: go-redis sends
// them outside its hooks, so only Redis counts them.
func subscribeCalls(calls map[string]int64) int64 {
	var n int64
	for _, name := range []string{"subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe"} {
		n += calls[name]
	}
	return n
}

// --- (d) watchdog cost

type watchdogResult struct {
	Locks            int
	Window           time.Duration
	Ticks            int // renew ticks seen in the window (pipelines less than 2 s apart are one tick)
	Trips, Cmds      int64
	TripsPerTickPerK float64 // round trips per tick per 1,000 locks
	ClientCPU        time.Duration
}

func watchdogCost(addr string, locks int, window time.Duration, run string) (watchdogResult, error) {
	cnt := counter{trace: verbose}
	rdb := newRedis(addr, 16, &cnt)
	defer rdb.Close()
	rl, err := findLib(rlockName)
	if err != nil {
		return watchdogResult{}, err
	}
	newMutex, closeLib, err := rl.open(env{rdb: rdb, addr: addr, cnt: &cnt})
	if err != nil {
		return watchdogResult{}, err
	}
	defer closeLib()
	ctx := context.Background()
	ms := make([]mutex, locks)
	for i := range ms {
		ms[i] = newMutex(ctx, "bench:d:"+run+":"+strconv.Itoa(i))
		if err := ms[i].lock(); err != nil {
			return watchdogResult{}, err
		}
	}
	trips, cmds := cnt.trips.Load(), cnt.cmds.Load()
	cnt.mu.Lock()
	cnt.times = nil
	cnt.mu.Unlock()
	cpu := cpuTime()
	time.Sleep(window)
	res := watchdogResult{Locks: locks, Window: window, Trips: cnt.trips.Load() - trips, Cmds: cnt.cmds.Load() - cmds, ClientCPU: cpuTime() - cpu}
	cnt.mu.Lock()
	for i, t := range cnt.times {
		if i == 0 || t.Sub(cnt.times[i-1]) > 2*time.Second {
			res.Ticks++
		}
	}
	cnt.mu.Unlock()
	res.TripsPerTickPerK = float64(res.Trips) / float64(max(1, res.Ticks)) / (float64(locks) / 1000)
	for _, m := range ms {
		if err := m.unlock(); err != nil {
			return res, err
		}
	}
	return res, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pct returns the p-th percentile of d (sorted in place), 0 for none.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p/100))]
}
