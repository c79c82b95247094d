package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

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
	RedisCPUPerAcq   float64 // Redis CPU µs per acquisition
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
	res.RedisCPUPerAcq = (cpuAfter - cpuBefore) * 1e6 / float64(res.acquisitions)
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
