package main

import (
	"context"
	"strconv"
	"time"
)

// --- (d) watchdog cost

type watchdogResult struct {
	Locks            int
	Window           time.Duration
	Ticks            int // renew ticks seen in the window (pipelines less than 2 s apart are one tick)
	Trips, Cmds      int64
	TripsPerTickPerK float64 // round trips per tick per 1,000 locks
	ClientCPU        time.Duration
}

func watchdogCost(addr string, locks int, window time.Duration, run string) (watchdogResult, error) {
	cnt := counter{trace: verbose}
	rdb := newRedis(addr, 16, &cnt)
	defer rdb.Close()
	rl, err := findLib(rlockName)
	if err != nil {
		return watchdogResult{}, err
	}
	newMutex, closeLib, err := rl.open(env{rdb: rdb, addr: addr, cnt: &cnt})
	if err != nil {
		return watchdogResult{}, err
	}
	defer closeLib()
	ctx := context.Background()
	ms := make([]mutex, locks)
	for i := range ms {
		ms[i] = newMutex(ctx, "bench:d:"+run+":"+strconv.Itoa(i))
		if err := ms[i].lock(); err != nil {
			return watchdogResult{}, err
		}
	}
	trips, cmds := cnt.trips.Load(), cnt.cmds.Load()
	cnt.mu.Lock()
	cnt.times = nil
	cnt.mu.Unlock()
	cpu := cpuTime()
	time.Sleep(window)
	res := watchdogResult{Locks: locks, Window: window, Trips: cnt.trips.Load() - trips, Cmds: cnt.cmds.Load() - cmds, ClientCPU: cpuTime() - cpu}
	cnt.mu.Lock()
	for i, t := range cnt.times {
		if i == 0 || t.Sub(cnt.times[i-1]) > 2*time.Second {
			res.Ticks++
		}
	}
	cnt.mu.Unlock()
	res.TripsPerTickPerK = float64(res.Trips) / float64(max(1, res.Ticks)) / (float64(locks) / 1000)
	for _, m := range ms {
		if err := m.unlock(); err != nil {
			return res, err
		}
	}
	return res, nil
}
