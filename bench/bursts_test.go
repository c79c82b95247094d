package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestMed(t *testing.T) {
	for _, c := range []struct {
		vs        []float64
		m, lo, hi float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{5}, 5, 5, 5},
		{[]float64{1, math.Inf(1)}, math.Inf(1), 1, math.Inf(1)},
	} {
		m, lo, hi := med(c.vs)
		if m != c.m || lo != c.lo || hi != c.hi {
			t.Errorf("med(%v) = %v, %v, %v; want %v, %v, %v", c.vs, m, lo, hi, c.m, c.lo, c.hi)
		}
	}
	if m, _, _ := med(nil); !math.IsNaN(m) {
		t.Errorf("med(nil) = %v, want NaN", m)
	}
}

// TestRotation: burst b of run r starts at row r·n + b, every row once per
// burst; ratios are taken within a burst only.
func TestRotation(t *testing.T) {
	var s burstStore
	var firsts []string
	rows := []string{"A", "B", "C"}
	for r := range 2 {
		runBursts(&s, burstPlan[string]{part: "p", run: r, n: 2, rows: rows, name: func(x string) string { return x },
			measure: func(x string, b int) (map[string]float64, error) {
				return map[string]float64{"v": float64(10*r + b + 1), "x": map[string]float64{"A": 1, "B": 2, "C": 4}[x]}, nil
			},
			done: func(_ int, f figures, order []string, _ time.Duration) {
				if len(f) != 3 {
					t.Errorf("a burst has %d rows, want 3", len(f))
				}
				firsts = append(firsts, order[0])
			}})
	}
	if got := strings.Join(firsts, ""); got != "ABCA" {
		t.Errorf("first rows %q, want ABCA", got)
	}
	if got := pooled(s.ratios("p", "C", "A", "x")); len(got) != 4 || got[0] != 4 {
		t.Errorf("ratios C/A = %v, want four 4s", got)
	}
	if got := s.values("p", "B", "v"); len(got) != 2 || len(got[1]) != 2 || got[1][1] != 12 {
		t.Errorf("values = %v, want run 2's bursts 11, 12", got)
	}
}
