package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// The default run: the Redis libraries in (a), (b), (m), (c), the waiter
// memory (w), (b) on a Cluster beside one node (cl) and goredisson's
// watchdog (d), each part measured in bursts (bursts.go): every library once
// per burst, in an order rotated from burst to burst, so that no library is
// always the first (or the last) to meet the machine's state; and the
// targets of issue 41 from the per-burst ratios.

// defaultRun holds what the default run started.
type defaultRun struct {
	cfg   config
	addr  string
	rep   *report
	cost  *redisCost
	id    string
	limit []float64 // (b)'s physical limit of each run (NaN: unknown)
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
	if cfg.baseline != "" {
		base, err := readRecord(cfg.baseline)
		if err != nil {
			return fmt.Errorf("--baseline: %w", err)
		}
		rep.baseline = base
	}
	logf("%s (%s); %d runs, %d bursts of (a) and (b) per run", what, rep.redisVersion, cfg.runs, cfg.bursts)
	d := &defaultRun{cfg: cfg, addr: addr, rep: rep, cost: newRedisCost(addr), id: strconv.FormatInt(time.Now().UnixNano(), 36)}
	defer d.cost.close()
	for r := range cfg.runs {
		if err := d.measureRun(r); err != nil {
			return err
		}
	}
	if cfg.part("c") {
		d.contendAll()
	}
	if cfg.part("w") {
		d.waiters()
	}
	if cfg.part("cl") {
		d.cluster()
	}
	if cfg.part("d") && cfg.wdFor > 0 {
		d.watchdog()
	}
	rep.took = time.Since(rep.started)
	return d.write()
}

// write writes the report, the record of every burst and the plot.
func (d *defaultRun) write() error {
	md := d.rep.markdown()
	if err := os.WriteFile(d.cfg.out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	js := recordPath(d.cfg.out)
	if err := writeRecord(js, d.rep); err != nil {
		return err
	}
	if d.cfg.part("c") {
		if err := d.rep.plotPNG(d.cfg.plot); err != nil {
			return err
		}
		logf("wrote %s, %s and %s in %v", d.cfg.out, js, d.cfg.plot, d.rep.took.Round(time.Second))
		return nil
	}
	logf("wrote %s and %s in %v", d.cfg.out, js, d.rep.took.Round(time.Second))
	return nil
}

// pairRows are the libraries of (a), (b) and (m).
func pairRows() []lib {
	return slices.DeleteFunc(slices.Clone(libs), func(l lib) bool { return l.contendedOnly })
}

// lockRows are the libraries of (c).
func lockRows() []lib { return contendRows(libs) }

// bursts runs n bursts of part in run r over rows; measure gets a key of
// the burst's own.
func (d *defaultRun) bursts(part string, r, n int, rows []lib, measure func(l lib, key string) (map[string]float64, error)) {
	runBursts(&d.rep.store, burstPlan[lib]{
		part: part, run: r, n: n, rows: rows, name: libName,
		measure: func(l lib, b int) (map[string]float64, error) {
			return measure(l, d.id+":"+keyPart(part)+":"+strconv.Itoa(r)+":"+strconv.Itoa(b)+":"+slug(l.name))
		},
		fail: func(l lib, err error) { d.rep.fail(part, l.name, r, err) },
		done: func(b int, _ figures, order []lib, took time.Duration) {
			logf("(%s) run %d burst %d: %d libraries in %v, first %s", part, r+1, b+1, len(order), took.Round(time.Millisecond), order[0].name)
		},
	})
}

// measureRun measures the physical limit, (a), (b) and (m) of run r.
func (d *defaultRun) measureRun(r int) error {
	cfg, rep := d.cfg, d.rep
	p50, p99, err := pingRTT(d.addr, 5000)
	if err != nil {
		return err
	}
	rep.pingP50 = append(rep.pingP50, float64(p50))
	rep.pingP99 = append(rep.pingP99, float64(p99))
	logf("PING run %d: p50 %v p99 %v", r+1, p50, p99)
	limit := math.NaN() // (b)'s physical limit: SET rps / 2
	if cfg.part("b") {
		if rps, line, err := setRPS(d.addr); err != nil {
			logf("no physical limit for (b): %v", err)
		} else {
			limit = rps / 2
			rep.setRPS = append(rep.setRPS, rps)
			rep.benchLines = append(rep.benchLines, line)
			logf("redis-benchmark run %d: %s", r+1, line)
		}
	}
	d.limit = append(d.limit, limit)
	if cfg.part("a") {
		d.bursts("a", r, cfg.bursts, pairRows(), d.measureA)
	}
	if cfg.part("b") {
		d.bursts("b", r, cfg.bursts, pairRows(), func(l lib, key string) (map[string]float64, error) {
			return d.measureB(l, key, limit)
		})
	}
	if cfg.part("m") {
		d.bursts("m", r, 1, pairRows(), d.measureM)
	}
	return nil
}

func (d *defaultRun) measureA(l lib, key string) (map[string]float64, error) {
	res, err := uncontendedOn(l, servers{Redis: d.addr}, d.cfg.pairs, 0, key, d.cost)
	if err != nil {
		return nil, err
	}
	logf("(a) %-38s %.0f pairs/s p50 %v p99 %v, %.1f allocs %.0f B %.1f µs CPU per pair; Redis %.1f µs CPU per pair: %s",
		l.name, res.PerSec, res.P50, res.P99, res.Allocs, res.Bytes, res.CPU, res.Server[mSrvCPU], commandsSeen(res.Server))
	return merged(map[string]float64{"pairs/s": res.PerSec, "p50": float64(res.P50), "p99": float64(res.P99),
		"allocs": res.Allocs, "bytes": res.Bytes, "cpu": res.CPU}, res.Server), nil
}

// measureB measures (b); limit is the run's physical limit (NaN: unknown).
func (d *defaultRun) measureB(l lib, key string, limit float64) (map[string]float64, error) {
	perSec, srv, err := parallelOwnKeysOn(l, servers{Redis: d.addr}, 64, 200*time.Millisecond, d.cfg.parallelFor, key, d.cost)
	if err != nil {
		return nil, err
	}
	f := map[string]float64{"pairs/s": perSec}
	if !math.IsNaN(limit) {
		f["share"] = perSec / limit
	}
	logf("(b) %-38s %.0f pairs/s, %.0f%% of SET rps / 2; Redis %.1f µs CPU per pair: %s", l.name, perSec, 100*perSec/limit, srv[mSrvCPU], commandsSeen(srv))
	return merged(f, srv), nil
}

func (d *defaultRun) measureM(l lib, key string) (map[string]float64, error) {
	res, err := memoryOnOwnServer(l, d.cfg, d.addr, key)
	if err != nil {
		return nil, err
	}
	logf("(m) %-38s %.0f B per held lock, %.0f B per lock left after unlock", l.name, res.PerLock, res.LeftPerLock)
	return map[string]float64{"per lock": res.PerLock, "left": res.LeftPerLock}, nil
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

// contendAll runs (c): every configuration, run and burst.
func (d *defaultRun) contendAll() {
	for _, cc := range contendConfigs {
		p := "c:" + cc.label
		for r := range d.cfg.runs {
			d.bursts(p, r, d.cfg.cBursts, lockRows(), func(l lib, key string) (map[string]float64, error) {
				res, err := contended(l, d.addr, cc.goroutines, cc.procs, time.Millisecond, cc.think, d.cfg.contendFor, key)
				if err != nil {
					return nil, err
				}
				if res.Err != "" {
					d.rep.note(p, l.name, r, res.Err)
				}
				logf("(c) %-26s %-20s %.0f acq/s gap p50 %v p99 %v retake %.2f wait p99 %v max %v fair %.2f cmds/acq %.1f redis cpu %.2f (%.1f µs/acq) errors %d overlaps %d %s",
					cc.label, l.name, res.AcqPerSec, res.GapP50, res.GapP99, res.Retake, res.WaitP99, res.WaitMax, res.Fairness, res.CmdsPerAcq, res.RedisCPU, res.RedisCPUPerAcq, res.Errors, res.Overlaps, res.Err)
				return map[string]float64{
					"acq/s": res.AcqPerSec, "gap p50": float64(res.GapP50), "gap p99": float64(res.GapP99), "retake": res.Retake,
					"wait p99": float64(res.WaitP99), "wait max": float64(res.WaitMax), "fairness": res.Fairness,
					"cmds/acq": res.CmdsPerAcq, "redis cpu": res.RedisCPU, "redis cpu/acq": res.RedisCPUPerAcq,
					"errors": float64(res.Errors), "overlaps": float64(res.Overlaps),
				}, nil
			})
		}
	}
}

// waitNames are part w's two cases: every waiter on one name, or each on
// a name of its own.
var waitNames = []struct {
	part  string
	names func(n int) int
}{
	{"w:one", func(int) int { return 1 }},
	{"w:many", func(n int) int { return n }},
}

// waiters runs part w: each row in a process of its own, once per run and
// case, the rows' order rotated.
func (d *defaultRun) waiters() {
	var rows []lib
	for _, name := range waitmemRows {
		if l, err := findSelected(name); err == nil {
			rows = append(rows, l)
		}
	}
	for r := range d.cfg.runs {
		for _, wn := range waitNames {
			d.bursts(wn.part, r, 1, rows, func(l lib, key string) (map[string]float64, error) {
				f, err := waiterMemory(l.name, d.cfg.waiters, wn.names(d.cfg.waiters), d.cfg.addr, key)
				if err == nil {
					logf("(%s) %-20s %.0f B per waiter (heap %.0f + stack %.0f)", wn.part, l.name, f["B/waiter"], f["heap"], f["stack"])
				}
				return f, err
			})
		}
	}
}

// cluster runs part cl: (b) on a 3-master Cluster beside one node
// (cluster.go), as many bursts as (a) and (b) had in all.
func (d *defaultRun) cluster() {
	rounds := d.cfg.runs * d.cfg.bursts
	version, err := clusterBursts(&d.rep.store, "cl", rounds, d.cfg.parallelFor)
	if err != nil {
		d.rep.clusterSkip = err.Error()
		logf("(cl) no Cluster measurement: %v", err)
		return
	}
	d.rep.clusterWhat = version
}

// watchdog runs (d): goredisson only.
func (d *defaultRun) watchdog() {
	if _, err := findSelected(rlockName); err != nil {
		return
	}
	for r := range d.cfg.runs {
		res, err := watchdogCost(d.addr, d.cfg.wdLocks, d.cfg.wdFor, d.id+":"+strconv.Itoa(r))
		if err != nil {
			d.rep.fail("d", rlockName, r, err)
			continue
		}
		d.rep.watchdog = append(d.rep.watchdog, res)
		logf("(d) run %d: %d locks for %v: %d round trips, %d commands, %.2f trips/tick/1000 locks, client CPU %v",
			r+1, res.Locks, res.Window, res.Trips, res.Cmds, res.TripsPerTickPerK, res.ClientCPU)
	}
}
