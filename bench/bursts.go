package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Measuring in bursts, shared by every run of the bench (the default run,
// --backends and --cluster). This VM's round trip has two modes several
// times apart, and other work loads the same two cores: a figure measured
// once says little about a row beside another measured a minute later, and
// rows measured in a fixed order meet the machine's phases in a fixed order
// too (the default run measured goredisson first in every run: 1.77×
// rueidislock tuned in (b), 1.01× with the order rotated per burst). So a
// burst measures every row once, one right after another, in an order
// rotated by one row from burst to burst, and rows are compared by the
// ratio of their figures in the same burst.

// figures are one burst's measurements: row -> metric -> value.
type figures map[string]map[string]float64

// burstStore keeps the figures of every burst of a run: part -> run ->
// bursts in the order they were measured.
type burstStore struct {
	parts map[string][][]figures
}

// add records one burst of part in run.
func (s *burstStore) add(part string, run int, f figures) {
	if s.parts == nil {
		s.parts = map[string][][]figures{}
	}
	for len(s.parts[part]) <= run {
		s.parts[part] = append(s.parts[part], nil)
	}
	s.parts[part][run] = append(s.parts[part][run], f)
}

// each calls fn for every burst of part, with its run.
func (s *burstStore) each(part string, fn func(run int, f figures)) {
	for run, bursts := range s.parts[part] {
		for _, f := range bursts {
			fn(run, f)
		}
	}
}

// values returns, per run, row's metric in each burst that has it.
func (s *burstStore) values(part, row, metric string) [][]float64 {
	var out [][]float64
	s.each(part, func(run int, f figures) {
		for len(out) <= run {
			out = append(out, nil)
		}
		if v, ok := f[row][metric]; ok {
			out[run] = append(out[run], v)
		}
	})
	return out
}

// ratios returns, per run, row's metric over ref's in each burst that has
// both. A ratio of a time that can be negative (a handoff gap: the waiter
// can see the release before the releaser's unlock returns) means nothing:
// ratios only of positive figures.
func (s *burstStore) ratios(part, row, ref, metric string) [][]float64 {
	var out [][]float64
	s.each(part, func(run int, f figures) {
		for len(out) <= run {
			out = append(out, nil)
		}
		v, ok := f[row][metric]
		rv, rok := f[ref][metric]
		if ok && rok && v > 0 && rv > 0 {
			out[run] = append(out[run], v/rv)
		}
	})
	return out
}

// has reports whether row has a figure in some burst of part.
func (s *burstStore) has(part, row string) bool {
	found := false
	s.each(part, func(_ int, f figures) {
		if _, ok := f[row]; ok {
			found = true
		}
	})
	return found
}

// runMedians returns the median of each run's bursts.
func runMedians(per [][]float64) []float64 {
	var out []float64
	for _, bursts := range per {
		if len(bursts) > 0 {
			m, _, _ := med(bursts)
			out = append(out, m)
		}
	}
	return out
}

// pooled returns the values of every burst of every run.
func pooled(per [][]float64) []float64 {
	var out []float64
	for _, bursts := range per {
		out = append(out, bursts...)
	}
	return out
}

// medianOfRuns returns the median of the run medians (NaN: none).
func medianOfRuns(per [][]float64) float64 {
	m, _, _ := med(runMedians(per))
	return m
}

// cellOf renders the median of the run medians with their min–max.
func cellOf(per [][]float64, f format) string {
	vs := runMedians(per)
	if len(vs) == 0 {
		return "-"
	}
	m, lo, hi := med(vs)
	if len(vs) == 1 || f(lo) == f(hi) {
		return f(m)
	}
	return fmt.Sprintf("%s (%s–%s)", f(m), f(lo), f(hi))
}

// spreadOf renders the median of every burst's value with the min–max of
// the bursts and their number: "1.01× (0.45–2.92, n = 6)".
func spreadOf(vs []float64, f format) string {
	if len(vs) == 0 {
		return "-"
	}
	m, lo, hi := med(vs)
	if len(vs) == 1 {
		return fmt.Sprintf("%s (n = 1)", f(m))
	}
	return fmt.Sprintf("%s (%s–%s, n = %d)", f(m), f(lo), f(hi), len(vs))
}

// rotated returns rows rotated left by shift (modulo their number).
func rotated[R any](rows []R, shift int) []R {
	if len(rows) == 0 {
		return nil
	}
	shift %= len(rows)
	return append(slices.Clone(rows[shift:]), rows[:shift]...)
}

// burstPlan is what runBursts needs to know of a part.
type burstPlan[R any] struct {
	part string
	run  int // the run (0-based)
	n    int // bursts in this run
	rows []R
	name func(R) string
	// measure measures row in burst b (0-based within the run).
	measure func(row R, b int) (map[string]float64, error)
	// fail records a row that has no figure in this burst (nil: ignored).
	fail func(row R, err error)
	// done is told of every burst once measured (nil: nothing).
	done func(b int, f figures, order []R, took time.Duration)
}

// runBursts runs p.n bursts of p.part in run p.run: every row once per
// burst, in an order rotated by one row from burst to burst (and from run
// to run: burst b of run r starts at row r·n + b), and records each burst
// in s.
func runBursts[R any](s *burstStore, p burstPlan[R]) {
	for b := range p.n {
		order := rotated(p.rows, p.run*p.n+b)
		f := figures{}
		t := time.Now()
		for _, row := range order {
			v, err := p.measure(row, b)
			if err != nil {
				if p.fail != nil {
					p.fail(row, err)
				}
				continue
			}
			f[p.name(row)] = v
		}
		s.add(p.part, p.run, f)
		if p.done != nil {
			p.done(b, f, order, time.Since(t))
		}
	}
}

// finite reports whether v is a number (not NaN, not ±Inf).
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
