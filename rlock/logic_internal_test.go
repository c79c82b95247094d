package rlock

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/watchdog"
)

// Tests of the package's pure logic: no Redis.

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
	var locks []Locker
	for i, wd := range []time.Duration{30 * time.Second, 5 * time.Second, 10 * time.Second} {
		// No call of the RedLock's reaches these addresses (only the
		// Client's start-up look at the eviction policy tries, and fails).
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("master-%d:6379", i)})
		defer rdb.Close()
		c, err := NewClient(rdb, WithWatchdogTimeout(wd), WithClientRegistry(false))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		locks = append(locks, c.NewLock("j"))
	}
	r, err := NewRedLock(locks...)
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
