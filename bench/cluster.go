package main

// --cluster: (b), 64 goroutines on keys of their own, on a local Redis
// Cluster of 3 masters beside one redis-server, in the same run (issue 22).
// goredisson with its defaults on a *redis.ClusterClient, and the naive
// SET NX lock on the same ClusterClient, and rueidislock tuned on a rueidis
// client of its own, against the same rows on the single server. Bursts of the six rows
// (bursts.go: every row once per burst, the order rotated), as this VM's round trip
// swings between modes; figures are medians over the rounds. The target:
// goredisson on the Cluster makes at least 0.95x the pairs/s it makes on
// one node (issue 22), and keeps at least the share rueidislock tuned
// keeps in the same run (issue 32).

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
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

// measureClusterBurst runs clusterGoroutines owners of row on keys of
// their own for warm, then counts their pairs, the process's CPU (the
// client's) and the servers' cost (cost: INFO cpu and commandstats of every
// master of the topology) for d.
func measureClusterBurst(row clusterRow, rdb redis.UniversalClient, addrs []string, cost *redisCost, warm, d time.Duration, run string) (map[string]float64, error) {
	newOwner, closeRow, err := row.open(rdb, addrs)
	if err != nil {
		return nil, err
	}
	defer closeRow()
	var cpuStart time.Duration
	var began error
	n, err := ownersLoop(clusterGoroutines, warm, d, func(ctx context.Context, g int) func() error {
		pair := newOwner("bench:cluster:" + run + ":" + strconv.Itoa(g))
		return func() error { return pair(ctx) }
	}, func() { cpuStart, began = cpuTime(), cost.begin() })
	cpu := cpuTime() - cpuStart
	if err != nil {
		return nil, err
	}
	f := map[string]float64{"pairs/s": float64(n) / d.Seconds(), "client cpu": float64(cpu.Nanoseconds()) / 1e3 / float64(n)}
	return merged(f, endCost(row.label(), cost, began, float64(n))), nil
}

// runCluster is --cluster: the bursts of clusterBursts, and the report.
func runCluster(rounds int, burst time.Duration, out string) error {
	var s burstStore
	version, err := clusterBursts(&s, "cl", rounds, burst)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# (b) on a Redis Cluster beside one node\n\n")
	fmt.Fprintf(&b, "%d goroutines, each on a key of its own, lock+unlock pairs; redis-server %s on loopback: one node, and a\n"+
		"Cluster of 3 masters (no replicas) on the same machine, %d cores, %s. %d bursts of the %d rows, the order rotated by one\n"+
		"row from burst to burst; each row %v after 200 ms of warm-up. Written by `go run . --cluster` in bench/.\n",
		clusterGoroutines, version, numCPU(), goVersion(), rounds, len(clusterRows()), burst)
	clusterTable(&b, &s, "cl")
	md := b.String()
	fmt.Print(md)
	return os.WriteFile(out, []byte(md), 0o644)
}

// clusterBursts starts one redis-server and a 3-master Cluster (no
// replicas: one node has none either, and a replica process would take CPU
// from the two being compared), measures the rows in rounds bursts of d
// (runBursts: every row once per burst, the order rotated), records them as
// part in s (row: its label), and returns the servers' version.
func clusterBursts(s *burstStore, part string, rounds int, d time.Duration) (string, error) {
	node, err := redistest.Start()
	if err != nil {
		return "", err
	}
	defer node.Close()
	cl, err := redistest.StartCluster(3, 0)
	if err != nil {
		return "", fmt.Errorf("no Cluster: %w", err)
	}
	defer cl.Close()
	version := redisVersion(node.Addr)
	logf("one node %s, a Cluster of 3 masters %v (%s); %d bursts of %v", node.Addr, cl.Addrs(), version, rounds, d)

	// One go-redis client per topology for the whole run, as an
	// application keeps one; pools as large as the owners.
	single := redis.NewClient(&redis.Options{Addr: node.Addr, PoolSize: clusterGoroutines + 8})
	defer single.Close()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), PoolSize: clusterGoroutines + 8})
	defer cc.Close()
	if err := cc.ForEachShard(context.Background(), func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }); err != nil {
		return "", err
	}
	nodeCost, clusterCost := newRedisCost(node.Addr), newRedisCost(cl.Addrs()...)
	defer nodeCost.close()
	defer clusterCost.close()
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	var failed error
	runBursts(s, burstPlan[clusterRow]{
		part: part, n: rounds, rows: clusterRows(), name: clusterRow.label,
		measure: func(row clusterRow, b int) (map[string]float64, error) {
			rdb, addrs, cost := redis.UniversalClient(single), []string{node.Addr}, nodeCost
			if row.cluster {
				rdb, addrs, cost = cc, cl.Addrs(), clusterCost
			}
			f, err := measureClusterBurst(row, rdb, addrs, cost, 200*time.Millisecond, d, runID+":"+strconv.Itoa(b)+":"+slug(row.label()))
			if err == nil {
				logf("(%s) %-45s burst %d: %8.0f pairs/s, client CPU %.1f µs/pair, Redis CPU %.1f µs/pair", part, row.label(), b+1, f["pairs/s"], f["client cpu"], f[mSrvCPU])
			}
			return f, err
		},
		fail: func(row clusterRow, err error) {
			logf("(%s) %s failed: %v", part, row.label(), err)
			if failed == nil {
				failed = fmt.Errorf("%s: %w", row.label(), err)
			}
		},
	})
	return version, failed
}

// clusterTable renders part's cluster rows: medians over every burst with
// their min–max, and each Cluster row's figures over its one-node row's in
// the same burst; then the targets.
func clusterTable(b *strings.Builder, s *burstStore, part string) {
	b.WriteString("\n| row | pairs/s | Cluster ÷ one node | client CPU µs/pair | ÷ one node | Redis CPU µs/pair (all masters) | ÷ one node | Redis µs per call |\n|---|---|---|---|---|---|---|---|\n")
	for _, row := range clusterRows() {
		vs := func(metric string) string { return spreadOf(pooled(s.values(part, row.label(), metric)), fNum) }
		rs := func(metric string) string {
			if !row.cluster {
				return ""
			}
			one := row
			one.cluster = false
			return spreadOf(pooled(s.ratios(part, row.label(), one.label(), metric)), fTimes)
		}
		l, _ := findLib(row.name)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", row.label(), vs("pairs/s"), rs("pairs/s"),
			vs("client cpu"), rs("client cpu"), vs(mSrvCPU), rs(mSrvCPU), callsCellOf(s, part, row.label(), l.sends, medianOfBursts))
	}
	ours, naive, peer := clusterRatios(s, part, rlockName), clusterRatios(s, part, naiveName), clusterRatios(s, part, rueidisTunedName)
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISSED"
	}
	g, _, _ := med(ours)
	fmt.Fprintf(b, "\nTarget (issue 22): goredisson on the Cluster at least %.2fx its pairs/s on one node: **%s, %s**.\n", clusterTarget, spreadOf(ours, fTimes), verdict(g >= clusterTarget))
	if len(peer) > 0 {
		p, _, _ := med(peer)
		fmt.Fprintf(b, "Target (issue 32): goredisson's Cluster ÷ one node at least rueidislock tuned's (%s): **%s, %s**.\n", spreadOf(peer, fTimes), fTimes(g), verdict(g >= p))
	}
	if gap := clusterGap(s, part); len(gap) > 0 {
		m, _, _ := med(gap)
		fmt.Fprintf(b, "Target (issue 41): goredisson's Cluster ÷ one node within 0.05 of the naive lock's (%s), per burst: goredisson's less the naive lock's %s: **%s**.\n",
			spreadOf(naive, fTimes), spreadOf(gap, fSigned), verdict(m >= -clusterGapTarget))
	}
}

// clusterGapTarget: goredisson's Cluster ÷ one node may be at most this
// below the naive lock's (issue 41).
const clusterGapTarget = 0.05

// clusterRatios returns name's Cluster ÷ one node pairs/s of every burst.
func clusterRatios(s *burstStore, part, name string) []float64 {
	one, on := clusterRow{name: name}, clusterRow{name: name, cluster: true}
	return pooled(s.ratios(part, on.label(), one.label(), "pairs/s"))
}

// clusterGap returns, per burst, goredisson's Cluster ÷ one node less the
// naive lock's.
func clusterGap(s *burstStore, part string) []float64 {
	var out []float64
	ratio := func(f figures, name string) float64 {
		one, on := clusterRow{name: name}, clusterRow{name: name, cluster: true}
		return f[on.label()]["pairs/s"] / f[one.label()]["pairs/s"]
	}
	s.each(part, func(_ int, f figures) {
		if v := ratio(f, rlockName) - ratio(f, naiveName); finite(v) {
			out = append(out, v)
		}
	})
	return out
}

// fSigned renders a difference with its sign.
func fSigned(v float64) string { return fmt.Sprintf("%+.2f", v) }
