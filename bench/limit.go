package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// --- physical limit

// pingRTT returns the PING round trip p50 and p99 over n pings.
func pingRTT(addr string, n int) (p50, p99 time.Duration, err error) {
	rdb := newRedis(addr, 1, nil)
	defer rdb.Close()
	ctx := context.Background()
	d := make([]time.Duration, 0, n)
	for i := 0; i < n+100; i++ {
		start := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			return 0, 0, err
		}
		if i >= 100 {
			d = append(d, time.Since(start))
		}
	}
	return pct(d, 50), pct(d, 99), nil
}

// benchClients is the number of connections of redis-benchmark: as many
// as the goroutines of (b).
const benchClients = 64

// setRPS runs redis-benchmark SET (benchClients connections, no pipelining,
// 200,000 requests) against addr and returns its requests per second and
// its summary line.
func setRPS(addr string) (float64, string, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return 0, "", fmt.Errorf("redis-benchmark not installed: %w", err)
	}
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(bin, "-h", host, "-p", port, "-t", "set", "-c", strconv.Itoa(benchClients), "-n", "200000", "-q").Output()
	if err != nil {
		return 0, "", fmt.Errorf("redis-benchmark: %w", err)
	}
	// -q rewrites a progress line with \r and ends with the summary:
	// "SET: 151057.41 requests per second, p50=0.175 msec".
	for _, l := range strings.FieldsFunc(string(out), func(r rune) bool { return r == '\r' || r == '\n' }) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "SET: "); ok && strings.Contains(rest, "requests per second") {
			rps, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return rps, strings.TrimSpace(l), err
		}
	}
	return 0, "", fmt.Errorf("redis-benchmark: no SET summary in %q", out)
}
