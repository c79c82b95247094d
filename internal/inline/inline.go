// Package inline lets a caller run a Redis command in its own goroutine
// and still return at once when its context ends or its owner closes.
//
// A Lane is a go-redis client of its own, made from the options of the
// user's *redis.Client (address, TLS, credentials, DB, protocol, dialer,
// OnConnect), whose connections it dials through a wrapper: while a call
// is in flight (between Begin and End), the end of the call's context, or
// Shut for a closable call, sets a read and write deadline in the past on
// the lane's connections, so that the blocked read or write returns at
// once with a timeout (go-redis then drops the connection: a reply cut in
// half is never read by a later call). Only one call is in flight on a
// Lane at a time: its user serializes them.
//
// A call ends one of three ways: its reply was read (the interrupt came
// too late to matter, or not at all), it was never sent (a dial failed or
// was canceled, or the call ended while its connection was being set up,
// before a byte of its command was written: see Sent), or it was cut after
// its command went out: End then hands back a Tail, which reads the rest
// of the reply on the same connection (kept open for it) within the read
// deadline go-redis had set, so that the caller can leave and its call
// still be settled by its reply.
package inline

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// past is a deadline that has passed.
var past = time.Unix(1, 0)

// Lane is one serialized inline call path to one Redis server.
type Lane struct {
	rdb *redis.Client

	mu     sync.Mutex
	conns  map[*conn]struct{} // the connections the lane's client holds open
	gen    uint64             // the call in flight (or the last one)
	active bool               // a call is in flight
	cut    bool               // the call in flight was interrupted
	shut   bool               // Shut was called: Begin refuses
	closed bool               // rdb is closed
	close  bool               // the call in flight is closable (Shut cuts it)
	stop   func() bool        // stops the call's context.AfterFunc
	cur    *call              // the call's AfterFunc target
	spare  *call              // a call whose AfterFunc was stopped: reused

	// The call in flight's I/O, touched only by the goroutine doing it
	// (and read in End): the connection it used, whether its last write
	// went out whole, and how many bytes of its command were written
	// (sent: writes on a connection set up; see conn.ready).
	used  *conn
	wrote bool
	sent  int
	dl    time.Time // Begin's byDeadline: ctx's deadline bounds every I/O
	// claim is asked before the call's command is written (see Claim);
	// claimed: it said yes, refused: no.
	claim            func() bool
	claimed, refused bool
	// later holds the connections go-redis closed during a cut call: End
	// closes them, but the one a Tail reads on.
	later []*conn
	// direct is the connection kept for the direct path (see direct.go):
	// set by Adopt, cleared when it fails or closes.
	direct *conn
	// adoptable: no go-redis pool hook touches an idle connection (see
	// Adopt).
	adoptable bool
	// probe: new connections learn their Fence (fence.go).
	probe fenceProbe
}

// call is what a call's context.AfterFunc runs: fire is bound once, so
// that a call reused costs no closure.
type call struct {
	l    *Lane
	gen  uint64
	fire func()
}

func (c *call) interrupt() { c.l.interrupt(c.gen) }

// New returns a Lane dialing as user does, or nil when user's connections
// cannot be copied: a Sentinel client (redis.NewFailoverClient), whose
// master go-redis tracks on the user's pool only (NewSentinel makes a lane
// to a primary its caller follows).
func New(user *redis.Client) *Lane {
	if user.Options().Addr == "FailoverClient" {
		return nil
	}
	return newLane(user, "")
}

// ErrMoved is a Sentinel lane's dial that reached another server than the
// primary it was made for (the primary moved): nothing was sent.
var ErrMoved = errors.New("inline: the Sentinel names another primary")

// NewSentinel returns a Lane to primary, the address the Sentinels name
// for the primary of user, a Sentinel client (redis.NewFailoverClient): it
// dials as user does (its dialer asks the Sentinel for the primary), and a
// dial that reaches another address fails with ErrMoved.
func NewSentinel(user *redis.Client, primary string) *Lane {
	return newLane(user, primary)
}

func newLane(user *redis.Client, primary string) *Lane {
	uo := user.Options()
	o := *uo
	o.MinIdleConns = 0
	o.MaxRetries = -1
	// What the user's client set up for its own connections stays its
	// own: push notification handlers (shared, they would be registered
	// twice), maintenance notifications and client-side caching.
	o.PushNotificationProcessor = nil
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	o.ClientSideCacheConfig, o.ClientSideCache = nil, nil
	dial := uo.Dialer
	if dial == nil {
		dial = redis.NewDialer(uo)
	}
	l := &Lane{conns: make(map[*conn]struct{}), adoptable: uo.StreamingCredentialsProvider == nil}
	var moved atomic.Bool // a dial reached another server: the lane is done
	if primary != "" {
		// go-redis retries a failed dial (5 times, 100 ms apart, by
		// default): once moved, no pause and no dial.
		backoff := uo.DialerRetryBackoff
		o.DialerRetryBackoff = func(attempt int) time.Duration {
			if moved.Load() {
				return 0
			}
			if backoff != nil {
				return backoff(attempt)
			}
			if uo.DialerRetryTimeout > 0 {
				return uo.DialerRetryTimeout
			}
			return 100 * time.Millisecond
		}
	}
	// go-redis calls OnConnect last in a new connection's set-up (HELLO,
	// AUTH, SELECT, CLIENT SETINFO, the user's OnConnect), in the goroutine
	// of the call that took the connection, on which that set-up did its
	// I/O: from now on what is written on it is a command's.
	onConnect := uo.OnConnect
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if onConnect != nil {
			if err := onConnect(ctx, cn); err != nil {
				return err
			}
		}
		if c := l.used; c != nil {
			if m := FenceMode(l.probe.mode.Load()); m != FenceOff {
				if err := probeFence(ctx, cn, c, m); err != nil {
					return err
				}
			}
			c.ready.Store(true)
		}
		return nil
	}
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if moved.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: ErrMoved}
		}
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if primary != "" && nc.RemoteAddr().String() != primary {
			moved.Store(true)
			_ = nc.Close()
			return nil, &net.OpError{Op: "dial", Net: network, Err: ErrMoved}
		}
		return netConn(l.track(nc)), nil
	}
	l.rdb = redis.NewClient(&o)
	return l
}

// Client returns the lane's go-redis client, for the calls made between
// Begin and End.
func (l *Lane) Client() *redis.Client { return l.rdb }

// Begin starts a call: until End, ctx's end (and Shut, when closable)
// interrupts its I/O. byDeadline says that ctx ends only at its deadline
// while the call runs: the deadline then bounds each read and write, with
// no context.AfterFunc. It returns false, and starts nothing, once Shut
// was called.
func (l *Lane) Begin(ctx context.Context, closable, byDeadline bool) bool {
	l.mu.Lock()
	if l.shut {
		l.mu.Unlock()
		return false
	}
	l.gen++
	l.active, l.cut, l.close = true, false, closable
	l.used, l.wrote, l.sent = nil, false, 0
	l.claim, l.claimed, l.refused = nil, false, false
	gen := l.gen
	l.mu.Unlock()
	if d, ok := ctx.Deadline(); ok && byDeadline {
		l.dl = d
	} else if ctx.Done() != nil {
		c := l.spare
		if c == nil {
			c = &call{l: l}
			c.fire = c.interrupt
		}
		l.spare, c.gen, l.cur = nil, gen, c
		l.stop = context.AfterFunc(ctx, c.fire)
	}
	return true
}

// End ends the call Begin started and reports whether it was interrupted.
// A cut call whose reply was read anyway has its reply: the caller tells by
// the command's error. When the call was cut after its command went out and
// failed says its reply was not read, tail reads the rest of the reply (see
// Tail.Read): the caller leaves, the reply is still read. A call cut before
// its command was written (see Sent) has no Tail: what its connection
// read was the set-up's.
func (l *Lane) End(failed bool) (cut bool, tail *Tail) {
	l.stopWatch()
	l.mu.Lock()
	l.active = false
	if !l.dl.IsZero() && failed && !time.Now().Before(l.dl) {
		l.cut = true // ctx's deadline ended the call
	}
	l.dl = time.Time{}
	cut = l.cut
	if cut && failed {
		tail = l.tailLocked()
	}
	l.used = nil
	later := l.later
	l.later = nil
	if cut {
		l.uncutLocked()
	}
	closeNow := l.shut && !l.closed
	l.closed = l.closed || closeNow
	l.mu.Unlock()
	for _, c := range later {
		if tail == nil || c != tail.c {
			_ = c.Conn.Close()
		}
	}
	if closeNow {
		_ = l.rdb.Close() // outside mu: it closes the conns, which take mu
	}
	return cut, tail
}

// stopWatch stops the context.AfterFunc Begin set on the call's ctx (none
// with byDeadline), keeping its call for reuse when it will never run.
func (l *Lane) stopWatch() {
	if l.stop == nil {
		return
	}
	if l.stop() {
		l.spare = l.cur // its AfterFunc will never run
	}
	l.stop, l.cur = nil, nil
}

// tailLocked returns the Tail of a call that was cut and failed, when a
// byte of its command went out on a connection whose last write went out
// whole (nil otherwise: nothing of the reply is on its way). Called with
// mu held.
func (l *Lane) tailLocked() *Tail {
	c := l.used
	if c == nil || !l.wrote || l.sent == 0 {
		return nil
	}
	// The Tail reads on alone: no cut of a later call reaches it, and
	// go-redis (whose pool may still list it, idle: the direct path) no
	// longer sets its deadlines.
	c.held.Store(true)
	delete(l.conns, c)
	return &Tail{c: c, buf: append([]byte(nil), c.rec...), deadline: c.rd}
}

// uncutLocked clears the deadlines in the past that a cut left on the
// lane's connections: they may outlive the call on a connection go-redis
// kept (go-redis sets its own before each read and write unless its
// timeouts are -2). Called with mu held.
func (l *Lane) uncutLocked() {
	for c := range l.conns {
		c.cut.Store(false)
		_ = c.Conn.SetDeadline(time.Time{})
	}
}

// Sent reports whether a byte of the command of the call that ended (since
// Begin, or the last Unsent) was written to a socket: on a connection whose
// set-up was done (a new connection's HELLO, AUTH, SELECT and OnConnect
// are not the command's), a write that put one byte or more in the socket.
// A call that failed with Sent false never reached Redis: it did not run,
// whatever cut it (ctx's end, Shut, a read timeout while the set-up's reply
// was awaited, a deadline passed before the write). A write cut part way
// counts as sent. Only the goroutine that made the call may ask, between
// its I/O and the next Begin.
func (l *Lane) Sent() bool { return l.sent > 0 }

// Written returns how many bytes of the call's commands (since Begin, or
// the last Unsent) were written to a socket set up, as Sent counts them: of
// several commands written at once (a batch, Do), those that start at this
// offset or later never reached Redis. Asked as Sent is.
func (l *Lane) Written() int { return l.sent }

// Unsent starts another command of the call in flight (the EVAL sent after
// an EVALSHA came back NOSCRIPT): Sent then reports that command's bytes,
// and Claim's function is asked again before it is written.
func (l *Lane) Unsent() { l.sent, l.claimed, l.refused = 0, false, false }

// ErrWithdrawn is the error of a call whose write Claim's function refused:
// nothing of it was written.
var ErrWithdrawn = errors.New("inline: the call's command was withdrawn before its write")

// Claim has the call in flight ask claim, once, right before the first
// byte of its command is written on a connection set up (after a new
// connection's dial, HELLO, AUTH, SELECT and OnConnect; on the kept
// connection after its checks): when claim returns false nothing is
// written, the call fails with ErrWithdrawn and Refused reports it (a
// connection of the lane's client that refused is dropped by go-redis).
// Set between Begin and End, by the goroutine that makes the call; Begin
// clears it.
func (l *Lane) Claim(claim func() bool) { l.claim = claim }

// Refused reports whether Claim's function refused the call's write (since
// Begin, or the last Unsent). Asked as Sent is.
func (l *Lane) Refused() bool { return l.refused }

// claimWrite asks the call's claim before its command's first write, and
// reports whether the write may go.
func (l *Lane) claimWrite() bool {
	if l.claim == nil || l.claimed {
		return true
	}
	if !l.claim() {
		l.refused = true
		return false
	}
	l.claimed = true
	return true
}

// tailBound bounds a tail's read when go-redis set no read deadline.
const tailBound = 30 * time.Second

// Tail is the rest of a cut call's reply, on the connection it went out
// on, which go-redis has given up (it is closed once the tail is read).
type Tail struct {
	c        *conn
	buf      []byte
	deadline time.Time
}

// Read reads until complete reports that the bytes read (those go-redis
// read before the cut included) hold the whole reply, or the read deadline
// go-redis had set passes, and returns them. It closes the connection.
func (t *Tail) Read(complete func([]byte) bool) ([]byte, error) {
	c := t.c
	defer func() {
		c.l.mu.Lock()
		c.held.Store(false)
		c.l.mu.Unlock()
		_ = c.Conn.Close()
	}()
	d := t.deadline
	if d.IsZero() || d.After(time.Now().Add(tailBound)) {
		d = time.Now().Add(tailBound)
	}
	if err := c.Conn.SetReadDeadline(d); err != nil {
		return t.buf, err
	}
	var p [512]byte
	for !complete(t.buf) {
		n, err := c.Conn.Read(p[:])
		t.buf = append(t.buf, p[:n]...)
		if err != nil && !complete(t.buf) {
			return t.buf, err
		}
	}
	return t.buf, nil
}

// Shut makes Begin refuse from now on, interrupts the call in flight if it
// is closable, and closes the lane's client once no call is in flight.
func (l *Lane) Shut() {
	l.mu.Lock()
	l.shut = true
	if l.active {
		if l.close {
			l.cutLocked()
		}
		l.mu.Unlock()
		return
	}
	closeNow := !l.closed
	l.closed = true
	l.mu.Unlock()
	if closeNow {
		_ = l.rdb.Close() // outside mu: it closes the conns, which take mu
	}
}

// interrupt cuts call gen if it is still in flight.
func (l *Lane) interrupt(gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active && l.gen == gen {
		l.cutLocked()
	}
}

func (l *Lane) cutLocked() {
	l.cut = true
	for c := range l.conns {
		c.interrupt()
	}
}

// track wraps a connection the lane's client dialed; one dialed during a
// cut call is cut at once.
func (l *Lane) track(nc net.Conn) *conn {
	c := &conn{Conn: nc, l: l, born: time.Now()}
	l.mu.Lock()
	l.conns[c] = struct{}{}
	if l.active && l.cut {
		c.interrupt()
	}
	l.mu.Unlock()
	return c
}

// conn is a connection whose deadlines stay in the past once cut, and
// which keeps what it read since the last write (the reply so far).
type conn struct {
	net.Conn
	l   *Lane
	cut atomic.Bool

	rec []byte    // read since the last write
	rd  time.Time // the read deadline last asked for
	// held: a Tail reads on it (set under l.mu, read by go-redis's pool
	// too): Close leaves it open, Set*Deadline do nothing.
	held atomic.Bool

	// For the direct path (direct.go): the socket's RawConn (nil: not a
	// socket), when it was dialed and last used directly, and dead: it
	// failed a direct call, go-redis must drop it.
	raw  syscall.RawConn
	born time.Time
	last time.Time
	dead atomic.Bool
	// ready is set once go-redis finished setting the connection up (see
	// the OnConnect of newLane): a write on it is a command's.
	ready atomic.Bool
	// fence names the connection on its server (nil: unknown, see
	// probeFence).
	fence atomic.Pointer[Fence]
}

// sysConn is a conn over a socket (not TLS): its SyscallConn gives
// go-redis's pool the socket, so that its health check (a non-blocking peek
// before a pooled connection is reused) still finds a connection the server
// closed, as it does for the user's own connections. Without it, after a
// Redis restart the first call went out on a dead connection and failed
// with EOF. A TLS connection is not checked by go-redis either way.
// The socket's RawConn is taken once, at dial: go-redis asks for it before
// every reuse, and a fresh one costs an allocation each time.
type sysConn struct {
	*conn
}

func (c *sysConn) SyscallConn() (syscall.RawConn, error) {
	if c.dead.Load() {
		return nil, errDead
	}
	return c.raw, nil
}

// netConn returns c as the dialer's net.Conn: a sysConn when the socket
// under it has one.
func netConn(c *conn) net.Conn {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw = raw
			return &sysConn{conn: c}
		}
	}
	return c
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.l.used = c
	c.rec = append(c.rec, p[:n]...)
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	if c.ready.Load() && !c.l.claimWrite() {
		c.l.used, c.l.wrote = c, false
		return 0, ErrWithdrawn
	}
	n, err := c.Conn.Write(p)
	c.l.used = c
	c.rec = c.rec[:0]
	c.l.wrote = err == nil && n == len(p)
	if n > 0 && c.ready.Load() {
		c.l.sent += n
	}
	return n, err
}

func (c *conn) interrupt() {
	c.cut.Store(true)
	_ = c.Conn.SetDeadline(past)
}

// bound returns the deadline to set for t: past once cut, else t capped
// by the call's ctx deadline (Begin's byDeadline).
func (c *conn) bound(t time.Time) time.Time {
	if c.cut.Load() {
		return past
	}
	if dl := c.l.dl; !dl.IsZero() && (t.IsZero() || dl.Before(t)) {
		return dl
	}
	return t
}

// The Set*Deadline methods do nothing while a Tail reads on c (it sets its
// own on c.Conn: go-redis's health check would clear it). An interrupt
// between bound and the deadline set is not lost: once set, cut is read
// again (interrupt sets cut before its past deadline).
func (c *conn) SetDeadline(t time.Time) error {
	if c.held.Load() {
		return nil
	}
	c.rd = t
	err := c.Conn.SetDeadline(c.bound(t))
	if c.cut.Load() {
		err = c.Conn.SetDeadline(past)
	}
	return err
}

func (c *conn) SetReadDeadline(t time.Time) error {
	if c.held.Load() {
		return nil
	}
	c.rd = t
	err := c.Conn.SetReadDeadline(c.bound(t))
	if c.cut.Load() {
		err = c.Conn.SetReadDeadline(past)
	}
	return err
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	if c.held.Load() {
		return nil
	}
	err := c.Conn.SetWriteDeadline(c.bound(t))
	if c.cut.Load() {
		err = c.Conn.SetWriteDeadline(past)
	}
	return err
}

func (c *conn) Close() error {
	l := c.l
	l.mu.Lock()
	delete(l.conns, c)
	if l.direct == c {
		l.direct = nil
	}
	held := c.held.Load()
	if !held && l.active && l.cut {
		// Cut mid-call: End decides (a Tail may read the reply on).
		l.later = append(l.later, c)
		held = true
	}
	l.mu.Unlock()
	if held {
		return nil // the Tail or End closes it
	}
	return c.Conn.Close()
}
