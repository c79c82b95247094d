package main

import (
	"fmt"
	"math"
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

// report collects every run's figures and renders them.
type report struct {
	what, redisVersion string
	cfg                config
	started            time.Time
	pingP50, pingP99   []float64
	setRPS             []float64            // redis-benchmark SET requests per second, one per run
	benchLines         []string             // its summary lines
	values             map[string][]float64 // "part|lib|metric" -> one value per run
	errNotes           map[string][]string  // "part|lib" -> the first error of each run that had one
	watchdog           []watchdogResult
}

func (r *report) add(part, lib, metric string, v float64) {
	if r.values == nil {
		r.values = map[string][]float64{}
	}
	k := part + "|" + lib + "|" + metric
	r.values[k] = append(r.values[k], v)
}

func (r *report) addContend(cfg, lib string, run int, c contendResult) {
	p := "c:" + cfg
	r.add(p, lib, "acq/s", c.AcqPerSec)
	r.add(p, lib, "gap p50", float64(c.GapP50))
	r.add(p, lib, "gap p99", float64(c.GapP99))
	r.add(p, lib, "retake", c.Retake)
	r.add(p, lib, "wait p99", float64(c.WaitP99))
	r.add(p, lib, "wait max", float64(c.WaitMax))
	r.add(p, lib, "fairness", c.Fairness)
	r.add(p, lib, "cmds/acq", c.CmdsPerAcq)
	r.add(p, lib, "redis cpu", c.RedisCPU)
	r.add(p, lib, "errors", float64(c.Errors))
	r.add(p, lib, "overlaps", float64(c.Overlaps))
	if c.Err != "" {
		r.note(p, lib, run, c.Err)
	}
}

// fail records that a measurement of lib failed (it has no figure for that
// run) and logs it.
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

// med returns the median, min and max of vs.
func med(vs []float64) (m, lo, hi float64) {
	if len(vs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func (r *report) median(part, lib, metric string) float64 {
	m, _, _ := med(r.values[part+"|"+lib+"|"+metric])
	return m
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

// cell renders median (min–max).
func (r *report) cell(part, lib, metric string, f format) string {
	vs := r.values[part+"|"+lib+"|"+metric]
	if len(vs) == 0 {
		return "-"
	}
	m, lo, hi := med(vs)
	if len(vs) == 1 || f(lo) == f(hi) {
		return f(m)
	}
	return fmt.Sprintf("%s (%s–%s)", f(m), f(lo), f(hi))
}

func (r *report) markdown() string {
	var b strings.Builder
	ping, pingLo, pingHi := med(r.pingP50)
	ping99, _, _ := med(r.pingP99)
	fmt.Fprintf(&b, "# goredisson beside its peers\n\n")
	fmt.Fprintf(&b, "Run %s against a %s (%s). Every figure is the median of %d runs, with min–max in brackets.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), r.what, r.redisVersion, r.cfg.runs)
	fmt.Fprintf(&b, "## The physical limit\n\nPING round trip p50 %s (%s–%s), p99 %s.\n", fDur(ping), fDur(pingLo), fDur(pingHi), fDur(ping99))
	if len(r.setRPS) > 0 {
		m, lo, hi := med(r.setRPS)
		fmt.Fprintf(&b, "\nredis-benchmark SET (%d connections, no pipelining): %s (%s–%s) requests/s, so at most %s lock+unlock pairs/s at two commands a pair (the (b) limit).\n",
			benchClients, fNum(m), fNum(lo), fNum(hi), fNum(m/2))
		for _, l := range r.benchLines {
			fmt.Fprintf(&b, "\n    redis-benchmark: %s", l)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n## Libraries\n\n| Library | Settings |\n|---|---|\n")
	for _, l := range libs {
		fmt.Fprintf(&b, "| %s | %s |\n", l.name, l.settings)
	}
	if r.cfg.part("a") || r.cfg.part("b") {
		naiveP50 := r.median("a", naiveName, "p50")
		fmt.Fprintf(&b, "\n## (a) Uncontended and (b) 64 goroutines on keys of their own\n\n")
		fmt.Fprintf(&b, "| Library | (a) pairs/s | (a) p50 | (a) p99 | (a) p50 / PING | (a) p50 / naive | (b) pairs/s | (b) share of SET rps / 2 |\n|---|---|---|---|---|---|---|---|\n")
		for _, l := range libs {
			if l.contendedOnly {
				continue
			}
			p50 := r.median("a", l.name, "p50")
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", l.name,
				r.cell("a", l.name, "pairs/s", fNum), r.cell("a", l.name, "p50", fDur), r.cell("a", l.name, "p99", fDur),
				fTimes(p50/ping), fTimes(p50/naiveP50),
				r.cell("b", l.name, "pairs/s", fNum), r.cell("b", l.name, "share", fPct))
		}
		r.notes(&b, "a", "b")
	}
	if r.cfg.part("a") || r.cfg.part("m") {
		fmt.Fprintf(&b, "\n## Client allocations per pair and Redis memory per held lock\n\n")
		fmt.Fprintf(&b, "Allocations: heap allocations of the process per lock+unlock pair over the (a) loop (runtime.MemStats). Redis memory: %d locks held at once (used_memory less client buffers), per lock; and what is left per lock once all are released.\n\n", r.cfg.memLocks)
		fmt.Fprintf(&b, "| Library | allocs/pair | bytes/pair | client CPU µs/pair | Redis bytes per held lock | Redis bytes per lock left after unlock |\n|---|---|---|---|---|---|\n")
		for _, l := range libs {
			if l.contendedOnly {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", l.name,
				r.cell("a", l.name, "allocs", fNum), r.cell("a", l.name, "bytes", fNum), r.cell("a", l.name, "cpu", fNum),
				r.cell("m", l.name, "per lock", fNum), r.cell("m", l.name, "left", fNum))
		}
		r.notes(&b, "m")
	}
	if r.cfg.part("c") {
		for _, cc := range contendConfigs {
			p := "c:" + cc.label
			fmt.Fprintf(&b, "\n## (c) One key, 1 ms hold, %v: %s\n\n", r.cfg.contendFor, cc.label)
			fmt.Fprintf(&b, "| Library | acq/s | handoff gap p50 | gap p99 | re-taken by releaser | wait p99 | wait max | fairness max/min | cmds/acq | Redis CPU | errors | overlaps |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
			for _, l := range libs {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.name,
					r.cell(p, l.name, "acq/s", fNum), r.cell(p, l.name, "gap p50", fDur), r.cell(p, l.name, "gap p99", fDur),
					r.cell(p, l.name, "retake", fPct), r.cell(p, l.name, "wait p99", fDur), r.cell(p, l.name, "wait max", fDur),
					r.cell(p, l.name, "fairness", fNum), r.cell(p, l.name, "cmds/acq", fNum), r.cell(p, l.name, "redis cpu", fPct),
					r.cell(p, l.name, "errors", fNum), r.cell(p, l.name, "overlaps", fNum))
			}
			r.notes(&b, p)
		}
	}
	if len(r.watchdog) > 0 {
		fmt.Fprintf(&b, "\n## (d) Watchdog: %d goredisson locks held for %v in one Client\n\n", r.watchdog[0].Locks, r.watchdog[0].Window)
		fmt.Fprintf(&b, "| Run | renew ticks | renew round trips | Redis commands | round trips per tick per 1,000 locks | client CPU |\n|---|---|---|---|---|---|\n")
		for i, w := range r.watchdog {
			fmt.Fprintf(&b, "| %d | %d | %d | %d | %.2f | %v |\n", i+1, w.Ticks, w.Trips, w.Cmds, w.TripsPerTickPerK, w.ClientCPU.Round(time.Millisecond))
		}
		fmt.Fprintf(&b, "\nredsync and redislock have no watchdog: keeping %d locks alive costs their caller one Extend/Refresh round trip per lock per refresh. rueidislock extends each lock by itself, one script call per key every KeyValidity / 2.\n", r.watchdog[0].Locks)
	}
	r.notes(&b, "d")
	b.WriteString(r.targets())
	return b.String()
}

// targets checks goredisson RLock against the "Done when" targets of
// issue 16 that one run can measure, one PASS/MISSED line each, with the
// figures (medians of the run). A target whose figures this run did not
// measure (a part or library left out) says NOT MEASURED.
func (r *report) targets() string {
	var b strings.Builder
	b.WriteString("\n## Targets for goredisson RLock (issue 16)\n\n")
	if _, err := findSelected(rlockName); err != nil {
		b.WriteString("goredisson RLock was not measured (--libs): no target checked.\n")
		return b.String()
	}
	pass, missed := 0, 0
	check := func(ok, measured bool, format string, args ...any) {
		mark := "PASS"
		switch {
		case !measured:
			mark = "NOT MEASURED"
		case ok:
			pass++
		default:
			mark = "MISSED"
			missed++
		}
		fmt.Fprintf(&b, "- %s: %s\n", mark, fmt.Sprintf(format, args...))
	}
	if r.cfg.part("a") {
		n, v := r.bestPeer("a", "pairs/s")
		g := r.median("a", rlockName, "pairs/s")
		check(g >= v, known(g, v), "(a) uncontended pairs/s %s >= best peer's: %s %s", fNum(g), n, fNum(v))
		p50, naive := r.median("a", rlockName, "p50"), r.median("a", naiveName, "p50")
		check(p50 <= 1.1*naive, known(p50, naive), "(a) p50 %s <= 1.1× naive p50 %s = %s (%s×)", fDur(p50), fDur(naive), fDur(1.1*naive), fNum(p50/naive))
	}
	if r.cfg.part("b") {
		n, v := r.bestPeer("b", "pairs/s")
		g := r.median("b", rlockName, "pairs/s")
		limit, _, _ := med(r.setRPS)
		check(g >= 1.1*v, known(g, v), "(b) 64 goroutines pairs/s %s >= 1.1× best peer's: %s %s × 1.1 = %s (%s×); %s of the physical limit (SET %s rps / 2 = %s)",
			fNum(g), n, fNum(v), fNum(1.1*v), fNum(g/v), fPct(r.median("b", rlockName, "share")), fNum(limit), fNum(limit/2))
	}
	if r.cfg.part("c") {
		for _, cc := range contendConfigs {
			p := "c:" + cc.label
			n, v := r.bestPeer(p, "acq/s")
			acq := r.median(p, rlockName, "acq/s")
			check(acq >= v, known(acq, v), "(c) %s: acq/s %s >= best peer's: %s %s", cc.label, fNum(acq), n, fNum(v))
			gap := r.median(p, rlockName, "gap p99")
			check(gap <= float64(500*time.Microsecond), known(gap), "(c) %s: handoff gap p99 %s <= 0.5 ms", cc.label, fDur(gap))
			cmds := r.median(p, rlockName, "cmds/acq")
			check(cmds <= 4, known(cmds), "(c) %s: %s Redis commands per acquisition <= 4", cc.label, fNum(cmds))
			fair := r.median(p, rlockName, "fairness")
			check(fair <= 1.3, known(fair), "(c) %s: fairness max/min %s <= 1.3", cc.label, fNum(fair))
		}
	}
	if r.cfg.part("d") {
		worst, ticks, locks := 0.0, 0, r.cfg.wdLocks
		for _, w := range r.watchdog {
			ticks = max(ticks, w.Ticks)
			worst = math.Max(worst, float64(w.Trips)/float64(max(1, w.Ticks)))
		}
		want := math.Ceil(float64(locks) / 1000)
		check(worst <= want, ticks > 0, "(d) watchdog renews %d locks in %s round trips per tick (worst run) <= %s", locks, fNum(worst), fNum(want))
	}
	fmt.Fprintf(&b, "\n%d PASS, %d MISSED of the targets above.\n", pass, missed)
	return b.String()
}

// bestPeer returns the library other than goredisson with the highest
// median of metric in part (tuned configurations, rueidislock and the
// naive lock included), and that median.
func (r *report) bestPeer(part, metric string) (string, float64) {
	name, v := "none", math.NaN()
	for _, l := range libs {
		if strings.HasPrefix(l.name, "goredisson") {
			continue
		}
		if m := r.median(part, l.name, metric); !math.IsNaN(m) && (math.IsNaN(v) || m > v) {
			name, v = l.name, m
		}
	}
	return name, v
}

// known reports whether every figure was measured.
func known(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) {
			return false
		}
	}
	return true
}

// plotPNG draws the handoff gap p50 and the commands per acquisition of
// every library in every (c) configuration, one above the other.
func (r *report) plotPNG(path string) error {
	names := make([]string, len(libs))
	for i, l := range libs {
		names[i] = strings.Replace(l.name, "goredisson ", "goredisson\n", 1)
		names[i] = strings.Replace(names[i], " tuned", "\ntuned", 1)
	}
	mk := func(title, ylabel, metric string, scale float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		p.NominalX(names...)
		p.Legend.Top = true
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		for i, cc := range contendConfigs {
			var pts plotter.XYs
			for j, l := range libs {
				v := r.median("c:"+cc.label, l.name, metric) / scale
				if math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				// log scale: values below 1 are drawn at 1
				pts = append(pts, plotter.XY{X: float64(j) + 0.12*(float64(i)-1.5), Y: math.Max(v, 1)})
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color = plotutil.Color(i)
			sc.GlyphStyle.Shape = plotutil.Shape(i)
			sc.GlyphStyle.Radius = vg.Points(4)
			p.Add(sc)
			p.Legend.Add(cc.label, sc)
		}
		p.Y.Min = math.Max(p.Y.Min*0.8, 0.8)
		p.Y.Max *= 1.25
		return p, nil
	}
	gap, err := mk("Handoff gap p50 (unlock returned → next lock returned), one key, 1 ms hold", "µs", "gap p50", 1e3)
	if err != nil {
		return err
	}
	cmds, err := mk("Redis commands per acquisition", "commands", "cmds/acq", 1)
	if err != nil {
		return err
	}
	img := vgimg.New(vg.Points(1000), vg.Points(800))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadX: vg.Points(6), PadY: vg.Points(14)}
	canvases := plot.Align([][]*plot.Plot{{gap}, {cmds}}, tiles, dc)
	gap.Draw(canvases[0][0])
	cmds.Draw(canvases[1][0])
	return savePNG(img, path)
}
