package transport

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

// Replica sync (rlock/replica.go says when it is on): ops that ask for it
// go with WAIT after them, in one pipeline on one connection (see
// batcher.runSynced).

// SyncMode is how replica sync is chosen.
type SyncMode uint8

const (
	SyncAuto     SyncMode = iota // Redisson's: the replicas each master reports, none on a single server
	SyncOff                      // WithReplicaSync(0, 0), or a single server by default
	SyncExplicit                 // WithReplicaSync(n, timeout)
)

// syncState is what a batcher knows of its node's replicas.
type syncState struct {
	n      atomic.Int64 // replicas the node reported; -1: ask
	noWait atomic.Bool  // the node does not know WAIT
	askMu  sync.Mutex   // one INFO at a time
}

// wanted reports whether ops to this node that ask for replica sync should
// get it: not once the node refused WAIT, nor (by default) when it reported
// no replica.
func (s *syncState) wanted(mode SyncMode) bool {
	switch {
	case mode == SyncOff || s.noWait.Load():
		return false
	case mode == SyncAuto:
		return s.n.Load() != 0
	}
	return true
}

// count returns the node's replica count, asking it (INFO replication,
// bounded by timeout) when it is not known.
func (s *syncState) count(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (int, error) {
	if n := s.n.Load(); n >= 0 {
		return int(n), nil
	}
	s.askMu.Lock()
	defer s.askMu.Unlock()
	if n := s.n.Load(); n >= 0 {
		return int(n), nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	n, err := ConnectedReplicas(info)
	if err != nil {
		return 0, err
	}
	s.n.Store(int64(n))
	return n, nil
}

// ConnectedReplicas reads connected_slaves from INFO replication.
func ConnectedReplicas(info string) (int, error) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "connected_slaves:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("rlock: INFO replication has no connected_slaves")
}

// Unsynced reports whether an op that asked for replica sync was not
// confirmed: fewer replicas than WithReplicaSync asked for, or (by default)
// none of the master's replicas, as Redisson's NoSyncedSlavesException.
func (o *Op) Unsynced(mode SyncMode) bool {
	switch {
	case !o.Sync || o.SyncWant == 0:
		return false
	case mode == SyncExplicit:
		return o.Synced < int64(o.SyncWant)
	}
	return o.Synced == 0
}
