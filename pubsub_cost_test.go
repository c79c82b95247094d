package goredisson_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// BenchmarkPubSubKinds measures what publishing with PUBLISH, SPUBLISH or
// both costs per unlock on a loopback 3-master Cluster (docs/redisson.md
// #releases): one Client, one lock name, Lock+Unlock per op, no waiter. It
// reports the servers' own accounting (INFO commandstats: µs per release
// script, and per PUBLISH/SPUBLISH inside it) and their CPU (INFO cpu,
// summed over every node: a classic PUBLISH crosses the cluster bus to
// all of them). Then, per waiting name, the subscriptions and the servers'
// memory: 1,000 waiters on 1,000 names of a second Client.
//
//	go test -run '^$' -bench PubSubKinds -benchtime 5000x .
func BenchmarkPubSubKinds(b *testing.B) {
	cluster, err := redistest.StartCluster(3, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Close()
	ctx := context.Background()
	modes := []struct {
		name string
		mode rlock.PubSubMode
	}{{"sharded", rlock.PubSubSharded}, {"classic", rlock.PubSubClassic}, {"both", rlock.PubSubBoth}}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
			defer cc.Close()
			c, err := rlock.NewClient(cc, rlock.WithPubSubMode(m.mode), rlock.WithReplicaSync(0, 0), rlock.WithClientRegistry(false))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			owner := ctxowner.New(ctx)
			lock := c.NewLock("{cost}:" + m.name)
			if err := lock.Lock(owner); err != nil { // warm up: scripts loaded, lanes made
				b.Fatal(err)
			}
			if err := lock.Unlock(owner); err != nil {
				b.Fatal(err)
			}
			resetStats(b, cluster)
			cpu0 := clusterCPU(b, cluster)
			b.ResetTimer()
			for range b.N {
				if err := lock.Lock(owner); err != nil {
					b.Fatal(err)
				}
				if err := lock.Unlock(owner); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu := clusterCPU(b, cluster) - cpu0
			stats := commandStats(b, cluster)
			b.ReportMetric(cpu/float64(b.N), "server-cpu-us/op")
			for _, cmd := range []string{"evalsha", "publish", "spublish"} {
				if s, ok := stats[cmd]; ok {
					b.ReportMetric(s.usec/float64(b.N), cmd+"-us/op")
				}
			}
			// Per waiting name: subscriptions and server memory.
			holder, waiter := c, newPubSubClient(b, cluster, m.mode)
			const names = 1000
			hctx := ctxowner.New(ctx)
			mem0 := clusterMemory(b, cluster)
			done := make(chan error, names)
			wctx, cancel := context.WithCancel(ctx)
			for i := range names {
				name := "{w" + strconv.Itoa(i) + "}"
				if err := holder.NewLock(name).LockLease(hctx, time.Minute); err != nil {
					b.Fatal(err)
				}
				go func() { done <- waiter.NewLock(name).Lock(ctxowner.New(wctx)) }()
			}
			var classic, shard int64
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				classic, shard = subscriptions(b, cluster)
				if classic+shard >= names {
					break
				}
			}
			time.Sleep(500 * time.Millisecond)
			classic, shard = subscriptions(b, cluster)
			mem := clusterMemory(b, cluster) - mem0
			b.ReportMetric(float64(classic)/names, "subscribe/name")
			b.ReportMetric(float64(shard)/names, "ssubscribe/name")
			b.ReportMetric(float64(mem)/names, "server-bytes/name")
			cancel()
			for range names {
				<-done
			}
			for i := range names {
				_ = holder.NewLock("{w" + strconv.Itoa(i) + "}").Unlock(hctx)
			}
		})
	}
}

func newPubSubClient(b *testing.B, cluster *redistest.Cluster, mode rlock.PubSubMode) *rlock.Client {
	b.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	b.Cleanup(func() { _ = cc.Close() })
	c, err := rlock.NewClient(cc, rlock.WithPubSubMode(mode), rlock.WithReplicaSync(0, 0), rlock.WithClientRegistry(false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// eachNode runs f on a client of every node of the cluster.
func eachNode(b *testing.B, cluster *redistest.Cluster, f func(*redis.Client)) {
	b.Helper()
	for _, n := range cluster.Nodes {
		c := n.Client()
		f(c)
		_ = c.Close()
	}
}

func resetStats(b *testing.B, cluster *redistest.Cluster) {
	eachNode(b, cluster, func(c *redis.Client) { _ = c.ConfigResetStat(context.Background()).Err() })
}

// infoFields returns the numeric fields of an INFO section of every node.
func infoFields(b *testing.B, cluster *redistest.Cluster, section string, f func(name, value string)) {
	eachNode(b, cluster, func(c *redis.Client) {
		for _, line := range strings.Split(c.Info(context.Background(), section).Val(), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				f(k, v)
			}
		}
	})
}

// clusterCPU is the servers' CPU time, µs, summed over every node.
func clusterCPU(b *testing.B, cluster *redistest.Cluster) float64 {
	var s float64
	infoFields(b, cluster, "cpu", func(k, v string) {
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			s += f * 1e6
		}
	})
	return s
}

func clusterMemory(b *testing.B, cluster *redistest.Cluster) int64 {
	var s int64
	infoFields(b, cluster, "memory", func(k, v string) {
		if k == "used_memory" {
			n, _ := strconv.ParseInt(v, 10, 64)
			s += n
		}
	})
	return s
}

type cmdStat struct{ calls, usec float64 }

// commandStats sums INFO commandstats over every node.
func commandStats(b *testing.B, cluster *redistest.Cluster) map[string]cmdStat {
	out := map[string]cmdStat{}
	infoFields(b, cluster, "commandstats", func(k, v string) {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			return
		}
		var s cmdStat
		for _, kv := range strings.Split(v, ",") {
			f, val, _ := strings.Cut(kv, "=")
			x, _ := strconv.ParseFloat(val, 64)
			switch f {
			case "calls":
				s.calls = x
			case "usec":
				s.usec = x
			}
		}
		o := out[name]
		out[name] = cmdStat{o.calls + s.calls, o.usec + s.usec}
	})
	return out
}

// subscriptions counts the lock channels subscribed over every node.
func subscriptions(b *testing.B, cluster *redistest.Cluster) (classic, sharded int64) {
	eachNode(b, cluster, func(c *redis.Client) {
		ctx := context.Background()
		classic += int64(len(c.PubSubChannels(ctx, "redisson_lock__channel:*").Val()))
		sharded += int64(len(c.PubSubShardChannels(ctx, "redisson_lock__channel:*").Val()))
	})
	return classic, sharded
}
