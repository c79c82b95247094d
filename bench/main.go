// Command bench measures goredisson beside go-redsync/redsync,
// bsm/redislock, redis/rueidis's rueidislock and a naive SET NX PX lock,
// against one Redis in one run, writes a Markdown table and a PNG plot, and
// marks each target of issue 16 PASS or MISSED.
//
//	go run .                 (from bench/; or make bench from the repository root)
//	go run . --redis ADDR    (use a running Redis instead of a private one)
//
// It is its own module so that the library never depends on the peers.
// See README.md for what each column means.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/goredisson/goredisson/internal/redistest"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(runWorkerProcess())
	}
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(runServe(os.Args[2:]))
	}
	cfg := config{}
	flag.StringVar(&cfg.addr, "redis", "", "Redis address (default: start a private redis-server on a free loopback port)")
	flag.IntVar(&cfg.runs, "runs", 3, "runs of every measurement (figures are medians with min and max)")
	flag.IntVar(&cfg.pairs, "pairs", 3000, "(a) lock+unlock pairs per run")
	flag.DurationVar(&cfg.parallelFor, "parallel-for", 2*time.Second, "(b) duration of a run")
	flag.DurationVar(&cfg.contendFor, "contend-for", 4*time.Second, "(c) duration of a run")
	flag.IntVar(&cfg.wdLocks, "watchdog-locks", 10000, "(d) locks held")
	flag.IntVar(&cfg.memLocks, "mem-locks", 10000, "(m) locks held to measure Redis memory per lock")
	flag.DurationVar(&cfg.wdFor, "watchdog-for", 30*time.Second, "(d) duration of a run (0 skips (d))")
	flag.StringVar(&cfg.only, "only", "", "comma-separated parts to run: a,b,m,c,d (default all)")
	libNames := flag.String("libs", "", "comma-separated libraries to measure (default all), e.g. \"goredisson RLock,redsync\"")
	flag.BoolVar(&verbose, "v", false, "log the Redis commands of every contention run")
	flag.StringVar(&cfg.out, "out", "results.md", "Markdown output file")
	flag.StringVar(&cfg.plot, "plot", "results.png", "PNG plot file")
	backends := flag.Bool("backends", false, "issue 26's run instead: every lock row (goredisson, the real Redisson, the Go peers, MariaDB, ZooKeeper, etcd) in bursts, the cache breakdown and the failure table; parts a,b,c (or c16,c4),k,f")
	bc := bconfig{}
	flag.IntVar(&bc.bursts, "bursts", 3, "--backends: bursts per run of (a) and (b)")
	flag.IntVar(&bc.cBursts, "c-bursts", 2, "--backends: bursts per run of (c)")
	flag.IntVar(&bc.pairs, "burst-pairs", 300, "--backends: (a) pairs per burst (at most)")
	flag.DurationVar(&bc.aMax, "burst-a-for", 400*time.Millisecond, "--backends: (a) time per burst (at most)")
	flag.DurationVar(&bc.bFor, "burst-b-for", 400*time.Millisecond, "--backends: (b) time per burst")
	flag.DurationVar(&bc.cFor, "burst-c-for", 750*time.Millisecond, "--backends: (c) time per burst")
	flag.IntVar(&bc.kRequests, "breakdown-requests", 1000, "--backends: concurrent requests of the cache breakdown")
	flag.DurationVar(&bc.kLoad, "load-time", 20*time.Millisecond, "--backends: time one load of the backing store takes")
	flag.DurationVar(&bc.failLease, "fail-lease", 5*time.Second, "--backends: lease or session timeout of every row in the failure table")
	flag.IntVar(&bc.failRuns, "fail-runs", 3, "--backends: runs of the failure table")
	clusterRun := flag.Bool("cluster", false, "issue 22's run instead: (b) on a local 3-master Redis Cluster beside one node, interleaved (see cluster.go); writes cluster.md unless --out is given")
	clusterRounds := flag.Int("cluster-rounds", 5, "--cluster: interleaved rounds of the four rows")
	flag.Parse()
	if *clusterRun {
		out := "cluster.md"
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "out" {
				out = cfg.out
			}
		})
		if *clusterRounds < 1 || cfg.parallelFor <= 0 {
			fmt.Fprintln(os.Stderr, "bench: --cluster-rounds >= 1 and a positive --parallel-for required")
			os.Exit(2)
		}
		if err := runCluster(*clusterRounds, cfg.parallelFor, out); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if cfg.runs < 1 || cfg.pairs < 10 || cfg.parallelFor <= 0 || cfg.contendFor <= 0 || cfg.wdLocks < 1 || cfg.memLocks < 1 || cfg.wdFor < 0 {
		fmt.Fprintln(os.Stderr, "bench: --runs >= 1, --pairs >= 10, positive durations, --watchdog-locks >= 1 and --mem-locks >= 1 required")
		os.Exit(2)
	}
	if *backends {
		bc.runs, bc.only, bc.out, bc.plot = cfg.runs, cfg.only, cfg.out, cfg.plot
		bc.bWorkers, bc.bWarm, bc.contendHold, bc.contendProcesses = 64, 200*time.Millisecond, time.Millisecond, 4
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["out"] {
			bc.out = "backends.md"
		}
		if !set["plot"] {
			bc.plot = "backends.png"
		}
		if bc.bursts < 1 || bc.cBursts < 1 || bc.pairs < 10 || bc.kRequests < 1 || bc.failLease < 2*time.Second || bc.failRuns < 0 {
			fmt.Fprintln(os.Stderr, "bench: --bursts >= 1, --c-bursts >= 1, --burst-pairs >= 10, --breakdown-requests >= 1, --fail-lease >= 2s, --fail-runs >= 0 required")
			os.Exit(2)
		}
		names := backendRowOrder
		if *libNames != "" {
			names = strings.Split(*libNames, ",")
		}
		for _, n := range names {
			l, err := findAnyLib(strings.TrimSpace(n))
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(2)
			}
			bc.rows = append(bc.rows, l)
		}
		if err := runBackends(bc); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *libNames != "" {
		var keep []lib
		for _, n := range strings.Split(*libNames, ",") {
			l, err := findLib(strings.TrimSpace(n))
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(2)
			}
			keep = append(keep, l)
		}
		libs = keep
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type config struct {
	addr                           string
	runs, pairs, wdLocks, memLocks int
	parallelFor, contendFor, wdFor time.Duration
	only, out, plot                string
}

func (c config) part(p string) bool {
	return c.only == "" || strings.Contains(","+c.only+",", ","+p+",")
}

// contendConfigs are the (c) configurations.
var contendConfigs = []struct {
	label       string
	goroutines  int
	procs       int
	think       time.Duration
	targetChart bool
}{
	{"16 goroutines, think 0", 16, 0, 0, false},
	{"16 goroutines, think 1 ms", 16, 0, time.Millisecond, false},
	{"4 processes, think 0", 0, 4, 0, false},
	{"4 processes, think 1 ms", 0, 4, time.Millisecond, true},
}

func run(cfg config) error {
	addr := cfg.addr
	what := "redis at " + addr
	if addr == "" {
		s, err := redistest.Start()
		if err != nil {
			return err
		}
		defer s.Close()
		addr, what = s.Addr, fmt.Sprintf("private redis-server on %s", s.Addr)
	}
	rep := &report{what: what, cfg: cfg, started: time.Now()}
	rep.redisVersion = redisVersion(addr)
	logf("%s (%s); %d runs per figure", what, rep.redisVersion, cfg.runs)

	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	// Run-major: every library is measured in every run, one after
	// another, so that all see the same machine state (this VM's round
	// trip swings between modes).
	for r := range cfg.runs {
		id := runID + ":" + strconv.Itoa(r)
		if err := measureRun(rep, cfg, addr, r, id); err != nil {
			return err
		}
	}
	if cfg.part("c") {
		contendAll(rep, cfg, addr, runID)
	}
	if _, err := findSelected(rlockName); err == nil && cfg.part("d") && cfg.wdFor > 0 {
		for r := range cfg.runs {
			res, err := watchdogCost(addr, cfg.wdLocks, cfg.wdFor, runID+":"+strconv.Itoa(r))
			if err != nil {
				rep.fail("d", rlockName, r, err)
				continue
			}
			rep.watchdog = append(rep.watchdog, res)
			logf("(d) run %d: %d locks for %v: %d round trips, %d commands, %.2f trips/tick/1000 locks, client CPU %v",
				r+1, res.Locks, res.Window, res.Trips, res.Cmds, res.TripsPerTickPerK, res.ClientCPU)
		}
	}
	md := rep.markdown()
	if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	if cfg.part("c") {
		if err := rep.plotPNG(cfg.plot); err != nil {
			return err
		}
		logf("wrote %s and %s", cfg.out, cfg.plot)
	}
	return nil
}

// contendAll runs (c): every configuration, run and library.
func contendAll(rep *report, cfg config, addr, runID string) {
	for _, cc := range contendConfigs {
		for r := range cfg.runs {
			for _, l := range libs {
				if l.serverOnly {
					continue
				}
				id := runID + ":" + strconv.Itoa(r)
				res, err := contended(l, addr, cc.goroutines, cc.procs, time.Millisecond, cc.think, cfg.contendFor, id)
				if err != nil {
					rep.fail("c:"+cc.label, l.name, r, err)
					continue
				}
				rep.addContend(cc.label, l.name, r, res)
				logf("(c) %-26s %-20s run %d: %.0f acq/s gap p50 %v p99 %v retake %.2f wait p99 %v max %v fair %.2f cmds/acq %.1f redis cpu %.2f errors %d overlaps %d %s",
					cc.label, l.name, r+1, res.AcqPerSec, res.GapP50, res.GapP99, res.Retake, res.WaitP99, res.WaitMax, res.Fairness, res.CmdsPerAcq, res.RedisCPU, res.Errors, res.Overlaps, res.Err)
			}
		}
	}
}

// measureRun measures the physical limit, (a), (b) and (m) of every
// library once.
func measureRun(rep *report, cfg config, addr string, r int, id string) error {
	p50, p99, err := pingRTT(addr, 5000)
	if err != nil {
		return err
	}
	rep.pingP50 = append(rep.pingP50, float64(p50))
	rep.pingP99 = append(rep.pingP99, float64(p99))
	logf("PING run %d: p50 %v p99 %v", r+1, p50, p99)
	limit := math.NaN() // (b)'s physical limit: SET rps / 2
	if cfg.part("b") {
		if rps, line, err := setRPS(addr); err != nil {
			logf("no physical limit for (b): %v", err)
		} else {
			limit = rps / 2
			rep.setRPS = append(rep.setRPS, rps)
			rep.benchLines = append(rep.benchLines, line)
			logf("redis-benchmark run %d: %s", r+1, line)
		}
	}
	for _, l := range libs {
		if l.contendedOnly {
			continue
		}
		if cfg.part("a") {
			measureA(rep, cfg, l, addr, r, id)
		}
		if cfg.part("b") {
			measureB(rep, cfg, l, addr, r, id, limit)
		}
		if cfg.part("m") {
			measureM(rep, cfg, l, addr, r, id)
		}
	}
	return nil
}

func measureA(rep *report, cfg config, l lib, addr string, r int, id string) {
	res, err := uncontendedOn(l, servers{Redis: addr}, cfg.pairs, 0, id, nil)
	if err != nil {
		rep.fail("a", l.name, r, err)
		return
	}
	rep.add("a", l.name, "pairs/s", res.PerSec)
	rep.add("a", l.name, "p50", float64(res.P50))
	rep.add("a", l.name, "p99", float64(res.P99))
	rep.add("a", l.name, "allocs", res.Allocs)
	rep.add("a", l.name, "bytes", res.Bytes)
	rep.add("a", l.name, "cpu", res.CPU)
	logf("(a) %-20s run %d: %.0f pairs/s p50 %v p99 %v, %.1f allocs %.0f B %.1f µs CPU per pair", l.name, r+1, res.PerSec, res.P50, res.P99, res.Allocs, res.Bytes, res.CPU)
}

// measureB measures (b); limit is the run's physical limit (NaN: unknown).
func measureB(rep *report, cfg config, l lib, addr string, r int, id string, limit float64) {
	perSec, _, err := parallelOwnKeysOn(l, servers{Redis: addr}, 64, 200*time.Millisecond, cfg.parallelFor, id, nil)
	if err != nil {
		rep.fail("b", l.name, r, err)
		return
	}
	rep.add("b", l.name, "pairs/s", perSec)
	if !math.IsNaN(limit) {
		rep.add("b", l.name, "share", perSec/limit)
	}
	logf("(b) %-20s run %d: %.0f pairs/s, %.0f%% of SET rps / 2", l.name, r+1, perSec, 100*perSec/limit)
}

func measureM(rep *report, cfg config, l lib, addr string, r int, id string) {
	res, err := memoryOnOwnServer(l, cfg, addr, id)
	if err != nil {
		rep.fail("m", l.name, r, err)
		return
	}
	rep.add("m", l.name, "per lock", res.PerLock)
	rep.add("m", l.name, "left", res.LeftPerLock)
	logf("(m) %-20s run %d: %.0f B per held lock, %.0f B per lock left after unlock", l.name, r+1, res.PerLock, res.LeftPerLock)
}

// memoryOnOwnServer measures (m) on a fresh private redis-server of its
// own, so that no key of another measurement (goredisson's markers live on
// for seconds after a release) expires during it; on addr when the
// benchmark was given a Redis (--redis).
func memoryOnOwnServer(l lib, cfg config, addr, id string) (memResult, error) {
	if cfg.addr == "" {
		s, err := redistest.Start()
		if err != nil {
			return memResult{}, err
		}
		defer s.Close()
		addr = s.Addr
	}
	return redisMemory(l, addr, cfg.memLocks, id)
}

func redisVersion(addr string) string {
	rdb := newRedis(addr, 1, nil)
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		return "unknown version"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return "Redis " + v + ", Go " + runtime.Version() + ", " + strconv.Itoa(runtime.NumCPU()) + " CPUs"
		}
	}
	return "unknown version"
}

// verbose logs the commands Redis ran in each contention run.
var verbose bool

func goVersion() string { return runtime.Version() }
func numCPU() int       { return runtime.NumCPU() }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
