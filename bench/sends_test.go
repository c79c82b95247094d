package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// TestSendsListsTheTopLevelCommands: every Redis row's sends names each
// command it sends itself (counted on the wire, or by the rueidis wrapper),
// so that the "Redis µs per call" column shows all of them and none of the
// commands its scripts run inside (INFO commandstats counts those too).
func TestSendsListsTheTopLevelCommands(t *testing.T) {
	srv, err := redistest.Start()
	if err != nil {
		t.Skip("no redis-server:", err)
	}
	defer srv.Close()
	for _, l := range allLibs {
		t.Run(l.name, func(t *testing.T) {
			cnt := counter{names: map[string]int64{}}
			rdb := newRedis(srv.Addr, 4, &cnt)
			defer rdb.Close()
			newMutex, closeLib, err := l.open(env{rdb: rdb, addr: srv.Addr, cnt: &cnt})
			if err != nil {
				t.Fatal(err)
			}
			m := newMutex(context.Background(), "bench:test:sends:"+slug(l.name))
			for range 20 {
				if err := m.lock(); err != nil {
					t.Fatal(err)
				}
				if err := m.unlock(); err != nil {
					t.Fatal(err)
				}
			}
			closeLib()
			cnt.mu.Lock()
			defer cnt.mu.Unlock()
			var seen []string
			for name := range cnt.names {
				seen = append(seen, name)
			}
			slices.Sort(seen)
			t.Logf("sent: %v", cnt.names)
			if len(l.sends) == 0 {
				t.Fatalf("no sends declared; it sent %s", strings.Join(seen, ", "))
			}
			for _, name := range seen {
				switch {
				case slices.Contains(l.sends, name):
				case slices.Contains(l.oneOff, name):
					if cnt.names[name] > 2 {
						t.Errorf("sent %q %d times in 20 pairs, listed as sent once per client", name, cnt.names[name])
					}
				default:
					t.Errorf("sent %q (%d times), in neither its sends %v nor its oneOff %v", name, cnt.names[name], l.sends, l.oneOff)
				}
			}
		})
	}
}

// TestRedissonScriptsRow: the row's scripts exclude, re-enter and free as
// Redisson's RLock does on its layout, and leave no unlock latch behind.
func TestRedissonScriptsRow(t *testing.T) {
	srv, err := redistest.Start()
	if err != nil {
		t.Skip("no redis-server:", err)
	}
	defer srv.Close()
	rdb := newRedis(srv.Addr, 4, nil)
	defer rdb.Close()
	newMutex, closeLib, err := openRedissonScripts(env{rdb: rdb, addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLib()
	ctx := context.Background()
	const key = "bench:test:redisson"
	a := newMutex(ctx, key)
	if err := a.lock(); err != nil {
		t.Fatal(err)
	}
	if err := a.lock(); err != nil { // re-entry
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := newMutex(short, key).lock(); err == nil {
		t.Fatal("a second owner took a held lock")
	}
	if err := a.unlock(); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, key).Result(); n != 1 {
		t.Fatal("the first of two unlocks freed the lock")
	}
	if err := a.unlock(); err != nil {
		t.Fatal(err)
	}
	if err := a.unlock(); !errors.Is(err, errNotHeld) {
		t.Fatalf("an unlock of a free lock: %v, want errNotHeld", err)
	}
	b := newMutex(ctx, key)
	if err := b.lock(); err != nil {
		t.Fatal(err)
	}
	latches, _ := rdb.Keys(ctx, "redisson_unlock_latch:*").Result()
	if len(latches) > 0 {
		t.Fatalf("unlock latches left: %v", latches)
	}
}
