package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of real redis-server processes on loopback.
type Cluster struct {
	// Nodes are every node, masters first as redis-cli assigned them.
	Nodes []*Server
}

// CLIBinary returns the path of redis-cli (override with REDIS_CLI).
func CLIBinary() (string, error) {
	if p := os.Getenv("REDIS_CLI"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("redis-cli")
	if err != nil {
		return "", fmt.Errorf("redistest: redis-cli not found on PATH (apt-get install redis-tools, or set REDIS_CLI): %w", err)
	}
	return p, nil
}

// StartCluster starts masters*(1+replicas) cluster-enabled servers, joins
// them with redis-cli --cluster create (replicas per master) and waits until
// every node reports the cluster ok.
func StartCluster(masters, replicas int) (*Cluster, error) {
	cli, err := CLIBinary()
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for range masters * (1 + replicas) {
		// No 5 s wait before a replica's first full sync (Redis 7's
		// default delay), so that replicas are in sync (and WAIT answers)
		// once StartCluster returns.
		s, err := Start(WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(ClusterNodeTimeout/time.Millisecond)), "--repl-diskless-sync-delay", "0"))
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %w: %s", err, out)
	}
	if err := c.waitOK(30 * time.Second); err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := c.waitRoles(masters*replicas, 30*time.Second); err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := c.WaitReplicasSynced(30 * time.Second); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// ClusterNodeTimeout is the cluster-node-timeout of StartCluster's nodes:
// how long a master may be unreachable before its replica takes over.
const ClusterNodeTimeout = 2 * time.Second

// Addrs returns the nodes' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr
	}
	return out
}

// waitOK waits until every node sees the whole cluster in state ok.
func (c *Cluster) waitOK(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, s := range c.Nodes {
		rdb := s.Client()
		for {
			info, err := rdb.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes))+"\r") {
				break
			}
			if time.Now().After(deadline) {
				_ = rdb.Close()
				return fmt.Errorf("redistest: cluster node %s not ok: %v %s", s.Addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = rdb.Close()
	}
	return nil
}

// waitRoles waits until every node lists the given number of replicas in
// CLUSTER NODES (right after creation, a node may still list a replica as a
// master without slots).
func (c *Cluster) waitRoles(replicas int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, s := range c.Nodes {
		rdb := s.Client()
		for {
			text, err := rdb.ClusterNodes(context.Background()).Result()
			n := 0
			for _, node := range parseNodes(text) {
				if !node.Master {
					n++
				}
			}
			if err == nil && n == replicas {
				break
			}
			if time.Now().After(deadline) {
				_ = rdb.Close()
				return fmt.Errorf("redistest: node %s lists %d replicas, want %d: %v", s.Addr, n, replicas, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = rdb.Close()
	}
	return nil
}

// Close stops every node.
func (c *Cluster) Close() error {
	var errs []error
	for _, s := range c.Nodes {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// Sentinels is a primary, its replicas and the Sentinels that watch them.
type Sentinels struct {
	// MasterName is the name the Sentinels know the primary by.
	MasterName string
	// Primary is the server that started as primary; after a failover it
	// may be a replica (or stopped).
	Primary *Server
	// Replicas started as replicas of Primary.
	Replicas []*Server
	// Sentinels are the Sentinel processes.
	Sentinels []*Server
}

// StartSentinels starts a primary (with primaryOpts) with the given number
// of replicas and Sentinels (quorum: a majority of them), and waits until
// every Sentinel knows the replicas and the other Sentinels.
func StartSentinels(replicas, sentinels int, primaryOpts ...Option) (*Sentinels, error) {
	t := &Sentinels{MasterName: "goredisson"}
	// No 5 s wait before the first full sync (Redis 7's default delay).
	fast := WithArgs("--repl-diskless-sync-delay", "0")
	primary, err := Start(append([]Option{fast}, primaryOpts...)...)
	if err != nil {
		return nil, err
	}
	t.Primary = primary
	for range replicas {
		r, err := Start(fast, WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(primary.Port)))
		if err != nil {
			_ = t.Close()
			return nil, err
		}
		t.Replicas = append(t.Replicas, r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, r := range t.Replicas {
		if err := waitSynced(r, deadline); err != nil {
			_ = t.Close()
			return nil, err
		}
	}
	for range sentinels {
		s, err := Start(WithSentinelMonitor(t.MasterName, primary.Addr, sentinels/2+1))
		if err != nil {
			_ = t.Close()
			return nil, err
		}
		t.Sentinels = append(t.Sentinels, s)
	}
	for _, s := range t.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
		for {
			m, err := sc.Master(context.Background(), t.MasterName).Result()
			if err == nil && m["num-slaves"] == strconv.Itoa(replicas) && m["num-other-sentinels"] == strconv.Itoa(sentinels-1) {
				break
			}
			if time.Now().After(deadline) {
				_ = sc.Close()
				_ = t.Close()
				return nil, fmt.Errorf("redistest: sentinel %s not ready: %v %v", s.Addr, err, m)
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = sc.Close()
	}
	return t, nil
}

// SentinelAddrs returns the Sentinels' addresses.
func (t *Sentinels) SentinelAddrs() []string {
	out := make([]string, len(t.Sentinels))
	for i, s := range t.Sentinels {
		out[i] = s.Addr
	}
	return out
}

// CurrentPrimary asks the first reachable Sentinel for the primary's address.
func (t *Sentinels) CurrentPrimary(ctx context.Context) (string, error) {
	var errs []error
	for _, s := range t.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
		addr, err := sc.GetMasterAddrByName(ctx, t.MasterName).Result()
		_ = sc.Close()
		if err == nil && len(addr) == 2 {
			return addr[0] + ":" + addr[1], nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// Close stops every process.
func (t *Sentinels) Close() error {
	var errs []error
	for _, s := range t.Sentinels {
		errs = append(errs, s.Close())
	}
	for _, s := range t.Replicas {
		errs = append(errs, s.Close())
	}
	if t.Primary != nil {
		errs = append(errs, t.Primary.Close())
	}
	return errors.Join(errs...)
}

// waitSynced waits until the replica r has finished its sync with its primary.
func waitSynced(r *Server, deadline time.Time) error {
	rdb := r.Client()
	defer rdb.Close()
	for {
		info, err := rdb.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: replica %s not in sync: %v %s", r.Addr, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitSettled waits until the current primary (as the Sentinels report it)
// has every other running server of the topology as a replica in sync
// with it (state online), as after a failover once the old primary has
// rejoined.
func (t *Sentinels) WaitSettled(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		addr, err := t.CurrentPrimary(ctx)
		if err == nil {
			want := 0
			for _, s := range append([]*Server{t.Primary}, t.Replicas...) {
				if s.Pid() != 0 && s.Addr != addr {
					want++
				}
			}
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			info, ierr := rdb.Info(ctx, "replication").Result()
			_ = rdb.Close()
			if ierr == nil && strings.Contains(info, "role:master") && strings.Count(info, "state=online") == want {
				return nil
			}
			err = ierr
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: the topology did not settle within %v: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
