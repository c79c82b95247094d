package main

// --cluster: (b), 64 goroutines on keys of their own, on a local Redis
// Cluster of 3 masters beside one redis-server, in the same run (issue 22).
// goredisson with its defaults on a *redis.ClusterClient, and the naive
// SET NX lock on the same ClusterClient, and rueidislock tuned on a rueidis
// client of its own, against the same rows on the single server. Bursts of the six rows are
// interleaved (the order rotated every round), as this VM's round trip
// swings between modes; figures are medians over the rounds. The target:
// goredisson on the Cluster makes at least 0.95x the pairs/s it makes on
// one node (issue 22), and keeps at least the share rueidislock tuned
// keeps in the same run (issue 32).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// clusterTarget is the least share of one node's (b) pairs/s goredisson
// must keep on the Cluster.
const clusterTarget = 0.95

// clusterGoroutines is (b)'s number of owners, each on a key of its own.
const clusterGoroutines = 64

// clusterRow is one (library, topology) row of the cluster run.
type clusterRow struct {
	name    string
	cluster bool
	open    func(rdb redis.UniversalClient, addrs []string) (newOwner func(key string) pairFunc, close func(), err error)
}

// pairFunc takes and gives back its owner's lock once.
type pairFunc func(ctx context.Context) error

func clusterRows() []clusterRow {
	var rows []clusterRow
	for _, onCluster := range []bool{false, true} {
		rows = append(rows,
			clusterRow{name: rlockName, cluster: onCluster, open: openClusterRLock},
			clusterRow{name: naiveName, cluster: onCluster, open: openClusterNaive},
			clusterRow{name: rueidisTunedName, cluster: onCluster, open: openClusterRueidis})
	}
	return rows
}

func (r clusterRow) label() string {
	if r.cluster {
		return r.name + ", Cluster (3 masters)"
	}
	return r.name + ", one node"
}

// openClusterRLock opens goredisson with its defaults.
func openClusterRLock(rdb redis.UniversalClient, _ []string) (func(string) pairFunc, func(), error) {
	c, err := rlock.NewClient(rdb)
	if err != nil {
		return nil, nil, err
	}
	return func(key string) pairFunc {
		l := c.NewLock(key)
		owner := ctxowner.New(context.Background())
		return func(ctx context.Context) error {
			if err := l.Lock(owner); err != nil {
				return err
			}
			return l.Unlock(owner)
		}
	}, func() { _ = c.Close() }, nil
}

// clusterNaiveRelease is the naive lock's compare-and-delete.
var clusterNaiveRelease = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

// openClusterNaive opens the naive SET NX PX lock on rdb.
func openClusterNaive(rdb redis.UniversalClient, _ []string) (func(string) pairFunc, func(), error) {
	return func(key string) pairFunc {
		value := "owner-" + strconv.FormatInt(ownerSeq.Add(1), 10)
		return func(ctx context.Context) error {
			for {
				ok, err := rdb.SetNX(ctx, key, value, leaseTTL).Result()
				if err != nil {
					return err
				}
				if ok {
					break
				}
				time.Sleep(time.Millisecond)
			}
			n, err := clusterNaiveRelease.Run(ctx, rdb, []string{key}, value).Int()
			if err == nil && n == 0 {
				return errNotHeld
			}
			return err
		}
	}, func() {}, nil
}

// openClusterRueidis opens rueidislock with the tuned settings of the
// default run (one key per lock, NoLoopTracking, TryNextAfter 1 s) on a
// rueidis client of its own to addrs: rueidis finds the Cluster itself.
func openClusterRueidis(_ redis.UniversalClient, addrs []string) (func(string) pairFunc, func(), error) {
	newMutex, closeLocker, err := openRueidislock(true)(env{addr: addrs[0], addrs: addrs})
	if err != nil {
		return nil, nil, err
	}
	return func(key string) pairFunc {
		return func(ctx context.Context) error {
			m := newMutex(ctx, key)
			if err := m.lock(); err != nil {
				return err
			}
			return m.unlock()
		}
	}, closeLocker, nil
}

// clusterBurst is one row's measurement: pairs/s, the process's CPU per
// pair (user + system, all goroutines: the client's cost) and the
// redis-server processes' (all of the topology's).
type clusterBurst struct {
	perSec     float64
	cpuPerPair time.Duration
	srvPerPair time.Duration
}

// measureClusterBurst runs clusterGoroutines owners of row on keys of
// their own for warm, then counts their pairs and the process's CPU for d.
func measureClusterBurst(row clusterRow, rdb redis.UniversalClient, addrs []string, servers []*redistest.Server, warm, d time.Duration, run string) (clusterBurst, error) {
	newOwner, closeRow, err := row.open(rdb, addrs)
	if err != nil {
		return clusterBurst{}, err
	}
	defer closeRow()
	var pairs, progress atomic.Int64
	ctx, stop := withStallGuard(&progress)
	defer stop()
	var firstErr atomic.Value
	start := time.Now().Add(warm)
	end := start.Add(d)
	var cpuStart time.Duration
	var srvStart float64
	var startOnce sync.Once
	var wg sync.WaitGroup
	for g := range clusterGoroutines {
		pair := newOwner("bench:cluster:" + run + ":" + strconv.Itoa(g))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for now := time.Now(); now.Before(end); now = time.Now() {
				err := pair(ctx)
				progress.Add(1)
				if err != nil {
					firstErr.CompareAndSwap(nil, stalled(ctx, err))
					return
				}
				if !now.Before(start) {
					startOnce.Do(func() { cpuStart, srvStart = processCPU(), serversCPU(servers) })
					pairs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	cpu := processCPU() - cpuStart
	srv := serversCPU(servers) - srvStart
	if err, ok := firstErr.Load().(error); ok {
		return clusterBurst{}, err
	}
	n := pairs.Load()
	if n == 0 {
		return clusterBurst{}, errors.New("no pair completed")
	}
	return clusterBurst{perSec: float64(n) / d.Seconds(), cpuPerPair: cpu / time.Duration(n),
		srvPerPair: time.Duration(srv * 1e9 / float64(n))}, nil
}

// serversCPU returns the CPU seconds the servers' processes used so far.
func serversCPU(servers []*redistest.Server) float64 {
	var sum float64
	for _, s := range servers {
		sum += procCPU(s.Pid())
	}
	return sum
}

// processCPU returns the user and system CPU time this process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runCluster is --cluster: it starts one redis-server and a 3-master
// Cluster (no replicas: one node has none either, and a replica process
// would take CPU from the two being compared), measures the rows in
// interleaved rounds, and writes the report.
func runCluster(rounds int, burst time.Duration, out string) error {
	node, err := redistest.Start()
	if err != nil {
		return err
	}
	defer node.Close()
	cl, err := redistest.StartCluster(3, 0)
	if err != nil {
		return err
	}
	defer cl.Close()
	version := redisVersion(node.Addr)
	logf("one node %s, a Cluster of 3 masters %v (%s); %d rounds of %v bursts", node.Addr, cl.Addrs(), version, rounds, burst)

	// One go-redis client per topology for the whole run, as an
	// application keeps one; pools as large as the owners.
	single := redis.NewClient(&redis.Options{Addr: node.Addr, PoolSize: clusterGoroutines + 8})
	defer single.Close()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), PoolSize: clusterGoroutines + 8})
	defer cc.Close()
	if err := cc.ForEachShard(context.Background(), func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }); err != nil {
		return err
	}

	rows := clusterRows()
	results := make(map[string][]clusterBurst)
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	for r := range rounds {
		for i := range rows {
			row := rows[(i+r)%len(rows)]
			rdb, addrs, servers := redis.UniversalClient(single), []string{node.Addr}, []*redistest.Server{node}
			if row.cluster {
				rdb, addrs, servers = cc, cl.Addrs(), cl.Nodes
			}
			res, err := measureClusterBurst(row, rdb, addrs, servers, 200*time.Millisecond, burst, runID+":"+strconv.Itoa(r)+":"+strconv.Itoa(i))
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", row.label(), r+1, err)
			}
			results[row.label()] = append(results[row.label()], res)
			logf("(b) %-45s round %d: %8.0f pairs/s, client CPU %v/pair, servers %v/pair", row.label(), r+1, res.perSec,
				res.cpuPerPair.Round(100*time.Nanosecond), res.srvPerPair.Round(100*time.Nanosecond))
		}
	}
	md := clusterMarkdown(rows, results, version, rounds, burst)
	fmt.Print(md)
	return os.WriteFile(out, []byte(md), 0o644)
}

// clusterMarkdown renders the rows' medians (with min-max), the ratios to
// one node, and the target.
func clusterMarkdown(rows []clusterRow, results map[string][]clusterBurst, version string, rounds int, burst time.Duration) string {
	median := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	med := func(label string) (perSec, lo, hi float64, cpu, srv time.Duration) {
		var rates []float64
		var cpus, srvs []time.Duration
		for _, r := range results[label] {
			rates = append(rates, r.perSec)
			cpus = append(cpus, r.cpuPerPair)
			srvs = append(srvs, r.srvPerPair)
		}
		sort.Float64s(rates)
		return rates[len(rates)/2], rates[0], rates[len(rates)-1], median(cpus), median(srvs)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# (b) on a Redis Cluster beside one node\n\n")
	fmt.Fprintf(&b, "%d goroutines, each on a key of its own, lock+unlock pairs; redis-server %s on loopback: one node, and a\n"+
		"Cluster of 3 masters (no replicas) on the same machine, %d cores, %s. Bursts of %v after 200 ms of warm-up, the\n"+
		"%d rows interleaved, %d rounds; median (min-max). CPU: the bench process's user+system time per pair (the client's cost).\n"+
		"Written by `go run . --cluster` in bench/.\n\n", clusterGoroutines, version, numCPU(), goVersion(), burst, len(rows), rounds)
	b.WriteString("| row | pairs/s | vs one node | client CPU per pair | vs one node | servers' CPU per pair | vs one node |\n|---|---|---|---|---|---|---|\n")
	ratios := map[string]float64{}
	for _, row := range rows {
		perSec, lo, hi, cpu, srv := med(row.label())
		vs, cvs, svs := "", "", ""
		if row.cluster {
			base := row
			base.cluster = false
			bPerSec, _, _, bCPU, bSrv := med(base.label())
			r := perSec / bPerSec
			vs = fmt.Sprintf("%.2fx", r)
			cvs = fmt.Sprintf("%+.0f %%", 100*(float64(cpu)/float64(bCPU)-1))
			svs = fmt.Sprintf("%+.0f %%", 100*(float64(srv)/float64(bSrv)-1))
			ratios[row.name] = r
		}
		fmt.Fprintf(&b, "| %s | %.0f (%.0f-%.0f) | %s | %.1f µs | %s | %.1f µs | %s |\n", row.label(), perSec, lo, hi, vs,
			float64(cpu)/1e3, cvs, float64(srv)/1e3, svs)
	}
	ratio := ratios[rlockName]
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISSED"
	}
	fmt.Fprintf(&b, "\nTarget (issue 22): goredisson on the Cluster at least %.2fx its pairs/s on one node: **%.2fx, %s**.\n", clusterTarget, ratio, verdict(ratio >= clusterTarget))
	if peer, ok := ratios[rueidisTunedName]; ok {
		fmt.Fprintf(&b, "Target (issue 32): goredisson's Cluster / one node ratio at least rueidislock tuned's in the same run (%.2fx): **%.2fx, %s**.\n", peer, ratio, verdict(ratio >= peer))
	}
	return b.String()
}
