package transport

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/cluster"
	"github.com/goredisson/goredisson/internal/inline"
)

// The Sender: what rlock calls (Exec in exec.go, SubmitAll, Shut) and
// where an op goes. Each op is routed to a batcher (batcher.go): the one
// batcher off a Cluster; on a Cluster the batcher of the master serving its
// key, found by a CRC16 and a route cached per slot, made when go-redis
// first names the node (batcherFor). What becomes of an op once its
// batcher has sent it is redirect.go's.

// Sender routes ops to batchers: the one batcher of a standalone or
// Sentinel client, one per master on a Redis Cluster.
type Sender struct {
	cfg   Config
	rdb   redis.UniversalClient
	nodes *cluster.Nodes // set for a Redis Cluster
	one   *batcher       // every op off a Cluster; keyless ops on one
	idle  atomic.Int64   // how long an idle flusher waits for work (a time.Duration): flusherIdle

	// watch follows the primary of a Sentinel client for one's lane
	// (sentinel.go); nil off Sentinel. oneInline: one may send inline.
	watch     *sentinelWatch
	oneInline bool

	mu     sync.Mutex
	byAddr map[string]*batcher
	// primary is the address one's lane dials on Sentinel ("": no lane);
	// refused, one whose lane's dial reached another server, at refusedAt
	// (sentinel.go).
	primary, refused string
	refusedAt        time.Time
	shut             bool // Shut was called: new batchers get no inline lane
	// retired holds the batchers retired while a call was in flight on
	// their lane (see batcher.retire), so that Shut can cut that call too.
	retired []*batcher
	// route caches each slot's batcher (nil: ask nodes), so that a call
	// is routed by a CRC16 and an atomic load. An entry is dropped when
	// its node redirects a call of the slot or fails.
	route []atomic.Pointer[batcher]
	// unfenced is set once a server refused a fence (FenceRefused): no
	// call goes out reading no cancel floor from then on.
	unfenced atomic.Bool
}

// Config is what the transport needs from its Client (package rlock).
type Config struct {
	Sync         SyncMode
	SyncReplicas int           // WithReplicaSync's count (SyncExplicit)
	SyncTimeout  time.Duration // WAIT's timeout
	// Done is closed by the Client's Close; Closed reports it (a call made
	// after it is ErrClosed).
	Done      <-chan struct{}
	Closed    func() bool
	ErrClosed error
	// IsCleanup reports a clean-up context, which Close does not end.
	IsCleanup func(context.Context) bool
	// InfoTimeout bounds the INFO replication that counts a node's replicas.
	InfoTimeout time.Duration
	// PublishRefused is told when a script's publish was refused
	// ("<channel>: <error>"); NameRefusedKeys adds to an op's key refusal
	// (op.V) the keys the user may not access, off the flusher.
	PublishRefused  func(what string)
	NameRefusedKeys func(o *Op)
	Logger          func() *slog.Logger
	// Fence: a call whose script reads the cancel floor (Op.MarkFloor)
	// skips that read when it goes out on a lane connection that can be
	// fenced (inline.Fence, learnt as Fence says); FenceOff: every such
	// call reads the floor.
	Fence inline.FenceMode
}

// NewSender returns the transport of one Client, sending through rdb.
func NewSender(cfg Config, rdb redis.UniversalClient) *Sender {
	s := &Sender{cfg: cfg, rdb: rdb, byAddr: make(map[string]*batcher)}
	s.idle.Store(int64(flusherIdle))
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		s.nodes = cluster.New(cc)
		s.route = make([]atomic.Pointer[batcher], 16384)
	}
	s.one = newBatcher(s, rdb, "")
	if u, ok := rdb.(*redis.Client); ok && s.nodes == nil {
		s.one.setLanes(func() *inline.Lane { return s.newLane(u) })
		s.oneInline = s.one.lane != nil
		if s.one.lane == nil && u.Options().Addr == "FailoverClient" {
			s.watch = newSentinelWatch(s, u)
			s.oneInline = true
		}
	}
	return s
}

// newLane returns an inline lane dialing as rdb does (nil: none, see
// inline.New), whose connections learn their Fence when the Client fences.
func (s *Sender) newLane(rdb *redis.Client) *inline.Lane {
	l := inline.New(rdb)
	if l != nil {
		l.ProbeFence(s.cfg.Fence)
	}
	return l
}

// FenceRefused records that a server refused a fence (a CLIENT KILL
// answered with an error: the ACL changed, a proxy came between): from
// now on every call reads the cancel floor.
func (s *Sender) FenceRefused() { s.unfenced.Store(true) }

// Fencing reports whether calls may go out reading no cancel floor.
func (s *Sender) Fencing() bool { return s.cfg.Fence != inline.FenceOff && !s.unfenced.Load() }

// SetIdle sets how long an idle flusher waits for work (tests).
func (s *Sender) SetIdle(d time.Duration) { s.idle.Store(int64(d)) }

// closing returns what ends waits of a call made with ctx besides ctx: the
// Client's Close, unless the call is a clean-up.
func (s *Sender) closing(ctx context.Context) <-chan struct{} {
	if s.cfg.IsCleanup(ctx) {
		return nil
	}
	return s.cfg.Done
}

// Shut ends the inline lanes (Client.Close): a call in flight on one that
// Close ends is interrupted, later calls go through the flusher, and
// batchers made later get no lane.
func (s *Sender) Shut() {
	if s.watch != nil {
		s.watch.close()
	}
	s.mu.Lock()
	s.shut = true
	for _, l := range s.one.lanes() {
		l.Shut()
	}
	for _, b := range s.byAddr {
		for _, l := range b.lanes() {
			l.Shut()
		}
	}
	for _, b := range s.retired {
		for _, l := range b.lanes() {
			l.Shut()
		}
	}
	s.retired = nil
	s.mu.Unlock()
}

// batcherFor returns the batcher of the node at addr, serving through rdb.
func (s *Sender) batcherFor(rdb *redis.Client, addr string) *batcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.byAddr[addr]
	if b == nil || b.rdb != redis.UniversalClient(rdb) {
		// A node first seen, or go-redis made a new client for it: a
		// batcher, and an inline lane dialing as that client does, of its
		// own; the old batcher's lane is retired.
		old := b
		b = newBatcher(s, rdb, addr)
		if !s.shut {
			b.setLanes(func() *inline.Lane { return s.newLane(rdb) })
		}
		s.byAddr[addr] = b
		if old != nil && old.retire() {
			// Keep those whose call is still in flight (the others'
			// lanes are shut), for Shut.
			keep := s.retired[:0]
			for _, r := range s.retired {
				if r.inFlight() {
					keep = append(keep, r)
				}
			}
			clear(s.retired[len(keep):])
			s.retired = append(keep, old)
		}
	}
	return b
}

// submit routes o to its batcher; done is closed when its outcome is known.
// Off a Cluster, and for a keyless command on one, that is the one batcher;
// on a Cluster, the batcher of the node serving o's key (sendCluster).
func (s *Sender) submit(o *Op) {
	s.prepare(o)
	if s.nodes == nil {
		s.one.add(o)
		return
	}
	key, ok := o.RouteKey()
	if !ok {
		s.one.add(o)
		return
	}
	s.sendCluster(o, key)
}

// prepare readies o for a send, its first or one after a redirection: o
// gets its done channel now unless it may go inline on the one batcher
// (an op sent inline is done before submit returns: see Op.done), and at
// its first send the redirect budget starts (Op.first) and a script that
// replica sync follows asks for WAIT.
func (s *Sender) prepare(o *Op) {
	o.cut, o.fence = false, nil
	if o.done == nil && (s.nodes != nil || !s.oneInline) {
		o.done = make(chan struct{})
	}
	if o.first.IsZero() {
		o.first = time.Now()
		if o.S != nil && o.S.Synced && s.cfg.Sync != SyncOff {
			o.Sync = true
		}
	}
}

// sendCluster sends o, whose key is key, on a Redis Cluster: to the node a
// redirection named (sendTo), else to the batcher the slot's route caches,
// else to the slot's master as go-redis's slot map has it (the route is
// cached). An op whose node cannot be found is done, not sent.
func (s *Sender) sendCluster(o *Op, key string) {
	if o.target != "" {
		s.sendTo(o)
		return
	}
	slot := cluster.Slot(key)
	if b := s.route[slot].Load(); b != nil {
		b.add(o)
		return
	}
	rdb, addr, err := s.nodes.Master(o.Ctx, key)
	if err != nil {
		o.endNotSent(err)
		return
	}
	b := s.batcherFor(rdb, addr)
	s.route[slot].Store(b)
	b.add(o)
}

// endNotSent ends o, which was never sent (its node could not be found): its
// outcome is NotRun (notSentError).
func (o *Op) endNotSent(err error) {
	o.finish(notSentError{err})
	o.markDone()
}

// unroute drops the cached routes of slot (or, when slot < 0, every route
// to b), so that the next call asks nodes again.
func (s *Sender) unroute(slot int, b *batcher) {
	if s.route == nil {
		return
	}
	if slot >= 0 {
		s.route[slot].CompareAndSwap(b, nil)
		return
	}
	for i := range s.route {
		s.route[i].CompareAndSwap(b, nil)
	}
}

// SubmitAll routes ops (Op.Done tells when each is done); those for one
// batcher go together, so that they make one batch unless the batch in
// flight ends first.
func (s *Sender) SubmitAll(ops []*Op) {
	for _, o := range ops {
		if o.done == nil {
			o.done = make(chan struct{})
		}
		o.batched = true
	}
	if s.nodes == nil {
		for _, o := range ops {
			o.first = time.Now()
		}
		s.one.addAll(ops)
		return
	}
	for _, o := range ops {
		s.submit(o)
	}
}
