package inline

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The direct path: once a call through the lane's go-redis client went
// well, the lane keeps the connection it used (dialed and set up by
// go-redis: TLS, AUTH, HELLO, SELECT, OnConnect) and runs the next calls on
// it itself (Lane.Do): it writes the command as given and reads one reply,
// with no go-redis command, hook, pool Get/Put or reply parse. The
// connection stays in go-redis's pool, idle as far as go-redis knows: the
// lane's client is used only when the lane has no such connection, so
// go-redis never hands it out while the lane uses it; one that failed is
// marked dead, and go-redis's health check then drops it (see
// sysConn.SyscallConn). Only a socket's connection is kept (TLS: never),
// as only it can be checked for a close by the server, as go-redis checks
// a pooled one: here only when it sat idle PeekIdle or longer (see arm).

// errDead is what a dead connection's SyscallConn returns: go-redis's
// health check then drops it.
var errDead = errors.New("inline: connection dropped by the lane")

// Adopt keeps the connection the call in flight used for the direct path,
// if that call (through the lane's go-redis client) went well: the
// connection is back in go-redis's pool, idle. A lane whose client has a
// pool hook acting on idle connections (StreamingCredentialsProvider:
// go-redis re-AUTHs an idle connection on a goroutine of its own) keeps
// none: its AUTH would interleave with the lane's command.
func (l *Lane) Adopt() {
	c := l.used
	if !canPeek || c == nil || c.raw == nil || c.dead.Load() || !l.adoptable {
		return
	}
	l.mu.Lock()
	if _, open := l.conns[c]; open && !l.cut {
		l.direct = c
		c.last = time.Now()
		c.ready.Store(true) // a call went well on it: its set-up is done
	}
	l.mu.Unlock()
}

// Discard ends the direct use of the kept connection, which go-redis then
// drops: its stream holds more than the reply just read.
func (l *Lane) Discard() {
	l.mu.Lock()
	c := l.direct
	l.mu.Unlock()
	if c != nil {
		l.drop(c, true)
	}
}

// drop ends the direct use of c; dead also makes go-redis drop it.
func (l *Lane) drop(c *conn, dead bool) {
	if dead {
		c.dead.Store(true)
	}
	l.mu.Lock()
	if l.direct == c {
		l.direct = nil
	}
	l.mu.Unlock()
}

// Do runs a command, or several written at once (cmd: their RESP bytes),
// on the lane's kept connection, between Begin and End, and returns the
// bytes read, valid until the next call. complete reports whether the bytes
// read hold the whole reply (every reply, for several commands). handled is
// false, and nothing was sent, when the lane keeps no connection or the one
// it keeps was cut already, or, idle PeekIdle or longer, was closed by the
// server or has unread bytes, or is past go-redis's idle or lifetime
// bounds: the caller then sends through Client. When Claim's function
// refuses the write, nothing is written: the error is ErrWithdrawn and
// the connection stays kept. An error means that no
// whole reply was read, as go-redis's would: the bytes read so far come
// with it (the whole replies among them are those of the first commands;
// Written tells which commands went out), and a cut call's End hands back
// a Tail as for one through Client.
func (l *Lane) Do(ctx context.Context, cmd []byte, complete func([]byte) bool) (reply []byte, err error, handled bool) {
	c, now := l.kept()
	if c == nil {
		return nil, nil, false
	}
	if c.arm(ctx, l.rdb.Options(), now) != nil {
		// Closed by the server, unread bytes (go-redis reads them), or cut
		// already: go-redis's client decides.
		l.drop(c, false)
		return nil, nil, false
	}
	if !l.claimWrite() {
		return nil, ErrWithdrawn, true // nothing written: c stays kept
	}
	err = c.roundTrip(cmd, complete)
	c.last = now
	if err != nil {
		l.drop(c, true) // its stream may be broken: go-redis drops it
		if !complete(c.rec) {
			return c.rec, err, true
		}
	}
	return c.rec, nil, true
}

// kept returns the connection the lane keeps for the direct path and the
// time of the call, nil when it keeps none or the one it kept is past
// go-redis's ConnMaxLifetime or ConnMaxIdleTime (that one is dropped:
// go-redis drops it at its next Get).
func (l *Lane) kept() (c *conn, now time.Time) {
	l.mu.Lock()
	c = l.direct
	l.mu.Unlock()
	if c == nil {
		return nil, time.Time{}
	}
	now = time.Now()
	o := l.rdb.Options()
	if (o.ConnMaxLifetime > 0 && now.Sub(c.born) >= o.ConnMaxLifetime) ||
		(o.ConnMaxIdleTime > 0 && now.Sub(c.last) >= o.ConnMaxIdleTime) {
		l.drop(c, false)
		return nil, now
	}
	return c, now
}

// PeekIdle is how long a kept connection sits idle before the next call
// on it checks it first (peek: go-redis's health check of a pooled
// connection, a system call). A connection used more recently is not
// checked: a server that closed it within PeekIdle (a restart) fails the
// call that meets it with no reply (EOF), as any connection lost mid-call;
// no reply is ever read but the call's own (a call that read no whole
// reply drops the connection, and the RESP3 pushes that come between calls
// are skipped before the reply), and the next call dials anew. Servers
// close idle clients after their timeout, 1 s or more: those are checked.
//
// It is 0 (every call peeks, as go-redis's pool does): with 1 s, an Unlock
// right after a Redis restart met the closed connection, and its settle
// answered nil though the restart had dropped the hold (the model checker:
// 'FairLock wd=2s,6s clients=ip; c0o1 trylock wd; c0o1 trylock 14s; c0o1
// unlock; restart; c0o1 unlock').
const PeekIdle = 0

// errCut is arm's refusal of a connection a cut (ctx's end, Shut) reached
// before the call wrote anything: go-redis's client then fails it unsent.
var errCut = errors.New("inline: the call was cut")

// arm readies c for a command as go-redis readies a pooled connection: it
// sets the deadlines of o's read and write timeouts from now (capped by
// ctx's deadline with ContextTimeoutEnabled), then, when c sat idle
// PeekIdle or longer since its last call, checks that the server has not
// closed the socket and that no byte waits unread (peek).
func (c *conn) arm(ctx context.Context, o *redis.Options, now time.Time) (err error) {
	if c.cut.Load() {
		return errCut
	}
	var cd time.Time // ctx's deadline, when go-redis would honour it
	if o.ContextTimeoutEnabled {
		cd, _ = ctx.Deadline()
	}
	if o.ReadTimeout == o.WriteTimeout && o.ReadTimeout >= 0 {
		err = c.SetDeadline(deadline(now, o.ReadTimeout, cd))
	} else {
		if o.WriteTimeout >= 0 {
			err = c.SetWriteDeadline(deadline(now, o.WriteTimeout, cd))
		}
		if err == nil && o.ReadTimeout >= 0 {
			err = c.SetReadDeadline(deadline(now, o.ReadTimeout, cd))
		}
	}
	if err == nil && now.Sub(c.last) >= PeekIdle {
		err = c.peek()
	}
	return err
}

// roundTrip writes cmd on c and reads until complete reports a whole reply
// in c.rec, or a read fails.
func (c *conn) roundTrip(cmd []byte, complete func([]byte) bool) error {
	if _, err := c.Write(cmd); err != nil {
		return err
	}
	for !complete(c.rec) {
		if err := c.readMore(); err != nil {
			return err
		}
	}
	return nil
}

// deadline is go-redis's deadline for a timeout (pool.Conn.deadline): none
// for 0, capped by cd (ctx's deadline with ContextTimeoutEnabled). A
// negative timeout (go-redis's -2 before its defaults) sets none at all.
func deadline(now time.Time, t time.Duration, cd time.Time) time.Time {
	if t == 0 {
		return cd
	}
	d := now.Add(t)
	if !cd.IsZero() && cd.Before(d) {
		return cd
	}
	return d
}

// readMore reads into the spare capacity of rec.
func (c *conn) readMore() error {
	if cap(c.rec)-len(c.rec) < 256 {
		c.rec = append(c.rec, make([]byte, 512)...)[:len(c.rec)]
	}
	n, err := c.Conn.Read(c.rec[len(c.rec):cap(c.rec)])
	c.l.used = c
	c.rec = c.rec[:len(c.rec)+n]
	return err
}
