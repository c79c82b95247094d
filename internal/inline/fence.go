package inline

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Fence names a lane connection on its server, so that a call whose reply
// was lost on it can be fenced: CLIENT KILL ID <ID> ADDR <Addr> SKIPME yes
// closes the connection on the server, after which the server runs nothing
// more that came on it (see docs/internals.md, "Fencing a lost call").
// Both filters must match: a connection id is only meaningful on the
// server process that gave it (ids start again at 1 after a restart), and
// Addr, the connection's own address, tells it from a reused id.
type Fence struct {
	ID   int64
	Addr string // the connection's address as the server sees it (its local address)
}

// FenceMode says whether a lane's connections learn their Fence.
type FenceMode int32

const (
	// FenceOff: no connection learns its Fence (no CLIENT command).
	FenceOff FenceMode = iota
	// FenceOwnAddr: a connection has a Fence when the server sees it from
	// its own local address (no proxy or NAT between).
	FenceOwnAddr
	// FenceAnyAddr: whatever address the server sees it from (a NAT, or
	// a TCP proxy relaying each connection on one upstream connection of
	// its own, never replaying bytes onto another).
	FenceAnyAddr
)

// fenceProbe, when set, makes each new connection of the lane learn its
// Fence as the last step of its set-up (see probeFence).
type fenceProbe struct{ mode atomic.Int32 }

// ProbeFence sets whether the lane's new connections learn their Fence
// (see probeFence): the Client fences its lost calls that way
// (rlock.WithLostCallFence). Call it before the lane's first call.
func (l *Lane) ProbeFence(m FenceMode) { l.probe.mode.Store(int32(m)) }

// noClient is an id no server gives (client ids count up from 1): a CLIENT
// KILL with it kills nothing and tells whether the user may send one.
const noClient = math.MaxInt64

// probeFence learns c's Fence, in c's set-up (OnConnect), in one round
// trip: CLIENT INFO (the id, and the peer address the server sees) and a
// CLIENT KILL that matches no client (the ACL lets this user kill). c gets
// no Fence, and its calls read the cancel floor, when either is refused
// (NOPERM, a renamed or missing command, a proxy that does not pass them
// on) or, with FenceOwnAddr, the server sees another address than c's
// own: a proxy or a NAT sits between, whose upstream connection the id
// would name (a proxy that pools or multiplexes may replay bytes it holds
// onto another upstream connection once that one is killed). An I/O error fails the set-up, as
// go-redis's own set-up commands do.
func probeFence(ctx context.Context, cn *redis.Conn, c *conn, m FenceMode) error {
	var info *redis.ClientInfoCmd
	var kill *redis.Cmd
	_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.ClientInfo(ctx)
		kill = p.Do(ctx, "client", "kill", "id", int64(noClient), "skipme", "yes")
		return nil
	})
	if err != nil {
		if _, isReply := err.(redis.Error); !isReply {
			return err
		}
	}
	if info.Err() != nil || kill.Err() != nil {
		return nil
	}
	ci := info.Val()
	if ci == nil || ci.ID <= 0 || ci.Addr == "" {
		return nil
	}
	if m != FenceAnyAddr && (c.Conn.LocalAddr() == nil || ci.Addr != c.Conn.LocalAddr().String()) {
		return nil
	}
	c.fence.Store(&Fence{ID: ci.ID, Addr: ci.Addr})
	return nil
}

// KeptFence returns the Fence of the connection the lane keeps for the
// direct path (nil: none, or it has none). Only the goroutine of the call
// in flight may ask, between Begin and End: Do then uses that connection,
// or sends nothing.
func (l *Lane) KeptFence() *Fence {
	l.mu.Lock()
	c := l.direct
	l.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.fence.Load()
}
