package engine

import (
	"fmt"

	"github.com/goredisson/goredisson/internal/transport"
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

// syncError is the error of a call whose write too few replicas confirmed.
func (c *Core) syncError(o *transport.Op, what string) error {
	if c.sync == transport.SyncExplicit {
		return fmt.Errorf("%w: %s: %d of %d replicas within %v", ErrReplicaSync, what, o.Synced, o.SyncWant, c.cfg.SyncTimeout)
	}
	return fmt.Errorf("%w: %s: none of the master's %d replicas within %v (Redisson: NoSyncedSlavesException, \"None of slaves were synced\"; see WithReplicaSync)",
		ErrReplicaSync, what, o.SyncWant, c.cfg.SyncTimeout)
}
