package rlock

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Replica sync: after an acquire or release script, WAIT until the
// primary's replicas have the write, so that a failover right after it does
// not lose it unseen.
//
// By default it follows Redisson (checkLockSyncedSlaves = true,
// slavesSyncTimeout = 1000 ms): on Sentinel and Cluster deployments (not a
// single server, where Redisson does not check either), each master is
// asked once (INFO replication) how many replicas it has; a script sent to
// a master with none goes out as usual, with nothing added; to one with n,
// the batch's scripts are followed by WAIT n 1000 on the same connection,
// and a call none of whose replicas confirmed fails with ErrReplicaSync (an
// acquisition is given back first). A WAIT that confirms a different number
// of replicas than the master reported makes the next call ask again. A
// server that answers WAIT with "unknown command" is not sent WAIT again.
// WithReplicaSync(n, timeout) asks for n replicas in timeout instead, on
// every deployment; WithReplicaSync(0, 0) turns replica sync off.

// syncMode is how replica sync is chosen.
type syncMode uint8

const (
	syncAuto     syncMode = iota // Redisson's: the replicas each master reports, none on a single server
	syncOff                      // WithReplicaSync(0, 0), or a single server by default
	syncExplicit                 // WithReplicaSync(n, timeout)
)

// Redisson's slavesSyncTimeout.
const defaultSyncTimeout = time.Second

// syncState is what a batcher knows of its node's replicas.
type syncState struct {
	n      atomic.Int64 // replicas the node reported; -1: ask
	noWait atomic.Bool  // the node does not know WAIT
	askMu  sync.Mutex   // one INFO at a time
}

// wanted reports whether ops to this node that ask for replica sync should
// get it: not once the node refused WAIT, nor (by default) when it reported
// no replica.
func (s *syncState) wanted(o options) bool {
	switch {
	case o.sync == syncOff || s.noWait.Load():
		return false
	case o.sync == syncAuto:
		return s.n.Load() != 0
	}
	return true
}

// count returns the node's replica count, asking it (INFO replication)
// when it is not known.
func (s *syncState) count(ctx context.Context, rdb redis.UniversalClient) (int, error) {
	if n := s.n.Load(); n >= 0 {
		return int(n), nil
	}
	s.askMu.Lock()
	defer s.askMu.Unlock()
	if n := s.n.Load(); n >= 0 {
		return int(n), nil
	}
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	n, err := connectedReplicas(info)
	if err != nil {
		return 0, err
	}
	s.n.Store(int64(n))
	return n, nil
}

// connectedReplicas reads connected_slaves from INFO replication.
func connectedReplicas(info string) (int, error) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "connected_slaves:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("rlock: INFO replication has no connected_slaves")
}

// unsynced reports whether an op that asked for replica sync was not
// confirmed: fewer replicas than WithReplicaSync asked for, or (by default)
// none of the master's replicas, as Redisson's NoSyncedSlavesException.
func (o *op) unsynced(mode syncMode) bool {
	switch {
	case !o.sync || o.syncWant == 0:
		return false
	case mode == syncExplicit:
		return o.synced < int64(o.syncWant)
	}
	return o.synced == 0
}

// syncError is the error of a call whose write too few replicas confirmed.
func (c *Client) syncError(o *op, what string) error {
	if c.opts.sync == syncExplicit {
		return fmt.Errorf("%w: %s: %d of %d replicas within %v", ErrReplicaSync, what, o.synced, o.syncWant, c.opts.syncTimeout)
	}
	return fmt.Errorf("%w: %s: none of the master's %d replicas within %v (Redisson: NoSyncedSlavesException, \"None of slaves were synced\"; see WithReplicaSync)",
		ErrReplicaSync, what, o.syncWant, c.opts.syncTimeout)
}
