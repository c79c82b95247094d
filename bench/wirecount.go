package main

// Counting a client's commands on the wire. A go-redis hook sees only the
// commands that go through the client it is added to; goredisson's inline
// lane sends from connections of its own, dialed from the client's options
// (its Dialer included), so the hook missed them (0.00-0.28 commands per
// acquisition in (c) once the lane came). The counter's dialer wraps every
// connection dialed from the options and counts what is written on it: a
// command is a top-level RESP array, a round trip a Write that carries at
// least one (go-redis writes a pipeline with one flush).

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"
)

// dialer returns the dialer newRedis installs for c.
func (c *counter) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countedConn{Conn: nc, cnt: c}, nil
	}
}

// countedConn counts the commands written on it into cnt.
type countedConn struct {
	net.Conn
	cnt *counter
	p   respWriteParser
}

// SyscallConn gives the socket under the connection, as the unwrapped
// connection would: goredisson's lane keeps only a connection it can peek
// for its direct path, and go-redis's pool health check peeks only such a
// connection. Without it, a counted client ran another code path than an
// application's.
func (c *countedConn) SyscallConn() (syscall.RawConn, error) {
	c.cnt.sockets.Add(1)
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

func (c *countedConn) Write(b []byte) (int, error) {
	cmds, setup := c.p.feed(b, c.cnt.named)
	c.cnt.dials.Add(int64(setup))
	if cmds > 0 {
		c.cnt.cmds.Add(int64(cmds))
		c.cnt.trips.Add(1)
		c.cnt.mu.Lock()
		c.cnt.times = append(c.cnt.times, time.Now())
		c.cnt.mu.Unlock()
		if c.cnt.trace {
			logf("    wrote %d commands", cmds)
		}
	}
	return c.Conn.Write(b)
}

// respWriteParser follows a stream of client commands (arrays of bulk
// strings) across writes.
type respWriteParser struct {
	line  []byte // a header line not yet ended
	elems int    // bulk strings left in the current command
	skip  int    // bytes of the current bulk string (and its CRLF) left
	first bool   // the next bulk string is the command's name
	name  []byte // the command's name, as far as read
}

// feed consumes b and returns the commands it completed: the library's and
// the connection set-up's (HELLO, CLIENT ...); named (nil: none) is told
// the name of each of the library's.
func (p *respWriteParser) feed(b []byte, named func([]byte)) (cmds, setup int) {
	for len(b) > 0 {
		if p.skip > 0 {
			n := min(p.skip, len(b))
			if p.first {
				body := n
				if rest := p.skip - 2; rest < body { // leave the CRLF out
					body = max(rest, 0)
				}
				p.name = append(p.name, b[:body]...)
			}
			b, p.skip = b[n:], p.skip-n
			if p.skip == 0 {
				p.first = false
				p.elems--
				if p.elems == 0 {
					if isSetupName(p.name) {
						setup++
					} else {
						cmds++
						if named != nil {
							named(p.name)
						}
					}
				}
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.line = append(p.line, b...)
			return cmds, setup
		}
		line := append(p.line, b[:i+1]...)
		p.line, b = p.line[:0], b[i+1:]
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			continue
		}
		n, _ := strconv.Atoi(string(line[1:]))
		switch line[0] {
		case '*':
			p.elems, p.first, p.name = n, true, p.name[:0]
			if n <= 0 {
				cmds++
			}
		case '$':
			p.skip = n + 2
		}
	}
	return cmds, setup
}

// isSetupName reports whether a command is part of a connection's set-up.
func isSetupName(name []byte) bool {
	return bytes.EqualFold(name, []byte("hello")) || bytes.EqualFold(name, []byte("client"))
}
