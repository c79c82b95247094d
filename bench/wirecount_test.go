package main

import (
	"context"
	"syscall"
	"testing"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// TestRespWriteParser counts commands split across writes at every byte,
// and tells set-up commands from the library's.
func TestRespWriteParser(t *testing.T) {
	stream := "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n" +
		"*4\r\n$7\r\nevalsha\r\n$40\r\n0123456789012345678901234567890123456789\r\n$1\r\n1\r\n$3\r\nkey\r\n" +
		"*1\r\n$4\r\nPING\r\n" +
		"*3\r\n$6\r\nclient\r\n$7\r\nsetinfo\r\n$0\r\n\r\n"
	for cut := 0; cut <= len(stream); cut++ {
		var p respWriteParser
		c1, s1 := p.feed([]byte(stream[:cut]), nil)
		c2, s2 := p.feed([]byte(stream[cut:]), nil)
		if c1+c2 != 2 || s1+s2 != 2 {
			t.Fatalf("cut at %d: %d commands, %d set-up; want 2 and 2", cut, c1+c2, s1+s2)
		}
	}
}

// TestCountedConnKeepsTheDirectPath: a connection the counter wraps still
// gives its socket (syscall.Conn), so that goredisson's lane keeps it for its
// direct path (it keeps only a connection it can peek) and go-redis's pool
// runs its health check on it. Without SyscallConn every counted goredisson
// call went through go-redis's command path: (c) measured another code path
// than an application runs.
func TestCountedConnKeepsTheDirectPath(t *testing.T) {
	srv, err := redistest.Start()
	if err != nil {
		t.Skip("no redis-server:", err)
	}
	defer srv.Close()
	var cnt counter
	nc, err := cnt.dialer()(context.Background(), "tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := nc.(syscall.Conn)
	_ = nc.Close()
	if !ok {
		t.Fatalf("a counted connection (%T) gives no socket (syscall.Conn)", nc)
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Fatal(err)
	}
	rdb := newRedis(srv.Addr, 4, &cnt)
	defer rdb.Close()
	l, _ := findLib(rlockName)
	newMutex, closeLib, err := l.open(env{rdb: rdb, addr: srv.Addr, cnt: &cnt})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLib()
	m := newMutex(context.Background(), "bench:test:direct")
	pairs := func(n int) {
		for range n {
			if err := m.lock(); err != nil {
				t.Fatal(err)
			}
			if err := m.unlock(); err != nil {
				t.Fatal(err)
			}
		}
	}
	pairs(50) // the lane keeps a connection once a call through go-redis went well
	peeks, wire := cnt.sockets.Load(), cnt.cmds.Load()
	pairs(100)
	if wire := cnt.cmds.Load() - wire; wire < 200 {
		t.Fatalf("%d commands counted on the wire for 100 pairs; want at least 200", wire)
	}
	// Through go-redis every call takes a pooled connection, whose health
	// check asks for its socket; the direct path asks for none.
	peeks = cnt.sockets.Load() - peeks
	t.Logf("%d health checks in 200 calls", peeks)
	if peeks > 20 {
		t.Fatalf("go-redis's pool checked a connection %d times in 200 calls: the calls went through go-redis, not the lane's direct path", peeks)
	}
}
