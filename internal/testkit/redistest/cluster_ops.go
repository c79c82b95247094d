package redistest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Topology changes of a Cluster, as operators make them: a slot migrated by
// hand (CLUSTER SETSLOT and MIGRATE, in steps a test can interleave with
// its load), a reshard by redis-cli, a coordinated failover (CLUSTER
// FAILOVER on a replica), and a master killed.

// NodeInfo is one line of CLUSTER NODES.
type NodeInfo struct {
	ID       string
	Addr     string // host:port
	Master   bool
	MasterID string // for a replica: its master's ID
	Failed   bool   // flagged fail (or fail?)
	Slots    [][2]int
}

// Serves reports whether the node serves slot.
func (n NodeInfo) Serves(slot int) bool {
	for _, r := range n.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// Server returns the cluster's server at addr, or nil.
func (c *Cluster) Server(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// Topology returns CLUSTER NODES as seen by the first running node.
func (c *Cluster) Topology(ctx context.Context) ([]NodeInfo, error) {
	var errs []error
	for _, s := range c.Nodes {
		if s.Pid() == 0 {
			continue
		}
		rdb := s.Client()
		text, err := rdb.ClusterNodes(ctx).Result()
		_ = rdb.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return parseNodes(text), nil
	}
	return nil, fmt.Errorf("redistest: no node answered CLUSTER NODES: %w", errors.Join(errs...))
}

func parseNodes(text string) []NodeInfo {
	var out []NodeInfo
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := NodeInfo{ID: f[0], Addr: addr, Master: strings.Contains(f[2], "master"),
			Failed: strings.Contains(f[2], "fail")}
		if f[3] != "-" {
			n.MasterID = f[3]
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated or imported
			}
			lo, hi, ok := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if ok {
				b, _ = strconv.Atoi(hi)
			}
			n.Slots = append(n.Slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out
}

// Owner returns the master that serves slot, as the cluster sees it now.
func (c *Cluster) Owner(ctx context.Context, slot int) (NodeInfo, error) {
	nodes, err := c.Topology(ctx)
	if err != nil {
		return NodeInfo{}, err
	}
	for _, n := range nodes {
		if n.Master && !n.Failed && n.Serves(slot) {
			return n, nil
		}
	}
	return NodeInfo{}, fmt.Errorf("redistest: no master serves slot %d", slot)
}

// Masters returns the masters that serve slots and are not flagged failed.
func (c *Cluster) Masters(ctx context.Context) ([]NodeInfo, error) {
	nodes, err := c.Topology(ctx)
	if err != nil {
		return nil, err
	}
	var out []NodeInfo
	for _, n := range nodes {
		if n.Master && !n.Failed && len(n.Slots) > 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// ReplicaOf returns a replica of the master with the given ID.
func (c *Cluster) ReplicaOf(ctx context.Context, masterID string) (NodeInfo, error) {
	nodes, err := c.Topology(ctx)
	if err != nil {
		return NodeInfo{}, err
	}
	for _, n := range nodes {
		if !n.Master && !n.Failed && n.MasterID == masterID {
			return n, nil
		}
	}
	return NodeInfo{}, fmt.Errorf("redistest: master %s has no replica", masterID)
}

// Migration is a slot migration in progress, made by hand as redis-cli
// does it: Begin marks the slot IMPORTING on the target and MIGRATING on
// the source, MoveKeys MIGRATEs its keys, Finish assigns the slot to the
// target on every master.
type Migration struct {
	c        *Cluster
	Slot     int
	From, To NodeInfo
}

// BeginMigration starts moving slot to the master at toAddr.
func (c *Cluster) BeginMigration(ctx context.Context, slot int, toAddr string) (*Migration, error) {
	from, err := c.Owner(ctx, slot)
	if err != nil {
		return nil, err
	}
	var to NodeInfo
	nodes, err := c.Topology(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Addr == toAddr {
			to = n
		}
	}
	if to.ID == "" || !to.Master || to.ID == from.ID {
		return nil, fmt.Errorf("redistest: %s is not another master", toAddr)
	}
	m := &Migration{c: c, Slot: slot, From: from, To: to}
	if err := m.on(ctx, to.Addr, "cluster", "setslot", slot, "importing", from.ID); err != nil {
		return nil, err
	}
	if err := m.on(ctx, from.Addr, "cluster", "setslot", slot, "migrating", to.ID); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Migration) on(ctx context.Context, addr string, args ...any) error {
	s := m.c.Server(addr)
	if s == nil {
		return fmt.Errorf("redistest: no server at %s", addr)
	}
	rdb := s.Client()
	defer rdb.Close()
	if err := rdb.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("redistest: %v on %s: %w", args, addr, err)
	}
	return nil
}

// MoveKeys MIGRATEs every key of the slot from the source to the target.
func (m *Migration) MoveKeys(ctx context.Context) error {
	src := m.c.Server(m.From.Addr).Client()
	defer src.Close()
	host, port, _ := strings.Cut(m.To.Addr, ":")
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, m.Slot, 100).Result()
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return nil
		}
		args := []any{"migrate", host, port, "", 0, 5000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("redistest: MIGRATE: %w", err)
		}
	}
}

// Finish assigns the slot to the target: on the target, the source, and
// every other master, as redis-cli does.
func (m *Migration) Finish(ctx context.Context) error {
	if err := m.on(ctx, m.To.Addr, "cluster", "setslot", m.Slot, "node", m.To.ID); err != nil {
		return err
	}
	if err := m.on(ctx, m.From.Addr, "cluster", "setslot", m.Slot, "node", m.To.ID); err != nil {
		return err
	}
	masters, err := m.c.Masters(ctx)
	if err != nil {
		return err
	}
	for _, n := range masters {
		if n.ID != m.To.ID && n.ID != m.From.ID {
			_ = m.on(ctx, n.Addr, "cluster", "setslot", m.Slot, "node", m.To.ID)
		}
	}
	return nil
}

// MigrateSlot moves slot to the master at toAddr in one go.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, toAddr string) error {
	m, err := c.BeginMigration(ctx, slot, toAddr)
	if err != nil {
		return err
	}
	if err := m.MoveKeys(ctx); err != nil {
		return err
	}
	return m.Finish(ctx)
}

// Reshard moves n slots from the master fromAddr to the master toAddr with
// redis-cli --cluster reshard, as an operator would.
func (c *Cluster) Reshard(ctx context.Context, fromAddr, toAddr string, n int) error {
	cli, err := CLIBinary()
	if err != nil {
		return err
	}
	nodes, err := c.Topology(ctx)
	if err != nil {
		return err
	}
	var fromID, toID string
	for _, nd := range nodes {
		switch nd.Addr {
		case fromAddr:
			fromID = nd.ID
		case toAddr:
			toID = nd.ID
		}
	}
	if fromID == "" || toID == "" {
		return fmt.Errorf("redistest: reshard %s -> %s: unknown node", fromAddr, toAddr)
	}
	out, err := exec.CommandContext(ctx, cli, "--cluster", "reshard", fromAddr,
		"--cluster-from", fromID, "--cluster-to", toID, "--cluster-slots", strconv.Itoa(n),
		"--cluster-yes", "--cluster-pipeline", "10").CombinedOutput()
	if err != nil {
		return fmt.Errorf("redistest: redis-cli --cluster reshard: %w: %s", err, out)
	}
	return nil
}

// Failover has the replica at addr take over from its master with CLUSTER
// FAILOVER (coordinated: no write is lost) and waits until the cluster
// agrees.
func (c *Cluster) Failover(ctx context.Context, replicaAddr string) error {
	s := c.Server(replicaAddr)
	if s == nil {
		return fmt.Errorf("redistest: no server at %s", replicaAddr)
	}
	rdb := s.Client()
	defer rdb.Close()
	if err := rdb.ClusterFailover(ctx).Err(); err != nil {
		return fmt.Errorf("redistest: CLUSTER FAILOVER on %s: %w", replicaAddr, err)
	}
	return c.waitMaster(ctx, replicaAddr, 30*time.Second)
}

// KillMaster kills the master at addr (SIGKILL) and waits until one of its
// replicas has taken over and the remaining nodes report the cluster ok.
// It returns the new master's address.
func (c *Cluster) KillMaster(ctx context.Context, addr string) (string, error) {
	nodes, err := c.Topology(ctx)
	if err != nil {
		return "", err
	}
	var id string
	for _, n := range nodes {
		if n.Addr == addr {
			id = n.ID
		}
	}
	rep, err := c.ReplicaOf(ctx, id)
	if err != nil {
		return "", err
	}
	if err := c.Server(addr).Kill(); err != nil {
		return "", err
	}
	return rep.Addr, c.waitMaster(ctx, rep.Addr, 60*time.Second)
}

// waitMaster waits until the node at addr is a master with slots in every
// running node's view and every running node reports the cluster ok.
func (c *Cluster) waitMaster(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		for _, s := range c.Nodes {
			if s.Pid() == 0 {
				continue
			}
			rdb := s.Client()
			info, err1 := rdb.ClusterInfo(ctx).Result()
			text, err2 := rdb.ClusterNodes(ctx).Result()
			_ = rdb.Close()
			if err1 != nil || err2 != nil || !strings.Contains(info, "cluster_state:ok") {
				ok = false
				break
			}
			found := false
			for _, n := range parseNodes(text) {
				if n.Addr == addr && n.Master && len(n.Slots) > 0 {
					found = true
				}
			}
			if !found {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: %s did not become a master with slots within %v", addr, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitReplicasSynced waits until every running replica has finished its
// sync with its master (master_link_status:up).
func (c *Cluster) WaitReplicasSynced(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, s := range c.Nodes {
		if s.Pid() == 0 {
			continue
		}
		rdb := s.Client()
		for {
			info, err := rdb.Info(context.Background(), "replication").Result()
			if err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				_ = rdb.Close()
				return fmt.Errorf("redistest: replica %s not in sync: %v %s", s.Addr, err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = rdb.Close()
	}
	return nil
}

// ClientCount returns how many client connections the node at addr has
// (CLIENT LIST), of type typ ("normal", "pubsub") when not empty. The
// connection that asks is a normal one and is counted.
func ClientCount(ctx context.Context, addr, typ string) (int, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	var text string
	var err error
	if typ != "" {
		text, err = rdb.Do(ctx, "client", "list", "type", typ).Text()
	} else {
		text, err = rdb.ClientList(ctx).Result()
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line != "" {
			n++
		}
	}
	return n, nil
}

// AnnounceHostnames has every node announce itself as "localhost" and
// name host names, not IPs, in its redirections and slot maps (Redis 7's
// cluster-announce-hostname and cluster-preferred-endpoint-type): the
// endpoints of a Cluster reached by a DNS name.
func (c *Cluster) AnnounceHostnames(ctx context.Context) error {
	for _, a := range c.Addrs() {
		n := redis.NewClient(&redis.Options{Addr: a})
		err := n.ConfigSet(ctx, "cluster-announce-hostname", "localhost").Err()
		if err == nil {
			err = n.ConfigSet(ctx, "cluster-preferred-endpoint-type", "hostname").Err()
		}
		_ = n.Close()
		if err != nil {
			return fmt.Errorf("redistest: %s: %w", a, err)
		}
	}
	return nil
}
