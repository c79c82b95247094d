package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// What a measured window costs the server, per pair: read around the
// window of every (a) and (b) measurement (and every --cluster burst), so
// that the server's side is a column beside the client's, not a one-off
// measurement.
//
// For Redis: INFO cpu before and after (used_cpu_sys + used_cpu_user of the
// whole server process, microsecond resolution) gives the server's CPU per
// pair; CONFIG RESETSTAT at the start and INFO commandstats at the end give
// each command's calls and usec in the window: Redis's own time per call
// (usec_per_call), which for a script (EVALSHA) includes the commands it
// runs (those are listed in commandstats as well, and counted again there).
// For the other servers (MariaDB, ZooKeeper, etcd): their process's CPU from
// /proc (10 ms ticks: coarse for a short window).

// Metric names of the server's cost in a burst's figures.
const (
	mSrvCPU    = "srv cpu" // server CPU µs per pair
	mUsecPfx   = "usec:"   // + command: Redis µs per call
	mCallsPfx  = "calls:"  // + command: calls per pair
	statsOwn   = "info"    // the sampler's own commands, left out
	statsReset = "config"  // (CONFIG RESETSTAT)
	minCallsPP = 0.05      // commands below this many calls per pair are not shown
	srvCostCtx = 10 * time.Second
)

// costSampler reads a server's cost around a measured window.
type costSampler interface {
	// begin is called when the window starts.
	begin() error
	// end is called when it ends, with the pairs measured in it; it
	// returns the metrics of the window.
	end(pairs float64) (map[string]float64, error)
}

// redisCost samples one Redis, or every master of a Cluster (their sums).
type redisCost struct {
	nodes []*redis.Client
	cpu0  float64
}

// newRedisCost returns a sampler of the Redis servers at addrs; close it.
func newRedisCost(addrs ...string) *redisCost {
	c := &redisCost{}
	for _, a := range addrs {
		c.nodes = append(c.nodes, redis.NewClient(&redis.Options{Addr: a, PoolSize: 1}))
	}
	return c
}

func (c *redisCost) close() {
	for _, n := range c.nodes {
		_ = n.Close()
	}
}

func (c *redisCost) begin() error {
	ctx, cancel := context.WithTimeout(context.Background(), srvCostCtx)
	defer cancel()
	for _, n := range c.nodes {
		if err := n.ConfigResetStat(ctx).Err(); err != nil {
			return fmt.Errorf("CONFIG RESETSTAT: %w", err)
		}
	}
	cpu, err := c.cpu(ctx)
	c.cpu0 = cpu
	return err
}

func (c *redisCost) end(pairs float64) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), srvCostCtx)
	defer cancel()
	cpu, err := c.cpu(ctx)
	if err != nil {
		return nil, err
	}
	if pairs <= 0 {
		return nil, fmt.Errorf("no pair in the window")
	}
	out := map[string]float64{mSrvCPU: (cpu - c.cpu0) * 1e6 / pairs}
	calls, usec := map[string]float64{}, map[string]float64{}
	for _, n := range c.nodes {
		stats, err := n.Info(ctx, "commandstats").Result()
		if err != nil {
			return nil, err
		}
		for name, s := range parseCommandStats(stats) {
			calls[name] += s[0]
			usec[name] += s[1]
		}
	}
	for name, n := range calls {
		if name == statsOwn || name == statsReset || n == 0 {
			continue
		}
		out[mCallsPfx+name] = n / pairs
		out[mUsecPfx+name] = usec[name] / n
	}
	return out, nil
}

// cpu returns the sum of the nodes' used_cpu_sys + used_cpu_user, seconds.
func (c *redisCost) cpu(ctx context.Context) (float64, error) {
	var sum float64
	for _, n := range c.nodes {
		info, err := n.Info(ctx, "cpu").Result()
		if err != nil {
			return 0, err
		}
		v, ok := infoCPU(info)
		if !ok {
			return 0, fmt.Errorf("INFO cpu without used_cpu_sys/used_cpu_user")
		}
		sum += v
	}
	return sum, nil
}

// infoCPU returns used_cpu_sys + used_cpu_user of an INFO cpu reply.
func infoCPU(info string) (float64, bool) {
	var sum float64
	seen := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, false
			}
			sum += f
			seen++
		}
	}
	return sum, seen == 2
}

// parseCommandStats reads INFO commandstats: command -> {calls, usec}.
// A subcommand's line (cmdstat_client|setinfo) counts for its command.
func parseCommandStats(info string) map[string][2]float64 {
	out := map[string][2]float64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name, _, _ = strings.Cut(strings.TrimPrefix(name, "cmdstat_"), "|")
		s := out[name]
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			switch k {
			case "calls":
				s[0] += f
			case "usec":
				s[1] += f
			}
		}
		out[name] = s
	}
	return out
}

// procCost samples a server process's CPU from /proc.
type procCost struct {
	pid  int
	cpu0 float64
}

func (c *procCost) begin() error {
	c.cpu0 = procCPU(c.pid)
	if math.IsNaN(c.cpu0) {
		return fmt.Errorf("no CPU time of process %d", c.pid)
	}
	return nil
}

func (c *procCost) end(pairs float64) (map[string]float64, error) {
	cpu := procCPU(c.pid)
	if math.IsNaN(cpu) || pairs <= 0 {
		return nil, fmt.Errorf("no CPU time of process %d, or no pair", c.pid)
	}
	return map[string]float64{mSrvCPU: (cpu - c.cpu0) * 1e6 / pairs}, nil
}

// merged returns f with m's metrics added.
func merged(f, m map[string]float64) map[string]float64 {
	for k, v := range m {
		f[k] = v
	}
	return f
}

// callsCell renders Redis's µs per call of the commands a row sends itself
// (its top-level commands: lib.sends), each with its calls per pair:
// "evalsha 4.2 µs ×2.00". Medians of the run medians.
func callsCell(s *burstStore, part string, l lib) string {
	return callsCellOf(s, part, l.name, l.sends, medianOfRuns)
}

// callsCellOf is callsCell for the row named row, with the median m.
func callsCellOf(s *burstStore, part, row string, sends []string, m func([][]float64) float64) string {
	var parts []string
	for _, name := range sends {
		calls := m(s.values(part, row, mCallsPfx+name))
		if !finite(calls) || calls < minCallsPP {
			continue
		}
		usec := m(s.values(part, row, mUsecPfx+name))
		parts = append(parts, fmt.Sprintf("%s %.2f µs ×%.2f", name, usec, calls))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// commandsSeen lists the commands of part's bursts of row with at least
// minCallsPP calls per pair (for the log and -v).
func commandsSeen(f map[string]float64) string {
	var out []string
	for k, v := range f {
		if name, ok := strings.CutPrefix(k, mCallsPfx); ok && v >= minCallsPP {
			out = append(out, fmt.Sprintf("%s %.2f µs ×%.2f", name, f[mUsecPfx+name], v))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// perScriptPair rescales a window's metrics, sampled as for one pair, to
// its pairs counted by Redis: EVALSHA and EVAL calls over 2 (an acquire and
// a release script a pair). For the real Redisson, whose worker measures
// inside the JVM: the window is then the worker's whole job, its warm-up
// included. nil for nil.
func perScriptPair(m map[string]float64) map[string]float64 {
	pairs := (m[mCallsPfx+"evalsha"] + m[mCallsPfx+"eval"]) / 2
	if m == nil || pairs <= 0 {
		return nil
	}
	out := map[string]float64{}
	for k, v := range m {
		switch {
		case k == mSrvCPU, strings.HasPrefix(k, mCallsPfx):
			out[k] = v / pairs
		default:
			out[k] = v
		}
	}
	return out
}

// medianOfBursts returns the median of every burst's value (NaN: none).
func medianOfBursts(per [][]float64) float64 {
	m, _, _ := med(pooled(per))
	return m
}
