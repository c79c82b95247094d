package main

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// --- (a) uncontended pairs

type pairsResult struct {
	PerSec   float64
	P50, P99 time.Duration
	// Allocs and Bytes are the process's heap allocations per pair over
	// the measured pairs (runtime.MemStats Mallocs and TotalAlloc, as
	// testing.AllocsPerRun reads them): the library's and its client's,
	// background goroutines included.
	Allocs, Bytes float64
	// CPU is the process's user+system CPU time per pair (getrusage) over
	// the measured pairs, in microseconds: the library's, its client's and
	// their background goroutines'.
	CPU float64
	// Server is the server's cost over the measured pairs (servercost.go);
	// nil when not sampled.
	Server map[string]float64
}

// uncontendedOn measures n pairs (a tenth more as warm-up), or as many as
// fit in maxDur when it is not 0 (at least 10); cost (nil: none) samples
// the server around the measured pairs (into Server).
func uncontendedOn(l lib, srv servers, n int, maxDur time.Duration, run string, cost costSampler) (pairsResult, error) {
	newMutex, closeLib, err := openLib(l, srv, 4, nil, 0)
	if err != nil {
		return pairsResult{}, err
	}
	defer closeLib()
	var progress atomic.Int64
	ctx, stop := withStallGuard(&progress)
	defer stop()
	m := newMutex(ctx, "bench:a:"+run)
	pair := func() error {
		if err := m.lock(); err != nil {
			return stalled(ctx, err)
		}
		err := m.unlock()
		progress.Add(1)
		return stalled(ctx, err)
	}
	for range n / 10 { // warms up connections and scripts
		if err := pair(); err != nil {
			return pairsResult{}, err
		}
	}
	costErr := beginCost(cost) // before the client's figures: its calls allocate
	lat := make([]time.Duration, 0, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := cpuTime()
	began := time.Now()
	for range n {
		if maxDur > 0 && len(lat) >= 10 && time.Since(began) >= maxDur {
			break
		}
		start := time.Now()
		if err := pair(); err != nil {
			return pairsResult{}, err
		}
		lat = append(lat, time.Since(start))
	}
	n = len(lat)
	cpu = cpuTime() - cpu
	runtime.ReadMemStats(&after)
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	return pairsResult{
		PerSec: float64(n) / total.Seconds(), P50: pct(lat, 50), P99: pct(lat, 99),
		Allocs: float64(after.Mallocs-before.Mallocs) / float64(n),
		Bytes:  float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
		CPU:    float64(cpu.Microseconds()) / float64(n),
		Server: endCost(l.name, cost, costErr, float64(n)),
	}, nil
}

// beginCost starts cost's window (nil: no sampler).
func beginCost(cost costSampler) error {
	if cost == nil {
		return nil
	}
	return cost.begin()
}

// endCost ends cost's window over pairs and returns its metrics (nil: no
// sampler, or it failed: logged).
func endCost(row string, cost costSampler, began error, pairs float64) map[string]float64 {
	if cost == nil {
		return nil
	}
	if began != nil {
		logf("    %s: no server cost: %v", row, began)
		return nil
	}
	m, err := cost.end(pairs)
	if err != nil {
		logf("    %s: no server cost: %v", row, err)
		return nil
	}
	return m
}

// --- (b) many goroutines on keys of their own

// parallelOwnKeysOn runs goroutines owners on keys of their own for warm,
// then counts their pairs for d; cost (nil: none) samples the server over
// the counted window (it begins at the end of the warm-up and ends once
// every owner's last pair returned).
func parallelOwnKeysOn(l lib, srv servers, goroutines int, warm, d time.Duration, run string, cost costSampler) (float64, map[string]float64, error) {
	newMutex, closeLib, err := openLib(l, srv, goroutines+8, nil, 0)
	if err != nil {
		return 0, nil, err
	}
	defer closeLib()
	var began error
	n, err := ownersLoop(goroutines, warm, d, func(ctx context.Context, g int) func() error {
		m := newMutex(ctx, "bench:b:"+run+":"+strconv.Itoa(g))
		return func() error {
			if err := m.lock(); err != nil {
				return err
			}
			return m.unlock()
		}
	}, func() { began = beginCost(cost) })
	if err != nil {
		return 0, nil, err
	}
	return float64(n) / d.Seconds(), endCost(l.name, cost, began, float64(n)), nil
}

// ownersLoop runs owners goroutines, each calling its pair (newPair makes
// owner g's, with the loop's context) over and over: for warm, then the
// pairs begun in the d after are counted and returned. atStart (nil: none)
// runs when the count starts, on a goroutine of its own, and has returned
// when ownersLoop does. A pair that fails ends the loop's owner and is the
// error; a loop in which no pair returns for stallTimeout fails.
func ownersLoop(owners int, warm, d time.Duration, newPair func(ctx context.Context, g int) func() error, atStart func()) (int64, error) {
	var pairs, progress atomic.Int64
	ctx, stop := withStallGuard(&progress)
	defer stop()
	var firstErr atomic.Pointer[error] // the first failure (errors of several types may race)
	start := time.Now().Add(warm)
	end := start.Add(d)
	var wg sync.WaitGroup
	if atStart != nil {
		wg.Go(func() {
			time.Sleep(time.Until(start))
			atStart()
		})
	}
	for g := range owners {
		wg.Go(func() {
			pair := newPair(ctx, g)
			for now := time.Now(); now.Before(end); now = time.Now() {
				err := pair()
				progress.Add(1)
				if err != nil {
					err = stalled(ctx, err)
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				if !now.Before(start) { // until the start, warm-up
					pairs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		return 0, *err
	}
	if pairs.Load() == 0 {
		return 0, errors.New("no pair completed")
	}
	return pairs.Load(), nil
}
