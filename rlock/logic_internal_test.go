package rlock

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/watchdog"
)

// Tests of the package's pure logic: no Redis.

func TestParseReply(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want any
	}{
		{":42\r\n", int64(42)},
		{":-3\r\n", int64(-3)},
		{"$-1\r\n", nil},
		{"_\r\n", nil},
		{"*-1\r\n", nil},
		{"+OK\r\n", "OK"},
		{"$5\r\nhello\r\n", "hello"},
		{"$0\r\n\r\n", ""},
		{"-NOSCRIPT No matching script\r\n", replyError("NOSCRIPT No matching script")},
		{"!9\r\nERR boom!\r\n", replyError("ERR boom!")},
		{"*1\r\n:1\r\n", []any{int64(1)}},
		{"*2\r\n:3\r\n:17\r\n", []any{int64(3), int64(17)}},
		{"%1\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n", []any{"maxmemory-policy", "noeviction"}},
		{"#t\r\n", int64(1)},
		{"#f\r\n", nil},
	} {
		got, err := parseReply([]byte(c.raw))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseReply(%q) = %#v, %v; want %#v", c.raw, got, err, c.want)
		}
	}
	for _, bad := range []string{"", ":1", "$5\r\nhel", "*2\r\n:1\r\n", "?x\r\n", ":1\r\n:2\r\n"} {
		if _, err := parseReply([]byte(bad)); err == nil {
			t.Errorf("parseReply(%q) accepted a broken reply", bad)
		}
	}
}

func TestReplyErrorKinds(t *testing.T) {
	for msg, notRun := range map[string]bool{
		"NOSCRIPT No matching script": true, "MOVED 3999 127.0.0.1:6381": true, "ASK 3999 127.0.0.1:6381": true,
		"LOADING Redis is loading": true, "READONLY You can't write": true, "TRYAGAIN": true, "CLUSTERDOWN": true,
		"ERR Error running script": false, "WRONGTYPE Operation against a key": false, "OOM command not allowed": false,
	} {
		if got := replyError(msg).notRun(); got != notRun {
			t.Errorf("replyError(%q).notRun() = %v, want %v", msg, got, notRun)
		}
	}
	if !replyError("NOSCRIPT x").noScript() || replyError("ERR x").noScript() {
		t.Error("noScript")
	}
}

func TestScriptsAreComplete(t *testing.T) {
	entries, err := fs.ReadDir(luaFS, "lua")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		n++
		name := strings.TrimSuffix(e.Name(), ".lua")
		s := mustScript(name)
		if !strings.HasPrefix(s.src, "-- "+name+".lua: ") {
			t.Errorf("%s: does not open with its header", name)
		}
		for _, want := range []string{"KEYS[1]", "Returns:"} {
			if !strings.Contains(s.src, want) {
				t.Errorf("%s: header does not document %s", name, want)
			}
		}
		if strings.Contains("\n"+s.src, "\n"+includePrefix) {
			t.Errorf("%s: an include was not expanded", name)
		}
		sum := sha1.Sum([]byte(s.src))
		if s.sha != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: sha %s is not SHA1 of the source", name, s.sha)
		}
	}
	if n != 23 {
		t.Errorf("%d scripts embedded, want 23", n)
	}
}

func TestExpandIncludes(t *testing.T) {
	libs := map[string]string{"a": "local function a() end\n", "b": "local B = 1\n"}
	read := func(lib string) ([]byte, error) {
		if s, ok := libs[lib]; ok {
			return []byte(s), nil
		}
		return nil, fmt.Errorf("no %s", lib)
	}
	got, err := expandIncludes("-- x.lua\n--#include a\n--#include  b \nreturn 1\n", read)
	if err != nil || got != "-- x.lua\nlocal function a() end\nlocal B = 1\nreturn 1\n" {
		t.Errorf("expandIncludes = %q, %v", got, err)
	}
	if _, err := expandIncludes("--#include missing\n", read); err == nil || !strings.Contains(err.Error(), `include "missing"`) {
		t.Errorf("a missing library: %v", err)
	}
}

func TestLockOrder(t *testing.T) {
	var c1, c2 Client
	a2, b1, a1 := c2.NewLock("a"), c1.NewLock("b"), c1.NewLock("a")
	got := lockOrder([]Locker{a2, b1, a1})
	if got[0].Name() != "a" || got[1].Name() != "a" || got[2] != b1 {
		t.Errorf("lockOrder by name: %v %v %v", got[0].Name(), got[1].Name(), got[2].Name())
	}
	// The order does not depend on the order given.
	again := lockOrder([]Locker{a1, b1, a2})
	for i := range got {
		if got[i].Name() != again[i].Name() {
			t.Errorf("lockOrder is not canonical: %v vs %v", got, again)
		}
	}
}

func TestNewGroupRefusesDuplicatesAndNils(t *testing.T) {
	var c Client
	l := c.NewLock("x")
	for _, locks := range [][]Locker{nil, {l, l}, {l, nil}, {l, (*Lock)(nil)}, {c.NewLock("")}} {
		if _, err := newGroup("multilock", locks); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("newGroup(%v): %v, want ErrInvalidArgument", locks, err)
		}
	}
	if _, err := newGroup("multilock", []Locker{l, c.NewLock("y")}); err != nil {
		t.Error(err)
	}
}

func TestRedLockKeepAndQuorum(t *testing.T) {
	var c1, c2, c3 Client
	for i, c := range []*Client{&c1, &c2, &c3} {
		c.rdb = redis.NewClient(&redis.Options{Addr: fmt.Sprintf("master-%d:6379", i)}) // never dialed
		defer c.rdb.Close()
	}
	c1.opts.watchdogTimeout, c2.opts.watchdogTimeout, c3.opts.watchdogTimeout = 30*time.Second, 5*time.Second, 10*time.Second
	r, err := NewRedLock(c1.NewLock("j"), c2.NewLock("j"), c3.NewLock("j"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Quorum() != 2 {
		t.Errorf("quorum of 3 = %d", r.Quorum())
	}
	if got := r.keep(0); got != 5*time.Second {
		t.Errorf("a watchdog lease keeps the shortest watchdog timeout: %v", got)
	}
	if got := r.keep(time.Minute); got != time.Minute {
		t.Errorf("a fixed lease is kept: %v", got)
	}
}

func TestLeaseDeadlineAllowance(t *testing.T) {
	sent := time.Unix(1000, 0)
	for _, lease := range []time.Duration{time.Second, 30 * time.Second} {
		d := watchdog.Deadline(sent, lease).Sub(sent)
		want := lease - lease/100 - 2*time.Millisecond
		if d != want {
			t.Errorf("deadline of a %v lease = send + %v, want %v", lease, d, want)
		}
	}
}
