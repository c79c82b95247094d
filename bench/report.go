package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// report collects the default run's figures and renders them.
type report struct {
	what, redisVersion string
	cfg                config
	started            time.Time
	took               time.Duration
	pingP50, pingP99   []float64
	setRPS             []float64 // redis-benchmark SET requests per second, one per run
	benchLines         []string  // its summary lines
	// store holds every burst's figures (bursts.go): part -> run ->
	// bursts -> library -> metric.
	store    burstStore
	errNotes map[string][]string // "part|lib" -> the first error of each run that had one
	watchdog []watchdogResult
	// baseline is the record of an earlier run (--baseline), nil without.
	baseline *burstStore
	// clusterWhat names the Cluster part's servers; clusterSkip says why
	// it has no figures.
	clusterWhat, clusterSkip string
}

// fail records that a measurement of lib failed (it has no figure in that
// burst) and logs it.
func (r *report) fail(part, lib string, run int, err error) {
	logf("(%s) %s run %d failed: %v", part, lib, run+1, err)
	r.note(part, lib, run, "failed, no figure: "+err.Error())
}

// note records an error of a run, printed under the part's table.
func (r *report) note(part, lib string, run int, msg string) {
	if r.errNotes == nil {
		r.errNotes = map[string][]string{}
	}
	k := part + "|" + lib
	r.errNotes[k] = append(r.errNotes[k], fmt.Sprintf("run %d: %s", run+1, msg))
}

// notes renders the errors of part, one line per library.
func (r *report) notes(b *strings.Builder, parts ...string) {
	for _, p := range parts {
		for _, l := range libs {
			if ns := r.errNotes[p+"|"+l.name]; len(ns) > 0 {
				name := "(" + p + ")"
				if cfg, ok := strings.CutPrefix(p, "c:"); ok {
					name = "(c) " + cfg
				}
				fmt.Fprintf(b, "\nErrors of %s in %s: %s.\n", l.name, name, strings.Join(ns, "; "))
			}
		}
	}
}

// med returns the median, min and max of vs; the median of an even
// number of values is the mean of the two middle ones (it was the upper
// one, which favoured an "at least" target over six bursts).
func med(vs []float64) (m, lo, hi float64) {
	if len(vs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m = s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return m, s[0], s[len(s)-1]
}

// median returns the median of the run medians of lib's metric in part.
func (r *report) median(part, lib, metric string) float64 {
	return medianOfRuns(r.store.values(part, lib, metric))
}

// cell renders lib's metric in part: the median of the run medians
// (min–max of the runs).
func (r *report) cell(part, lib, metric string, f format) string {
	return cellOf(r.store.values(part, lib, metric), f)
}

// ratio renders lib's metric over ref's in the same burst, as cell does.
func (r *report) ratio(part, lib, ref, metric string) string {
	if lib == ref {
		if r.store.has(part, lib) {
			return "1"
		}
		return "-"
	}
	return cellOf(r.store.ratios(part, lib, ref, metric), fTimes)
}

type format func(float64) string

func fNum(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsNaN(v):
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fDur(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	d := time.Duration(v)
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func fTimes(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fNum(v) + "×"
}

func fPct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", v*100)
}

func fKB(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f KB", v/1000)
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# goredisson beside its peers\n\n")
	fmt.Fprintf(&b, "Run %s against a %s (%s); the whole run took %v. "+
		"Every part is measured in bursts: a burst measures every library once, one right after another, in an order rotated by one library from burst to burst, "+
		"so that no library always meets the machine first. A run has %d bursts of (a) and (b) and %d of (c) (one of (m) and (w)); "+
		"each figure is the median of its run's bursts, and the tables give the median of %d runs with the min–max of the runs in brackets. "+
		"A ÷ column divides a library's figure by the named library's **in the same burst** (for rates and times alike: above 1 is a larger figure). "+
		"The targets at the end take the median of every burst's ratio, with the min–max of the bursts and their number.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), r.what, r.redisVersion, r.took.Round(time.Second), r.cfg.bursts, r.cfg.cBursts, r.cfg.runs)
	r.limitSection(&b)
	fmt.Fprintf(&b, "\n## Libraries\n\n| Library | Settings |\n|---|---|\n")
	for _, l := range libs {
		fmt.Fprintf(&b, "| %s | %s |\n", l.name, l.settings)
	}
	if r.cfg.part("a") || r.cfg.part("b") {
		r.abTable(&b)
		r.serverTable(&b)
	}
	if r.cfg.part("a") || r.cfg.part("m") {
		r.clientTable(&b)
	}
	if r.cfg.part("c") {
		r.contendTables(&b)
	}
	if r.cfg.part("w") {
		r.waiterTable(&b)
	}
	if r.cfg.part("cl") {
		r.clusterSection(&b)
	}
	r.watchdogTable(&b)
	b.WriteString(r.targets())
	return b.String()
}

func (r *report) limitSection(b *strings.Builder) {
	ping, pingLo, pingHi := med(r.pingP50)
	ping99, _, _ := med(r.pingP99)
	fmt.Fprintf(b, "## The physical limit\n\nPING round trip p50 %s (%s–%s), p99 %s.\n", fDur(ping), fDur(pingLo), fDur(pingHi), fDur(ping99))
	if len(r.setRPS) > 0 {
		m, lo, hi := med(r.setRPS)
		fmt.Fprintf(b, "\nredis-benchmark SET (%d connections, no pipelining): %s (%s–%s) requests/s, so at most %s lock+unlock pairs/s at two commands a pair (the (b) limit).\n",
			benchClients, fNum(m), fNum(lo), fNum(hi), fNum(m/2))
		for _, l := range r.benchLines {
			fmt.Fprintf(b, "\n    redis-benchmark: %s", l)
		}
		b.WriteString("\n")
	}
}

// abTable renders (a) and (b): the client's side.
func (r *report) abTable(b *strings.Builder) {
	ping, _, _ := med(r.pingP50)
	fmt.Fprintf(b, "\n## (a) Uncontended and (b) 64 goroutines on keys of their own\n\n")
	fmt.Fprintf(b, "(a): one goroutine, %d lock+unlock pairs per burst on one key (a tenth more as warm-up). (b): 64 goroutines, each on a key of its own, pairs counted for %v per burst after 200 ms of warm-up.\n\n",
		r.cfg.pairs, r.cfg.parallelFor)
	fmt.Fprintf(b, "| Library | (a) pairs/s | (a) p50 | p50 ÷ RLock | p50 ÷ naive | (a) p99 | (a) p50 / PING | (b) pairs/s | pairs/s ÷ RLock | (b) share of SET rps / 2 |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range pairRows() {
		if l.serverOnly {
			fmt.Fprintf(b, "| %s | — | — | | | — | | — | | |\n", l.name)
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.name,
			r.cell("a", l.name, "pairs/s", fNum), r.cell("a", l.name, "p50", fDur),
			r.ratio("a", l.name, rlockName, "p50"), r.ratio("a", l.name, naiveName, "p50"),
			r.cell("a", l.name, "p99", fDur), fTimes(r.median("a", l.name, "p50")/ping),
			r.cell("b", l.name, "pairs/s", fNum), r.ratio("b", l.name, rlockName, "pairs/s"), r.cell("b", l.name, "share", fPct))
	}
	r.notes(b, "a", "b")
}

// serverTable renders what (a) and (b) cost Redis.
func (r *report) serverTable(b *strings.Builder) {
	fmt.Fprintf(b, "\n## What a pair costs Redis, in (a) and (b)\n\n")
	fmt.Fprintf(b, "Sampled around every library's measured window in every burst: *Redis CPU µs/pair* is INFO cpu's used_cpu_sys + used_cpu_user after the window less before, over its pairs "+
		"(all of Redis's work: reading, parsing, running, replying); *Redis µs per call* is INFO commandstats' usec_per_call of each command the library sends itself, "+
		"reset by CONFIG RESETSTAT at the window's start, with its calls per pair (a script's time includes the commands it runs). "+
		"%s runs Redisson's own acquire and release scripts on Redisson's layout (no goredisson addition), with its unlock latch and the latch's DEL: what a pair of the Java client costs Redis.\n\n", redissonScriptsName)
	fmt.Fprintf(b, "| Library | (a) Redis CPU µs/pair | ÷ RLock | (a) Redis µs per call | (b) Redis CPU µs/pair | ÷ RLock | ÷ Redisson's scripts | (b) Redis µs per call |\n|---|---|---|---|---|---|---|---|\n")
	for _, l := range pairRows() {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", l.name,
			r.cell("a", l.name, mSrvCPU, fNum), r.ratio("a", l.name, rlockName, mSrvCPU), callsCell(&r.store, "a", l),
			r.cell("b", l.name, mSrvCPU, fNum), r.ratio("b", l.name, rlockName, mSrvCPU), r.ratio("b", l.name, redissonScriptsName, mSrvCPU),
			callsCell(&r.store, "b", l))
	}
}

// clientTable renders the client's allocations and CPU per pair, and
// Redis's memory per held lock.
func (r *report) clientTable(b *strings.Builder) {
	fmt.Fprintf(b, "\n## Client allocations and CPU per pair, Redis memory per held lock\n\n")
	fmt.Fprintf(b, "Allocations and client CPU: of the process per lock+unlock pair over the (a) loop (runtime.MemStats, getrusage). Redis memory: %d locks held at once (used_memory less client buffers), per lock; and what is left per lock once all are released.\n\n", r.cfg.memLocks)
	fmt.Fprintf(b, "| Library | allocs/pair | bytes/pair | client CPU µs/pair | ÷ redislock | Redis bytes per held lock | Redis bytes per lock left after unlock |\n|---|---|---|---|---|---|---|\n")
	for _, l := range pairRows() {
		if l.serverOnly {
			fmt.Fprintf(b, "| %s | — | — | — | | %s | %s |\n", l.name, r.cell("m", l.name, "per lock", fNum), r.cell("m", l.name, "left", fNum))
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", l.name,
			r.cell("a", l.name, "allocs", fNum), r.cell("a", l.name, "bytes", fNum), r.cell("a", l.name, "cpu", fNum), r.ratio("a", l.name, "redislock", "cpu"),
			r.cell("m", l.name, "per lock", fNum), r.cell("m", l.name, "left", fNum))
	}
	r.notes(b, "m")
}

func (r *report) contendTables(b *strings.Builder) {
	for _, cc := range contendConfigs {
		p := "c:" + cc.label
		fmt.Fprintf(b, "\n## (c) One key, 1 ms hold, %v: %s\n\n", r.cfg.contendFor, cc.label)
		fmt.Fprintf(b, "| Library | acq/s | ÷ RLock | handoff gap p50 | gap p99 | re-taken by releaser | wait p99 | wait max | fairness max/min | cmds/acq | Redis CPU | Redis CPU µs/acq | errors | overlaps |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, l := range lockRows() {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.name,
				r.cell(p, l.name, "acq/s", fNum), r.ratio(p, l.name, rlockName, "acq/s"), r.cell(p, l.name, "gap p50", fDur), r.cell(p, l.name, "gap p99", fDur),
				r.cell(p, l.name, "retake", fPct), r.cell(p, l.name, "wait p99", fDur), r.cell(p, l.name, "wait max", fDur),
				r.cell(p, l.name, "fairness", fNum), r.cell(p, l.name, "cmds/acq", fNum), r.cell(p, l.name, "redis cpu", fPct),
				r.cell(p, l.name, "redis cpu/acq", fNum), r.cell(p, l.name, "errors", fNum), r.cell(p, l.name, "overlaps", fNum))
		}
		r.notes(b, p)
	}
}

func (r *report) waiterTable(b *strings.Builder) {
	fmt.Fprintf(b, "\n## (w) Client memory per waiter: %d goroutines parked in Lock\n\n", r.cfg.waiters)
	fmt.Fprintf(b, "Each library in a process of its own (`bench waitmem`), on a private redis-server, on locks held elsewhere: the process's HeapAlloc + StackInuse growth per waiter "+
		"(after two GCs, once Redis has seen no command for a second), each waiter with a lock handle of its own; one burst per run.\n\n")
	fmt.Fprintf(b, "| Library | all on one name | heap + stack | each on a name of its own | heap + stack |\n|---|---|---|---|---|\n")
	for _, name := range waitmemRows {
		if _, err := findSelected(name); err != nil {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s + %s | %s | %s + %s |\n", name,
			r.cell("w:one", name, "B/waiter", fKB), r.cell("w:one", name, "heap", fKB), r.cell("w:one", name, "stack", fKB),
			r.cell("w:many", name, "B/waiter", fKB), r.cell("w:many", name, "heap", fKB), r.cell("w:many", name, "stack", fKB))
	}
	r.notes(b, "w:one", "w:many")
}

func (r *report) clusterSection(b *strings.Builder) {
	fmt.Fprintf(b, "\n## (cl) (b) on a Redis Cluster of 3 masters beside one node\n\n")
	if r.clusterSkip != "" {
		fmt.Fprintf(b, "Not measured: %s.\n", r.clusterSkip)
		return
	}
	fmt.Fprintf(b, "As `--cluster` (cluster.go): %s, one node and a Cluster of 3 masters (no replicas) started for this part; %d goroutines on keys of their own, %v per burst; "+
		"the medians, min–max and number are over every burst, and a Cluster row is divided by its one-node row of the same burst.\n", r.clusterWhat, clusterGoroutines, r.cfg.parallelFor)
	clusterTable(b, &r.store, "cl")
}

func (r *report) watchdogTable(b *strings.Builder) {
	if len(r.watchdog) > 0 {
		fmt.Fprintf(b, "\n## (d) Watchdog: %d goredisson locks held for %v in one Client\n\n", r.watchdog[0].Locks, r.watchdog[0].Window)
		fmt.Fprintf(b, "| Run | renew ticks | renew round trips | Redis commands | round trips per tick per 1,000 locks | client CPU |\n|---|---|---|---|---|---|\n")
		for i, w := range r.watchdog {
			fmt.Fprintf(b, "| %d | %d | %d | %d | %.2f | %v |\n", i+1, w.Ticks, w.Trips, w.Cmds, w.TripsPerTickPerK, w.ClientCPU.Round(time.Millisecond))
		}
		fmt.Fprintf(b, "\nredsync and redislock have no watchdog: keeping %d locks alive costs their caller one Extend/Refresh round trip per lock per refresh. rueidislock extends each lock by itself, one script call per key every KeyValidity / 2.\n", r.watchdog[0].Locks)
	}
	r.notes(b, "d")
}
