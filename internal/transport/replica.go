package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Replica sync (rlock/replica.go says when it is on): ops that ask for it
// go with WAIT after them, in one pipeline on one connection. What a
// batcher knows of its node's replicas (syncState) decides whether an op
// gets WAIT; the flusher hands those that do to the batcher's sync
// goroutine (splitSynced, syncLoop), which sends them with WAIT one
// pipeline at a time (runSynced) and records WAIT's count (waited).

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
	return 0, fmt.Errorf("goredisson: INFO replication has no connected_slaves")
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

// splitSynced hands the ops of batch that want replica sync, when their
// node gets it (syncState.wanted), to the WAIT pipeline (addSynced), and
// returns the others, whose Sync it clears: WAIT holds its connection until
// the replicas answer, and the other ops must not wait for it. With replica
// sync off, it returns batch itself.
func (b *batcher) splitSynced(batch []*Op) (plain []*Op) {
	plain = batch
	if b.s.cfg.Sync == SyncOff {
		return plain
	}
	var synced []*Op
	plain = plain[:0:0]
	for _, o := range batch {
		if o.Sync && b.replicas.wanted(b.s.cfg.Sync) {
			synced = append(synced, o)
		} else {
			o.Sync = false
			plain = append(plain, o)
		}
	}
	if len(synced) > 0 {
		b.addSynced(synced)
	}
	return plain
}

// addSynced queues ops that want replica sync for the sync goroutine,
// started unless it runs.
func (b *batcher) addSynced(ops []*Op) {
	b.mu.Lock()
	b.syncQ = append(b.syncQ, ops...)
	if b.syncing {
		b.mu.Unlock()
		return
	}
	b.syncing = true
	b.mu.Unlock()
	go b.syncLoop()
}

// syncLoop sends the queued synced ops, those queued meanwhile together,
// until none is left.
func (b *batcher) syncLoop() {
	for {
		b.mu.Lock()
		ops := b.syncQ
		if len(ops) == 0 {
			b.syncing = false
			b.mu.Unlock()
			return
		}
		b.syncQ = nil
		b.mu.Unlock()
		b.runSynced(ops)
	}
}

// runSynced sends ops that want replica sync as one pipeline with WAIT (for
// the replicas the node reports, or WithReplicaSync's count) after them, on
// one connection, records WAIT's count in each, and passes them on.
func (b *batcher) runSynced(ops []*Op) {
	if ops = takeAll(ops); len(ops) == 0 {
		return // withdrawn, all of them (claim.go)
	}
	cfg := b.s.cfg
	ctx := context.WithoutCancel(ops[0].Ctx)
	want := cfg.SyncReplicas
	if cfg.Sync == SyncAuto {
		n, err := b.replicas.count(ctx, b.rdb, cfg.InfoTimeout)
		if err != nil || n == 0 {
			// Not known (the node did not answer INFO: the scripts will
			// tell), or no replica to wait for: no WAIT.
			for _, o := range ops {
				o.Sync = false
			}
			b.sendSynced(ctx, ops, 0)
			return
		}
		want = n
	}
	b.sendSynced(ctx, ops, want)
}

// sendSynced sends ops with WAIT want (none when want is 0), then once more
// with their source those the node had no cached script for, and passes
// every op on.
func (b *batcher) sendSynced(ctx context.Context, ops []*Op, want int) {
	for _, eval := range []bool{false, true} {
		pipe := b.rdb.Pipeline()
		cmds := pipeOps(ctx, pipe, ops, eval)
		var wait *redis.IntCmd
		if want > 0 {
			wait = redis.NewIntCmd(ctx, "wait", want, b.waitTimeout().Milliseconds())
			_ = pipe.Process(ctx, wait)
		}
		_, _ = pipe.Exec(ctx)
		for i, o := range ops {
			o.finish(cmds[i].Err())
		}
		if wait != nil {
			b.waited(ctx, ops, want, wait)
		}
		var again []*Op
		for _, o := range ops {
			if o.NoScript() {
				again = append(again, o)
			} else {
				b.s.after(o, b)
			}
		}
		if len(again) == 0 {
			return
		}
		ops = again
	}
}

// waitTimeout is WAIT's timeout: the sync timeout, shortened to 3/4 of the
// node client's read timeout when it would outlast it (go-redis reads a
// pipeline's replies within one read timeout; a WAIT that answered later
// would make the whole batch's outcome unknown).
func (b *batcher) waitTimeout() time.Duration {
	d := b.s.cfg.SyncTimeout
	if c, ok := b.rdb.(*redis.Client); ok {
		rt := c.Options().ReadTimeout
		if rt > 0 && d > rt*3/4 {
			d = max(rt*3/4, time.Millisecond)
		}
	}
	return d
}

// waited records WAIT's answer in the ops it followed.
func (b *batcher) waited(ctx context.Context, ops []*Op, want int, wait *redis.IntCmd) {
	n, err := wait.Result()
	var re redis.Error
	if errors.As(err, &re) && HasPrefix(re.Error(), "ERR unknown command") {
		// Redisson stops sending WAIT to a server that does not know it
		// (some proxies and managed services).
		b.replicas.noWait.Store(true)
		b.s.cfg.Logger().Warn("goredisson: the server does not know WAIT; replica sync is off for it", "node", b.addr, "err", err)
		for _, o := range ops {
			o.Sync = false
		}
		return
	}
	if err != nil {
		n = 0 // not confirmed
	}
	if b.s.cfg.Sync == SyncAuto && n != int64(want) {
		// As Redisson: the replica count may have changed; ask again
		// before the next WAIT. When none confirmed, ask now: a master
		// that has lost its replicas (a failover left it alone) has
		// nothing to confirm.
		b.replicas.n.Store(-1)
		if n == 0 {
			if fresh, err := b.replicas.count(ctx, b.rdb, b.s.cfg.InfoTimeout); err == nil && fresh == 0 {
				want = 0
			}
		}
	}
	for _, o := range ops {
		o.Synced, o.SyncWant = n, want
	}
}
