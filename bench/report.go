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
	redisBench         []string
	values             map[string][]float64 // "part|lib|metric" -> one value per run
	watchdog           []watchdogResult
}

func (r *report) add(part, lib, metric string, v float64) {
	if r.values == nil {
		r.values = map[string][]float64{}
	}
	k := part + "|" + lib + "|" + metric
	r.values[k] = append(r.values[k], v)
}

func (r *report) addContend(cfg, lib string, c contendResult) {
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
	for _, l := range r.redisBench {
		fmt.Fprintf(&b, "\n    redis-benchmark: %s", l)
	}
	fmt.Fprintf(&b, "\n\n## Libraries\n\n| Library | Settings |\n|---|---|\n")
	for _, l := range libs {
		fmt.Fprintf(&b, "| %s | %s |\n", l.name, l.settings)
	}
	if r.cfg.part("a") || r.cfg.part("b") {
		fmt.Fprintf(&b, "\n## (a) Uncontended and (b) 64 goroutines on keys of their own\n\n")
		fmt.Fprintf(&b, "| Library | (a) pairs/s | (a) p50 | (a) p99 | (a) p50 / PING | (b) pairs/s |\n|---|---|---|---|---|---|\n")
		for _, l := range libs {
			if l.tuned {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", l.name,
				r.cell("a", l.name, "pairs/s", fNum), r.cell("a", l.name, "p50", fDur), r.cell("a", l.name, "p99", fDur),
				fNum(r.median("a", l.name, "p50")/ping)+"×", r.cell("b", l.name, "pairs/s", fNum))
		}
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
		}
	}
	if len(r.watchdog) > 0 {
		fmt.Fprintf(&b, "\n## (d) Watchdog: %d goredisson locks held for %v in one Client\n\n", r.watchdog[0].Locks, r.watchdog[0].Window)
		fmt.Fprintf(&b, "| Run | renew ticks | renew round trips | Redis commands | round trips per tick per 1,000 locks | client CPU |\n|---|---|---|---|---|---|\n")
		for i, w := range r.watchdog {
			fmt.Fprintf(&b, "| %d | %d | %d | %d | %.2f | %v |\n", i+1, w.Ticks, w.Trips, w.Cmds, w.TripsPerTickPerK, w.ClientCPU.Round(time.Millisecond))
		}
		fmt.Fprintf(&b, "\nredsync and redislock have no watchdog: keeping %d locks alive costs their caller one Extend/Refresh round trip per lock per refresh.\n", r.watchdog[0].Locks)
	}
	b.WriteString(r.targets(ping))
	return b.String()
}

// targets checks goredisson against the targets of issue 5.
func (r *report) targets(ping float64) string {
	var b strings.Builder
	b.WriteString("\n## Targets for goredisson (issue 5)\n\n")
	check := func(ok bool, format string, args ...any) {
		mark := "MET"
		if !ok {
			mark = "MISSED"
		}
		fmt.Fprintf(&b, "- %s: %s\n", mark, fmt.Sprintf(format, args...))
	}
	const rl, fl = "goredisson RLock", "goredisson FairLock"
	best := func(part, metric string) (string, float64) {
		name, v := "", 0.0
		for _, l := range libs {
			// The peers are the two libraries; the naive lock is a baseline.
			if strings.HasPrefix(l.name, "goredisson") || strings.HasPrefix(l.name, "naive") || l.tuned {
				continue
			}
			if m := r.median(part, l.name, metric); m > v {
				name, v = l.name, m
			}
		}
		return name, v
	}
	if r.cfg.part("a") {
		n, v := best("a", "pairs/s")
		g := r.median("a", rl, "pairs/s")
		check(g >= v, "(a) uncontended %s pairs/s vs best peer %s %s (the naive baseline: %s)", fNum(g), n, fNum(v), fNum(r.median("a", "naive SET NX PX", "pairs/s")))
		p50 := r.median("a", rl, "p50")
		check(p50 <= 2.2*ping, "(a) p50 %s = %s× PING (target <= 2.2×)", fDur(p50), fNum(p50/ping))
	}
	if r.cfg.part("b") {
		n, v := best("b", "pairs/s")
		g := r.median("b", rl, "pairs/s")
		check(g >= math.Max(22000, v), "(b) 64 goroutines %s pairs/s vs max(22,000, best peer %s %s) (the naive baseline: %s)", fNum(g), n, fNum(v), fNum(r.median("b", "naive SET NX PX", "pairs/s")))
	}
	if r.cfg.part("c") {
		p := "c:4 processes, think 1 ms"
		acq, gap50, gap99 := r.median(p, rl, "acq/s"), r.median(p, rl, "gap p50"), r.median(p, rl, "gap p99")
		cmds, fair, ffair := r.median(p, rl, "cmds/acq"), r.median(p, rl, "fairness"), r.median(p, fl, "fairness")
		check(acq >= 650, "(c) 4 processes, 1 ms think: %s acquisitions/s (>= 650)", fNum(acq))
		check(gap50 <= float64(120*time.Microsecond), "(c) handoff gap p50 %s (<= 120 µs)", fDur(gap50))
		check(gap99 <= float64(600*time.Microsecond), "(c) handoff gap p99 %s (<= 600 µs)", fDur(gap99))
		check(cmds <= 4, "(c) %s Redis commands per acquisition (<= 4)", fNum(cmds))
		check(!math.IsInf(fair, 1), "(c) no starvation (every owner acquired)")
		check(fair <= 1.3, "(c) RLock fairness max/min %s (<= 1.3)", fNum(fair))
		check(ffair <= 1.05, "(c) FairLock fairness max/min %s (<= 1.05)", fNum(ffair))
	}
	if len(r.watchdog) > 0 {
		worst := 0.0
		for _, w := range r.watchdog {
			worst = math.Max(worst, w.TripsPerTickPerK)
		}
		check(worst <= 1, "(d) %.2f round trips per renew tick per 1,000 locks at most (<= 1)", worst)
	}
	return b.String()
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
