package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// brep collects the figures of a --backends run and renders them.
type brep struct {
	cfg      bconfig
	started  time.Time
	took     time.Duration
	versions []string
	skips    []string
	rows     []lib
	// store holds every burst's figures; a ratio is a row's figure
	// over goredisson RLock's in the same burst.
	store     burstStore
	notes     map[string][]string // "part|row" -> messages
	failures  []failOutcome
	failTimes failTimes
}

func (r *brep) fail(part, row string, run int, err error) {
	logf("(%s) %s run %d failed: %v", part, row, run+1, err)
	r.note(part, row, run, "failed, no figure: "+err.Error())
}

func (r *brep) note(part, row string, run int, msg string) {
	if r.notes == nil {
		r.notes = map[string][]string{}
	}
	k := part + "|" + row
	if len(r.notes[k]) < 3 {
		r.notes[k] = append(r.notes[k], fmt.Sprintf("run %d: %s", run+1, shortErr(msg)))
	}
}

func (r *brep) cell(part, row, metric string, f format) string {
	return cellOf(r.store.values(part, row, metric), f)
}

func (r *brep) ratio(part, row, metric string) string {
	if row == rlockName {
		if len(pooled(r.store.values(part, row, metric))) == 0 {
			return "-"
		}
		return "1"
	}
	return cellOf(r.store.ratios(part, row, rlockName, metric), fTimes)
}

func (r *brep) rowNotes(b *strings.Builder, part string, rows []lib) {
	for _, l := range rows {
		if ns := r.notes[part+"|"+l.name]; len(ns) > 0 {
			fmt.Fprintf(b, "\n%s in (%s): %s.\n", l.name, part, strings.Join(ns, "; "))
		}
	}
}

// abTable renders (a) and (b): the client's figures.
func (r *brep) abTable(b *strings.Builder) {
	c := r.cfg
	fmt.Fprintf(b, "\n## (a) Uncontended and (b) %d goroutines on keys of their own\n\n", c.bWorkers)
	fmt.Fprintf(b, "(a): one owner, lock+unlock pairs on one key, %d pairs or %v per burst (a tenth more as warm-up). (b): %d owners (goroutines, Java threads), each on a key of its own, pairs counted for %v per burst after %v of warm-up.\n\n",
		c.pairs, c.aMax, c.bWorkers, c.bFor, c.bWarm)
	fmt.Fprintf(b, "| Row | (a) pairs/s | ÷ RLock | (a) p50 | ÷ RLock | (a) p99 | ÷ RLock | (b) pairs/s | ÷ RLock |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range r.rows {
		if l.contendedOnly {
			continue
		}
		if l.serverOnly {
			fmt.Fprintf(b, "| %s | — | | — | | — | | — | |\n", l.name)
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.name,
			r.cell("a", l.name, "pairs/s", fNum), r.ratio("a", l.name, "pairs/s"),
			r.cell("a", l.name, "p50", fDur), r.ratio("a", l.name, "p50"),
			r.cell("a", l.name, "p99", fDur), r.ratio("a", l.name, "p99"),
			r.cell("b", l.name, "pairs/s", fNum), r.ratio("b", l.name, "pairs/s"))
	}
	r.rowNotes(b, "a", r.rows)
	r.rowNotes(b, "b", r.rows)
}

// costTable renders what (a) and (b) cost the lock's server per pair.
func (r *brep) costTable(b *strings.Builder) {
	fmt.Fprintf(b, "\n## Server cost per pair in (a) and (b)\n\n")
	fmt.Fprintf(b, "Sampled around each row's measured window in every burst (servercost.go): for Redis, INFO cpu (used_cpu_sys + used_cpu_user) "+
		"before and after, over the pairs; and, reset by CONFIG RESETSTAT at the window's start, INFO commandstats: Redis's own µs per call "+
		"of each command the row sends itself (a script's includes the commands it runs), with its calls per pair. "+
		"For MariaDB, ZooKeeper and etcd, their process's CPU from /proc (10 ms ticks: coarse for a short window). "+
		"The real Redisson's worker measures inside the JVM: its window is the worker's whole job, warm-up included, and its pairs are Redis's EVALSHA and EVAL calls over 2.\n\n")
	fmt.Fprintf(b, "| Row | (a) server CPU µs/pair | ÷ RLock | (a) Redis µs per call | (b) server CPU µs/pair | ÷ RLock | (b) Redis µs per call |\n|---|---|---|---|---|---|---|\n")
	for _, l := range r.rows {
		if l.contendedOnly {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", l.name,
			r.cell("a", l.name, mSrvCPU, fNum), r.ratio("a", l.name, mSrvCPU), callsCell(&r.store, "a", l),
			r.cell("b", l.name, mSrvCPU, fNum), r.ratio("b", l.name, mSrvCPU), callsCell(&r.store, "b", l))
	}
}

// contendRows are the rows of (c) and of the failure table: every row but
// those that stand for another client's server cost.
func contendRows(rows []lib) []lib {
	return slices.DeleteFunc(slices.Clone(rows), func(l lib) bool { return l.serverOnly })
}

func (r *brep) markdown() string {
	var b strings.Builder
	c := r.cfg
	fmt.Fprintf(&b, "# Lock backends side by side: goredisson, Redisson, the Go peers, MariaDB, ZooKeeper, etcd\n\n")
	fmt.Fprintf(&b, "Run %s on this machine (%s); the whole run took %v. Servers: %s.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), machine(), r.took.Round(time.Second), strings.Join(r.versions, "; "))
	fmt.Fprintf(&b, "Every figure is measured in short bursts: a burst measures every row once, one after another, in an order rotated by one row from burst to burst, "+
		"and each figure is divided by goredisson RLock's figure of the same burst (the ÷ RLock columns; for times and rates alike, above 1 means a larger figure than goredisson's). "+
		"A run's figure is the median of its bursts (%d of (a) and (b), %d of (c)); the tables give the median of %d runs with the min–max of the runs in brackets. "+
		"A handoff gap can be negative (the waiter learns of the release before the releaser's unlock call returns); ratios are taken of positive figures only.\n", c.bursts, c.cBursts, c.runs)
	for _, s := range r.skips {
		fmt.Fprintf(&b, "\n- **Skipped**: %s\n", s)
	}
	fmt.Fprintf(&b, "\n## Rows\n\n| Row | What it does |\n|---|---|\n")
	for _, l := range r.rows {
		fmt.Fprintf(&b, "| %s | %s |\n", l.name, l.settings)
	}
	if c.part("a") || c.part("b") {
		r.abTable(&b)
		r.costTable(&b)
	}
	for _, cc := range bContendConfigs {
		p := "c:" + cc.label
		if !c.part("c") && !c.part(cc.part) {
			continue
		}
		fmt.Fprintf(&b, "\n## (c) One hot key, %v hold, %s, %v per burst\n\n", c.contendHold, cc.label, c.cFor)
		fmt.Fprintf(&b, "| Row | acq/s | ÷ RLock | handoff gap p50 | ÷ RLock | gap p99 | ÷ RLock | wait p99 | fairness max/min | re-taken by releaser | server CPU | errors | overlaps |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, l := range contendRows(r.rows) {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.name,
				r.cell(p, l.name, "acq/s", fNum), r.ratio(p, l.name, "acq/s"),
				r.cell(p, l.name, "gap p50", fDur), r.ratio(p, l.name, "gap p50"),
				r.cell(p, l.name, "gap p99", fDur), r.ratio(p, l.name, "gap p99"),
				r.cell(p, l.name, "wait p99", fDur), r.cell(p, l.name, "fairness", fNum), r.cell(p, l.name, "retake", fPct),
				r.cell(p, l.name, "server cpu", fPct), r.cell(p, l.name, "errors", fNum), r.cell(p, l.name, "overlaps", fNum))
		}
		r.rowNotes(&b, p, r.rows)
		r.rowNotes(&b, "c", r.rows)
	}
	if c.part("k") {
		fmt.Fprintf(&b, "\n## Cache breakdown: %d concurrent requests for one expired hot key\n\n", c.kRequests)
		fmt.Fprintf(&b, "A Redis cache in front of a backing store whose load takes %v; the hot key has just expired and %d requests (goroutines, Java threads) ask for it at once. "+
			"With a lock row: on a miss, take the lock `<key>:rebuild`, read again, load only if it still misses (examples/cachebreakdown's rebuild lock). "+
			"A request still waiting %v for the lock fails (errors). The store must be loaded exactly once. One round per run (after a warm-up round of 64 requests on another key); loads are listed per run.\n\n", c.kLoad, c.kRequests, requestTimeout)
		fmt.Fprintf(&b, "| Row | loads (each run) | request p50 | ÷ RLock | request p99 | ÷ RLock | stale reads | errors |\n|---|---|---|---|---|---|---|---|\n")
		rows := append(contendRows(r.rows), lib{name: twoLevelName}, lib{name: noGuardName})
		for _, l := range rows {
			if l.contendedOnly {
				continue
			}
			var loads []string
			for _, v := range pooled(r.store.values("k", l.name, "loads")) {
				loads = append(loads, fmt.Sprintf("%.0f", v))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", l.name, strings.Join(loads, ", "),
				r.cell("k", l.name, "p50", fDur), r.ratio("k", l.name, "p50"),
				r.cell("k", l.name, "p99", fDur), r.ratio("k", l.name, "p99"),
				r.cell("k", l.name, "stale", fNum), r.cell("k", l.name, "errors", fNum))
		}
		r.rowNotes(&b, "k", rows)
	}
	if len(r.failures) > 0 {
		b.WriteString(r.failureTable())
	}
	return b.String()
}

// failureTable renders the failure scenarios: one line per row, one
// column per scenario; a cell gives the outcome (the same in every run,
// with the median time; or each run's when they differ).
func (r *brep) failureTable() string {
	var b strings.Builder
	ft := r.failTimes
	fmt.Fprintf(&b, "\n## What happens to a held lock when something fails\n\n")
	fmt.Fprintf(&b, "Measured, each line by a run: a holder process takes the lock, a waiter process (another client) asks for it "+
		"(after an error, or an early give-up, it asks again every 100 ms, as a caller that needs the lock would), then the failure happens. "+
		"Every lease and session is %v: goredisson's and Redisson's watchdog timeout (renewed every third of it), rueidislock's KeyValidity (it extends itself), "+
		"ZooKeeper's session timeout, etcd's session TTL; redsync, redislock and the naive lock get it as their TTL and the holder extends it every third of it "+
		"(Extend, Refresh, a compare-and-PEXPIRE), as their callers must while a job runs. MariaDB's locks have none. "+
		"*Killed*: SIGKILL to the holder. *Paused*: SIGSTOP to the holder for %v, then SIGCONT, and 1 s later the holder unlocks. "+
		"*Restarted*: SIGTERM to the server and a start on the same port and data (Redis as Debian configures it: RDB save points, no AOF). "+
		"*Crashed*: SIGKILL to the server and a start. After a kill or a restart the waiter is watched for %v, then the holder unlocks.\n\n"+
		"Outcomes: **freed** (after a kill, the waiter got the lock), **not freed**, **kept** (the waiter got it only after the holder's unlock), "+
		"**lost** (the waiter got it while the holder still held it; *told first*: the library had told the holder before that, "+
		"*told later*, or *never told*: its unlock is the first it hears), **waiter never got it**. "+
		"Times are after the event (the kill, the SIGSTOP, the server's stop); *told* is goredisson's LostContext, ZooKeeper's session expiry, etcd's session end, "+
		"or a failed extension (redsync, redislock, naive). %d runs; a cell gives each outcome seen with the number of runs, and the details of its median run.\n\n",
		ft.lease, ft.pause, ft.observe, r.cfg.failRuns)
	b.WriteString("| Row |")
	for _, sc := range scenarios {
		b.WriteString(" " + sc + " |")
	}
	b.WriteString("\n|---|")
	for range scenarios {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, l := range contendRows(r.rows) {
		if l.contendedOnly {
			continue
		}
		fmt.Fprintf(&b, "| %s |", l.name)
		for _, sc := range scenarios {
			var outs []failOutcome
			for _, o := range r.failures {
				if o.Row == l.name && o.Scenario == sc {
					outs = append(outs, o)
				}
			}
			fmt.Fprintf(&b, " %s |", summarizeOutcomes(outs, ft))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func summarizeOutcomes(outs []failOutcome, ft failTimes) string {
	if len(outs) == 0 {
		return "-"
	}
	// Group the runs by verdict, most frequent first; each group shows the
	// run with the median waiter time.
	groups := map[string][]failOutcome{}
	var order []string
	for _, o := range outs {
		v := o.verdict()
		if _, ok := groups[v]; !ok {
			order = append(order, v)
		}
		groups[v] = append(groups[v], o)
	}
	slices.SortStableFunc(order, func(a, b string) int { return len(groups[b]) - len(groups[a]) })
	var parts []string
	for _, v := range order {
		g := slices.Clone(groups[v])
		slices.SortFunc(g, func(a, b failOutcome) int { return int(a.waiterAfter() - b.waiterAfter()) })
		s := "**" + v + "**"
		if len(outs) > 1 {
			s += fmt.Sprintf(" (%d of %d runs)", len(g), len(outs))
		}
		parts = append(parts, s+": "+g[len(g)/2].describe(ft))
	}
	return strings.Join(parts, "<br>")
}

func machine() string {
	return fmt.Sprintf("Go %s, %d CPUs", strings.TrimPrefix(goVersion(), "go"), numCPU())
}

// serverVersions names the servers of the run (from the servers, or
// their Debian packages).
func serverVersions(ss *startedServers) []string {
	var vs []string
	if ss.srv.Redis != "" {
		vs = append(vs, strings.SplitN(redisVersion(ss.srv.Redis), ",", 2)[0])
	}
	if ss.srv.MySQL != "" {
		v := "MariaDB"
		if db, err := sql.Open("mysql", ss.srv.MySQL); err == nil {
			var s string
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s) == nil {
				v += " " + s
			}
			cancel()
			db.Close()
		}
		vs = append(vs, v)
	}
	if ss.srv.ZK != "" {
		vs = append(vs, "ZooKeeper "+debVersion("zookeeper"))
	}
	if ss.srv.Etcd != "" {
		vs = append(vs, "etcd "+debVersion("etcd-server"))
	}
	return vs
}

func debVersion(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", pkg).Output()
	if err != nil {
		return "(version unknown)"
	}
	return "(Debian " + strings.TrimSpace(string(out)) + ")"
}

// plotPNG draws, per row, the median ratios to goredisson RLock: rates
// above, times below (log scales; 1 is goredisson).
func (r *brep) plotPNG(path string) error {
	var rows []lib
	for _, l := range contendRows(r.rows) {
		if l.name != rlockName {
			rows = append(rows, l)
		}
	}
	rows = append(rows, lib{name: twoLevelName})
	names := make([]string, len(rows))
	for i, l := range rows {
		n := strings.Replace(l.name, "goredisson ", "goredisson\n", 1)
		n = strings.Replace(n, " tuned", "\ntuned", 1)
		n = strings.Replace(n, "MariaDB ", "MariaDB\n", 1)
		n = strings.Replace(n, "Redisson ", "Redisson\n", 1)
		n = strings.Replace(n, " two-level", "\ntwo-level", 1)
		names[i] = strings.Replace(n, "ZooKeeper ", "ZooKeeper\n", 1)
	}
	type series struct{ label, part, metric string }
	mk := func(title string, ss []series) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = "÷ goredisson RLock"
		p.NominalX(names...)
		p.Legend.Top = true
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		one, _ := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(rows)) - 0.5, Y: 1}})
		one.Color = plotutil.Color(7)
		p.Add(one)
		lo, hi := math.Inf(1), math.Inf(-1)
		for i, s := range ss {
			var pts plotter.XYs
			for j, l := range rows {
				v := medianOfRuns(r.store.ratios(s.part, l.name, rlockName, s.metric))
				if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
					continue
				}
				lo, hi = math.Min(lo, v), math.Max(hi, v)
				pts = append(pts, plotter.XY{X: float64(j) + 0.1*(float64(i)-float64(len(ss)-1)/2), Y: v})
			}
			if len(pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color = plotutil.Color(i)
			sc.GlyphStyle.Shape = plotutil.Shape(i)
			sc.GlyphStyle.Radius = vg.Points(4)
			p.Add(sc)
			p.Legend.Add(s.label, sc)
		}
		if !math.IsInf(lo, 0) {
			p.Y.Min, p.Y.Max = math.Min(lo, 1)*0.7, math.Max(hi, 1)*1.6
		}
		return p, nil
	}
	rates, err := mk("Rates ÷ goredisson RLock's in the same burst (higher is faster)", []series{
		{"(a) uncontended pairs/s", "a", "pairs/s"}, {"(b) 64 owners pairs/s", "b", "pairs/s"},
		{"(c) 16 goroutines acq/s", "c:" + bContendConfigs[0].label, "acq/s"}, {"(c) 4 processes acq/s", "c:" + bContendConfigs[1].label, "acq/s"},
	})
	if err != nil {
		return err
	}
	times, err := mk("Times ÷ goredisson RLock's in the same burst (lower is faster)", []series{
		{"(a) pair p50", "a", "p50"}, {"(c) 16 goroutines handoff gap p50", "c:" + bContendConfigs[0].label, "gap p50"},
		{"(c) 4 processes handoff gap p99", "c:" + bContendConfigs[1].label, "gap p99"}, {"cache breakdown request p99", "k", "p99"},
	})
	if err != nil {
		return err
	}
	img := vgimg.New(vg.Points(1300), vg.Points(900))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadX: vg.Points(6), PadY: vg.Points(14)}
	canvases := plot.Align([][]*plot.Plot{{rates}, {times}}, tiles, dc)
	rates.Draw(canvases[0][0])
	times.Draw(canvases[1][0])
	return savePNG(img, path)
}
