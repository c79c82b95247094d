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
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "worker":
			os.Exit(runWorkerProcess())
		case "serve":
			os.Exit(runServe(os.Args[2:]))
		case "waitmem":
			os.Exit(runWaitmem(os.Args[2:]))
		}
	}
	cfg := config{}
	flag.StringVar(&cfg.addr, "redis", "", "Redis address (default: start a private redis-server on a free loopback port)")
	flag.IntVar(&cfg.runs, "runs", 3, "runs of every measurement (figures are medians of the runs' medians, with their min and max)")
	flag.IntVar(&cfg.pairs, "pairs", 3000, "(a) lock+unlock pairs per burst")
	flag.DurationVar(&cfg.parallelFor, "parallel-for", 2*time.Second, "(b) duration of a burst (and of a --cluster burst)")
	flag.DurationVar(&cfg.contendFor, "contend-for", 4*time.Second, "(c) duration of a burst")
	flag.IntVar(&cfg.wdLocks, "watchdog-locks", 10000, "(d) locks held")
	flag.IntVar(&cfg.memLocks, "mem-locks", 10000, "(m) locks held to measure Redis memory per lock")
	flag.IntVar(&cfg.waiters, "waiters", 10000, "(w) waiters parked to measure the client's memory per waiter")
	flag.DurationVar(&cfg.wdFor, "watchdog-for", 30*time.Second, "(d) duration of a run (0 skips (d))")
	flag.StringVar(&cfg.only, "only", "", "comma-separated parts to run: a,b,m,c,w,cl,d (default all); --backends: a,b,c (or c16,c4),k,f")
	flag.StringVar(&cfg.baseline, "baseline", "", "the .json record of an earlier default run (the build before a change): (c)'s commands per acquisition and fairness are checked against it")
	libNames := flag.String("libs", "", "comma-separated libraries to measure (default all), e.g. \"goredisson RLock,redsync\"")
	flag.BoolVar(&verbose, "v", false, "log the Redis commands of every contention run")
	flag.StringVar(&cfg.out, "out", "results.md", "Markdown output file (the default run also writes its bursts' figures beside it, .json)")
	flag.StringVar(&cfg.plot, "plot", "results.png", "PNG plot file")
	backends := flag.Bool("backends", false, "issue 26's run instead: every lock row (goredisson, the real Redisson, the Go peers, MariaDB, ZooKeeper, etcd) in bursts, the cache breakdown and the failure table; parts a,b,c (or c16,c4),k,f")
	bc := bconfig{}
	flag.IntVar(&bc.bursts, "bursts", 3, "bursts per run of (a) and (b) (default 2 in the default run, 3 with --backends)")
	flag.IntVar(&bc.cBursts, "c-bursts", 2, "bursts per run of (c) (default 1 in the default run, 2 with --backends)")
	flag.IntVar(&bc.pairs, "burst-pairs", 300, "--backends: (a) pairs per burst (at most)")
	flag.DurationVar(&bc.aMax, "burst-a-for", 400*time.Millisecond, "--backends: (a) time per burst (at most)")
	flag.DurationVar(&bc.bFor, "burst-b-for", 400*time.Millisecond, "--backends: (b) time per burst")
	flag.DurationVar(&bc.cFor, "burst-c-for", 750*time.Millisecond, "--backends: (c) time per burst")
	flag.IntVar(&bc.kRequests, "breakdown-requests", 1000, "--backends: concurrent requests of the cache breakdown")
	flag.DurationVar(&bc.kLoad, "load-time", 20*time.Millisecond, "--backends: time one load of the backing store takes")
	flag.DurationVar(&bc.failLease, "fail-lease", 5*time.Second, "--backends: lease or session timeout of every row in the failure table")
	flag.IntVar(&bc.failRuns, "fail-runs", 3, "--backends: runs of the failure table")
	clusterRun := flag.Bool("cluster", false, "issue 22's run instead: (b) on a local 3-master Redis Cluster beside one node, in bursts (see cluster.go); writes cluster.md unless --out is given")
	clusterRounds := flag.Int("cluster-rounds", 5, "--cluster: bursts of the six rows")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *clusterRun:
		exit(clusterMain(cfg, set, *clusterRounds))
	case *backends:
		exit(backendsMain(cfg, bc, set, *libNames))
	}
	cfg.bursts, cfg.cBursts = 2, 1
	if set["bursts"] {
		cfg.bursts = bc.bursts
	}
	if set["c-bursts"] {
		cfg.cBursts = bc.cBursts
	}
	exit(defaultMain(cfg, *libNames))
}

// exit ends the program after err: 2 for bad flags, 1 for a failed run.
func exit(err error) {
	if err == nil {
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "bench:", err)
	var usage usageError
	if errors.As(err, &usage) {
		os.Exit(2)
	}
	os.Exit(1)
}

// usageError is a bad flag.
type usageError string

func (e usageError) Error() string { return string(e) }

func clusterMain(cfg config, set map[string]bool, rounds int) error {
	out := "cluster.md"
	if set["out"] {
		out = cfg.out
	}
	if rounds < 1 || cfg.parallelFor <= 0 {
		return usageError("--cluster-rounds >= 1 and a positive --parallel-for required")
	}
	return runCluster(rounds, cfg.parallelFor, out)
}

func checkConfig(cfg config) error {
	if cfg.runs < 1 || cfg.pairs < 10 || cfg.parallelFor <= 0 || cfg.contendFor <= 0 || cfg.wdLocks < 1 || cfg.memLocks < 1 || cfg.wdFor < 0 || cfg.waiters < 1 {
		return usageError("--runs >= 1, --pairs >= 10, positive durations, --watchdog-locks >= 1, --mem-locks >= 1 and --waiters >= 1 required")
	}
	return nil
}

func backendsMain(cfg config, bc bconfig, set map[string]bool, libNames string) error {
	if err := checkConfig(cfg); err != nil {
		return err
	}
	bc.runs, bc.only, bc.out, bc.plot = cfg.runs, cfg.only, cfg.out, cfg.plot
	bc.bWorkers, bc.bWarm, bc.contendHold, bc.contendProcesses = 64, 200*time.Millisecond, time.Millisecond, 4
	if !set["out"] {
		bc.out = "backends.md"
	}
	if !set["plot"] {
		bc.plot = "backends.png"
	}
	if bc.bursts < 1 || bc.cBursts < 1 || bc.pairs < 10 || bc.kRequests < 1 || bc.failLease < 2*time.Second || bc.failRuns < 0 {
		return usageError("--bursts >= 1, --c-bursts >= 1, --burst-pairs >= 10, --breakdown-requests >= 1, --fail-lease >= 2s, --fail-runs >= 0 required")
	}
	names := backendRowOrder
	if libNames != "" {
		names = strings.Split(libNames, ",")
	}
	for _, n := range names {
		l, err := findAnyLib(strings.TrimSpace(n))
		if err != nil {
			return usageError(err.Error())
		}
		bc.rows = append(bc.rows, l)
	}
	return runBackends(bc)
}

func defaultMain(cfg config, libNames string) error {
	if err := checkConfig(cfg); err != nil {
		return err
	}
	if cfg.bursts < 1 || cfg.cBursts < 1 {
		return usageError("--bursts >= 1 and --c-bursts >= 1 required")
	}
	if libNames != "" {
		var keep []lib
		for _, n := range strings.Split(libNames, ",") {
			l, err := findLib(strings.TrimSpace(n))
			if err != nil {
				return usageError(err.Error())
			}
			keep = append(keep, l)
		}
		libs = keep
	}
	return run(cfg)
}

type config struct {
	addr                           string
	runs, pairs, wdLocks, memLocks int
	waiters                        int
	bursts, cBursts                int // bursts per run of (a) and (b), of (c)
	parallelFor, contendFor, wdFor time.Duration
	only, out, plot                string
	baseline                       string // --baseline: an earlier run's record
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
