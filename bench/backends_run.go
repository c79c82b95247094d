package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The --backends run (issue 26): every lock row — goredisson, the real
// Redisson, the Go peers, the naive lock, MariaDB, ZooKeeper and etcd — in
// the same workloads, measured in short bursts. A burst measures every row
// once, one after another, in an order rotated from burst to burst; each
// row's figure is also divided by goredisson RLock's figure of the same
// burst. This VM's round trip has two modes about 5× apart, and a burst is
// short enough that its rows mostly meet the same one: ratios within a
// burst compare rows, raw figures across bursts compare machine states.
// A run's figure is the median of its bursts; the report gives the median
// of the runs with their min–max.

// bconfig are the knobs of a --backends run.
type bconfig struct {
	runs, bursts     int           // bursts per run of (a) and (b)
	cBursts          int           // bursts per run of (c)
	pairs            int           // (a) pairs per burst (at most)
	aMax             time.Duration // (a) time per burst (at most)
	bWorkers         int
	bWarm, bFor      time.Duration
	cFor             time.Duration
	kRequests        int
	kLoad            time.Duration
	failLease        time.Duration
	failRuns         int
	only             string
	rows             []lib
	out, plot        string
	contendHold      time.Duration
	contendProcesses int
}

func (c bconfig) part(p string) bool {
	return c.only == "" || strings.Contains(","+c.only+",", ","+p+",")
}

// bContendConfigs are the (c) configurations of the --backends run.
var bContendConfigs = []struct {
	label, part string
	goroutines  int
	procs       int
}{
	{"16 goroutines (threads)", "c16", 16, 0},
	{"4 processes", "c4", 0, 4},
}

// backendRun holds what a --backends run started.
type backendRun struct {
	cfg   bconfig
	ss    *startedServers
	jb    *javaBench
	rows  []lib // rows that can run here
	rep   *brep
	jIn   *worker   // the Java worker of the in-process workloads
	jProc []*worker // the Java workers of (c) in processes
	gProc []*worker // the Go workers of (c) in processes
	id    string
	// redisCost samples the Redis server around (a) and (b).
	redisCost *redisCost
}

func runBackends(cfg bconfig) error {
	began := time.Now()
	rep := &brep{cfg: cfg, started: began}
	ss, err := startServers()
	if err != nil {
		return err
	}
	defer ss.Close()
	rep.skips = append(rep.skips, ss.skips...)
	br := &backendRun{cfg: cfg, ss: ss, rep: rep, id: strconv.FormatInt(time.Now().UnixNano(), 36)}
	jb, skip, err := compileRedissonBench()
	if err != nil {
		skip = err.Error()
	}
	if skip != "" {
		rep.skips = append(rep.skips, "Redisson rows skipped: "+skip)
		logf("Redisson rows skipped: %s", skip)
	} else {
		defer jb.close()
		br.jb = jb
		rep.versions = append(rep.versions, jb.version)
		logf("Redisson: %s", jb.version)
	}
	rep.versions = append(rep.versions, serverVersions(ss)...)
	br.redisCost = newRedisCost(ss.srv.Redis)
	defer br.redisCost.close()
	for _, l := range cfg.rows {
		if br.available(l) {
			br.rows = append(br.rows, l)
		}
	}
	rep.rows = br.rows
	if _, err := findIn(br.rows, rlockName); err != nil {
		return fmt.Errorf("the --backends run needs %q, the reference of every ratio", rlockName)
	}
	if err := br.startWorkers(); err != nil {
		return err
	}
	defer br.stopWorkers()

	for r := range cfg.runs {
		if cfg.part("a") {
			br.bursts(r, "a", br.measureA)
		}
		if cfg.part("b") {
			br.bursts(r, "b", br.measureB)
		}
		for _, cc := range bContendConfigs {
			if cfg.part("c") || cfg.part(cc.part) {
				br.bursts(r, "c:"+cc.label, func(l lib, key string) (map[string]float64, error) {
					return br.measureC(l, key, cc.goroutines, cc.procs)
				})
			}
		}
		if cfg.part("k") {
			br.breakdownBurst(r)
		}
	}
	if cfg.part("f") {
		ft := newFailTimes(cfg.failLease)
		rep.failTimes = ft
		var frows []lib
		for _, l := range contendRows(br.rows) {
			if !l.contendedOnly {
				frows = append(frows, l)
			}
		}
		for r := range cfg.failRuns {
			for _, sc := range scenarios {
				logf("(f) run %d: %s, %d rows at once", r+1, sc, len(frows))
				outs := runFailure(sc, frows, ss, br.jb, ft, br.id+":"+strconv.Itoa(r))
				for _, o := range outs {
					logf("(f) %-14s %-20s %s", sc, o.Row, o.describe(ft))
				}
				rep.failures = append(rep.failures, outs...)
			}
		}
	}
	rep.took = time.Since(began)
	md := rep.markdown()
	if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	if err := rep.plotPNG(cfg.plot); err != nil {
		return err
	}
	logf("wrote %s and %s in %v", cfg.out, cfg.plot, rep.took.Round(time.Second))
	return nil
}

// available reports whether row l can run here, and records why not.
func (br *backendRun) available(l lib) bool {
	why := ""
	switch l.server() {
	case "redisson":
		if br.jb == nil {
			return false // one line for both Redisson rows, already written
		}
	case "mysql":
		if br.ss.srv.MySQL == "" {
			why = "no MariaDB server"
		}
	case "zk":
		if br.ss.srv.ZK == "" {
			why = "no ZooKeeper server"
		}
	case "etcd":
		if br.ss.srv.Etcd == "" {
			why = "no etcd server"
		}
	}
	if why != "" {
		logf("%s skipped: %s", l.name, why)
		return false
	}
	return true
}

func findIn(rows []lib, name string) (lib, error) {
	for _, l := range rows {
		if l.name == name {
			return l, nil
		}
	}
	return lib{}, fmt.Errorf("%q not selected", name)
}

// startWorkers starts the Java worker of the in-process workloads and the
// workers of (c) in processes.
func (br *backendRun) startWorkers() error {
	hasJava := slices.ContainsFunc(br.rows, func(l lib) bool { return l.java != "" })
	procs := br.cfg.contendProcesses
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := func(f func() error) {
		wg.Go(func() {
			if err := f(); err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		})
	}
	br.gProc = make([]*worker, procs)
	if hasJava {
		br.jProc = make([]*worker, procs)
		start(func() (err error) {
			br.jIn, err = br.jb.start("Redisson bench", br.ss.srv.Redis, 0)
			return err
		})
	}
	for i := range procs {
		start(func() (err error) {
			br.gProc[i], err = startGoWorker("Go worker "+strconv.Itoa(i), br.ss.srv, 0)
			return err
		})
		if hasJava {
			start(func() (err error) {
				br.jProc[i], err = br.jb.start("Redisson worker "+strconv.Itoa(i), br.ss.srv.Redis, 0)
				return err
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if hasJava {
		br.warmUpJava()
	}
	return nil
}

// warmUpJava runs every Java worker's workloads for a few seconds, so that
// class loading and the JIT do not count in the first bursts.
func (br *backendRun) warmUpJava() {
	t := time.Now()
	var ignore map[string]any
	w := "bench:warm:" + br.id
	for _, kind := range []string{"lock", "fair"} {
		_ = br.jIn.do(time.Minute, &ignore, "a", kind, w+":a:"+kind, 3000, int64(time.Second))
		_ = br.jIn.do(time.Minute, &ignore, "b", kind, w+":b:"+kind, br.cfg.bWorkers, int64(300*time.Millisecond), int64(500*time.Millisecond))
		start := time.Now().Add(300 * time.Millisecond)
		_ = br.jIn.do(time.Minute, &ignore, "c", kind, w+":c:"+kind, 16, 0, int64(time.Millisecond), 0, start.UnixNano(), start.Add(500*time.Millisecond).UnixNano())
		var wg sync.WaitGroup
		for i, jw := range br.jProc {
			wg.Go(func() {
				_ = jw.do(time.Minute, &ignore, "a", kind, w+":p"+strconv.Itoa(i)+":"+kind, 2000, int64(500*time.Millisecond))
			})
		}
		wg.Wait()
	}
	logf("Java workers warmed up in %v", time.Since(t).Round(time.Millisecond))
}

func (br *backendRun) stopWorkers() {
	all := append(append([]*worker{br.jIn}, br.jProc...), br.gProc...)
	for _, w := range all {
		if w != nil {
			w.close()
		}
	}
}

// bursts runs cfg.bursts (cfg.cBursts for (c)) bursts of part in run r
// (runBursts: every row once per burst, in an order rotated by one row from
// burst to burst); each figure's ratio to goredisson RLock's in the same
// burst is taken when the report is written.
func (br *backendRun) bursts(r int, part string, measure func(l lib, key string) (map[string]float64, error)) {
	rows := contendRows(br.rows)
	if part == "a" || part == "b" {
		rows = slices.DeleteFunc(slices.Clone(br.rows), func(l lib) bool { return l.contendedOnly })
	}
	n := br.cfg.bursts
	if strings.HasPrefix(part, "c:") {
		n = br.cfg.cBursts
	}
	runBursts(&br.rep.store, burstPlan[lib]{
		part: part, run: r, n: n, rows: rows, name: libName,
		measure: func(l lib, b int) (map[string]float64, error) {
			rt := time.Now()
			key := "bench:" + keyPart(part) + ":" + br.id + ":" + strconv.Itoa(r) + ":" + strconv.Itoa(b) + ":" + slug(l.name)
			f, err := measure(l, key)
			if err == nil && verbose {
				logf("    (%s) %s: %v", part, l.name, time.Since(rt).Round(time.Millisecond))
			}
			return f, err
		},
		fail: func(l lib, err error) { br.rep.fail(part, l.name, r, err) },
		done: func(b int, f figures, order []lib, took time.Duration) {
			logf("(%s) run %d burst %d: %d rows in %v; %s", part, r+1, b+1, len(order), took.Round(time.Millisecond), burstLine(f, part))
		},
	})
}

// libName is a lib's row name.
func libName(l lib) string { return l.name }

// keyPart turns a part's label into characters fit for a lock key (no
// spaces: keys travel in the workers' space-separated commands).
func keyPart(part string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(part))
}

// burstLine summarises a burst for the log: each row's main figure.
func burstLine(figures figures, part string) string {
	metric := map[string]string{"a": "p50", "b": "pairs/s"}[part]
	if metric == "" {
		metric = "gap p50"
	}
	var parts []string
	for _, name := range backendRowOrder {
		if f, ok := figures[name]; ok {
			v := f[metric]
			s := fNum(v)
			if strings.Contains(metric, "p50") {
				s = fDur(v)
			}
			parts = append(parts, name+" "+s)
		}
	}
	return metric + ": " + strings.Join(parts, ", ")
}

// --- the workloads of one row

func (br *backendRun) measureA(l lib, key string) (map[string]float64, error) {
	if l.java == "" {
		res, err := uncontendedOn(l, br.ss.srv, br.cfg.pairs, br.cfg.aMax, key, br.costOf(l))
		if err != nil {
			return nil, err
		}
		return merged(map[string]float64{"pairs/s": res.PerSec, "p50": float64(res.P50), "p99": float64(res.P99)}, res.Server), nil
	}
	var r struct {
		Lat []int64
		Err string
	}
	cost := br.costOf(l)
	began := beginCost(cost)
	if err := br.jIn.do(2*time.Minute, &r, "a", l.java, key, br.cfg.pairs, int64(br.cfg.aMax)); err != nil {
		return nil, err
	}
	if r.Err != "" {
		return nil, fmt.Errorf("%s", r.Err)
	}
	lat := make([]time.Duration, 0, len(r.Lat))
	var total time.Duration
	for _, v := range r.Lat {
		lat = append(lat, time.Duration(v))
		total += time.Duration(v)
	}
	f := map[string]float64{"pairs/s": float64(len(lat)) / total.Seconds(), "p50": float64(pct(lat, 50)), "p99": float64(pct(lat, 99))}
	return merged(f, perScriptPair(endCost(l.name, cost, began, 1))), nil
}

func (br *backendRun) measureB(l lib, key string) (map[string]float64, error) {
	if l.java == "" {
		v, srv, err := parallelOwnKeysOn(l, br.ss.srv, br.cfg.bWorkers, br.cfg.bWarm, br.cfg.bFor, key, br.costOf(l))
		if err != nil {
			return nil, err
		}
		return merged(map[string]float64{"pairs/s": v}, srv), nil
	}
	var r struct {
		Pairs int64
		Err   string
	}
	cost := br.costOf(l)
	began := beginCost(cost)
	if err := br.jIn.do(2*time.Minute, &r, "b", l.java, key, br.cfg.bWorkers, int64(br.cfg.bWarm), int64(br.cfg.bFor)); err != nil {
		return nil, err
	}
	if r.Err != "" {
		return nil, fmt.Errorf("%s", r.Err)
	}
	f := map[string]float64{"pairs/s": float64(r.Pairs) / br.cfg.bFor.Seconds()}
	return merged(f, perScriptPair(endCost(l.name, cost, began, 1))), nil
}

// costOf returns the sampler of row l's server: Redis's INFO for the Redis
// rows (Redisson's too), the server process's CPU for the others.
func (br *backendRun) costOf(l lib) costSampler {
	switch l.server() {
	case "redis", "redisson":
		return br.redisCost
	}
	if pid := br.ss.server(l.serverProc()).Pid(); pid > 0 {
		return &procCost{pid: pid}
	}
	return nil
}

// measureC runs (c) on one key: goroutines owners in this process (or
// threads of the in-process Java worker), or one in each of procs worker
// processes.
func (br *backendRun) measureC(l lib, key string, goroutines, procs int) (map[string]float64, error) {
	hold, d := br.cfg.contendHold, br.cfg.cFor
	lead := 200 * time.Millisecond
	if procs > 0 || l.java != "" || l.server() != "redis" {
		lead = 500 * time.Millisecond // workers open the row's client first
	}
	start := time.Now().Add(lead)
	end := start.Add(d)
	pid := br.ss.server(l.serverProc()).Pid()
	cpu0 := procCPU(pid)
	var parts []workerResult
	workers := goroutines
	job := func(w *worker, n, first int) (workerResult, error) {
		var r workerResult
		arg := slug(l.name)
		if l.java != "" {
			arg = l.java
		}
		err := w.do(d+lead+time.Minute, &r, "c", arg, key, n, first, int64(hold), 0, start.UnixNano(), end.UnixNano())
		return r, err
	}
	switch {
	case procs > 0:
		workers = procs
		pool := br.gProc
		if l.java != "" {
			pool = br.jProc
		}
		parts = make([]workerResult, procs)
		errs := make([]error, procs)
		var wg sync.WaitGroup
		for i := range procs {
			wg.Go(func() { parts[i], errs[i] = job(pool[i], 1, i) })
		}
		wg.Wait()
		if err := firstError(errs); err != nil {
			return nil, err
		}
	case l.java != "":
		r, err := job(br.jIn, goroutines, 0)
		if err != nil {
			return nil, err
		}
		parts = []workerResult{r}
	default:
		parts = []workerResult{contend(contendSpec{Lib: l.name, Addr: br.ss.srv.Redis, Srv: br.ss.srv, Key: key, Workers: goroutines,
			Hold: hold, Start: start.UnixNano(), End: end.UnixNano()})}
	}
	cpu := (procCPU(pid) - cpu0) / time.Since(start).Seconds()
	res, err := summarize(l.name, parts, workers, hold, d)
	if err != nil {
		return nil, err
	}
	if res.Err != "" {
		br.rep.note("c", l.name, 0, res.Err)
	}
	return map[string]float64{
		"acq/s": res.AcqPerSec, "gap p50": float64(res.GapP50), "gap p99": float64(res.GapP99),
		"wait p99": float64(res.WaitP99), "fairness": res.Fairness, "retake": res.Retake,
		"server cpu": cpu, "errors": float64(res.Errors), "overlaps": float64(res.Overlaps),
	}, nil
}

func firstError(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// breakdownRows are the rows of the breakdown table: every lock row
// (rebuild lock), goredisson's two-level guard and no guard.
func (br *backendRun) breakdownRows() []lib {
	var rows []lib
	for _, l := range contendRows(br.rows) {
		if !l.contendedOnly {
			rows = append(rows, l)
		}
	}
	return append(rows, lib{name: twoLevelName}, lib{name: noGuardName})
}

// breakdownBurst runs the cache-breakdown scenario once for every row of
// the breakdown table, in an order rotated by run: first a warm-up round
// of 64 requests on another key, then the measured round.
func (br *backendRun) breakdownBurst(r int) {
	runBursts(&br.rep.store, burstPlan[lib]{
		part: "k", run: r, n: 1, rows: br.breakdownRows(), name: libName,
		measure: func(l lib, _ int) (map[string]float64, error) {
			key := "bench:k:" + br.id + ":" + strconv.Itoa(r) + ":" + slug(l.name)
			if _, err := br.breakdownOne(l, key+":warm", 64); err != nil {
				return nil, err
			}
			res, err := br.breakdownOne(l, key, br.cfg.kRequests)
			if err != nil {
				return nil, err
			}
			p50, p99 := res.summary()
			if res.Err != "" {
				br.rep.note("k", l.name, r, res.Err)
			}
			logf("(k) run %d %-26s %s", r+1, l.name, res)
			return map[string]float64{"loads": float64(res.Loads), "p50": float64(p50), "p99": float64(p99),
				"errors": float64(res.Errors), "stale": float64(res.Stale)}, nil
		},
		fail: func(l lib, err error) { br.rep.fail("k", l.name, r, err) },
	})
}

func (br *backendRun) breakdownOne(l lib, key string, requests int) (breakdownResult, error) {
	if l.java != "" {
		var res breakdownResult
		start := time.Now().Add(time.Second + time.Duration(requests)*time.Millisecond)
		err := br.jIn.do(3*time.Minute, &res, "k", l.java, key, requests, int64(br.cfg.kLoad), start.UnixNano())
		return res, err
	}
	strategy := "lock"
	if l.name == twoLevelName || l.name == noGuardName {
		strategy = l.name
		l, _ = findLib(rlockName)
	}
	return breakdownGo(l, br.ss.srv, strategy, requests, br.cfg.kLoad, key)
}

// procCPU returns the user+system CPU seconds of process pid (all its
// threads) from /proc; NaN when it cannot be read.
func procCPU(pid int) float64 {
	if pid == 0 {
		return math.NaN()
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return math.NaN()
	}
	// Fields after the command name (in parentheses): state is field 3,
	// utime 14, stime 15, in clock ticks (100 per second on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return math.NaN()
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}
