package main

import (
	"context"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/internal/layout"
)

func runWatch(ctx context.Context, env *cli, args []string) error {
	fs, addr := env.flags("watch", "[flags] NAME",
		"Prints the events of the lock NAME as they happen, one per line: unlock\n"+
			"messages on its channels (plain, read-write and fair per-waiter), and changes\n"+
			"of its holders (locked, re-entered, released, unlocked, expired). Holder\n"+
			"changes are seen through keyspace notifications when the server has them on\n"+
			"(--notify turns them on with CONFIG SET), and by reading the lock every\n"+
			"--interval in any case. Stops on SIGINT/SIGTERM, after --count events or\n"+
			"after --for.", defaultAddr())
	count := fs.Int("count", 0, "stop after this many events (0: no limit)")
	duration := fs.Duration("for", 0, "stop after this long (0: no limit)")
	interval := fs.Duration("interval", 100*time.Millisecond, "read the lock at least this often")
	notify := fs.Bool("notify", false, "turn on keyspace notifications for hashes, generic and expired events (CONFIG SET notify-keyspace-events)")
	name, err := parseNamed(fs, args)
	if err != nil {
		return err
	}
	if *interval <= 0 || *count < 0 || *duration < 0 {
		return fail(exitUsage, "--interval must be > 0, --count and --for >= 0")
	}
	rdb, _, closeAll, err := connect(ctx, *addr)
	if err != nil {
		return err
	}
	defer closeAll()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	if *notify {
		if err := enableNotifications(ctx, rdb); err != nil {
			return err
		}
	}
	keyspace := fmt.Sprintf("__keyspace@%d__:%s", rdb.Options().DB, name)
	sub := rdb.Subscribe(ctx, layout.Channel(name), layout.RWChannel(name), keyspace)
	defer sub.Close()
	if err := sub.PSubscribe(ctx, layout.Channel(name)+":*"); err != nil {
		return err
	}
	if _, err := sub.Receive(ctx); err != nil { // wait for the subscription to be in place
		return fail(exitUnavailable, "subscribing: %v", err)
	}
	cfg, _ := rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	mode := "off: holder changes are seen by reading the lock every " + interval.String()
	if v := cfg["notify-keyspace-events"]; strings.ContainsAny(v, "KA") {
		mode = "on (" + v + ")"
	}
	fmt.Fprintf(env.stdout, "watching %s on %s; keyspace notifications %s\n", name, *addr, mode)

	w := &watcher{env: env, rdb: rdb, name: name, limit: *count}
	if err := w.refresh(ctx, ""); err != nil {
		return err
	}
	ticker := time.NewTicker(*interval)
	defer ticker.Stop()
	msgs := sub.Channel()
	for !w.done() {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return fail(exitUnavailable, "subscription closed")
			}
			if m.Channel == keyspace {
				err = w.refresh(ctx, m.Payload)
			} else {
				w.event("message", fmt.Sprintf("%s %q", m.Channel, m.Payload))
				w.sawUnlock = true
				err = w.refresh(ctx, "")
			}
		case <-ticker.C:
			err = w.refresh(ctx, "")
		}
		if err != nil && ctx.Err() == nil {
			return fail(exitUnavailable, "%v", err)
		}
	}
	return nil
}

// enableNotifications adds hash (h), generic (g) and expired (x) keyspace
// events (K) to the server's notify-keyspace-events.
func enableNotifications(ctx context.Context, rdb *redis.Client) error {
	cfg, err := rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return fail(exitFailure, "reading notify-keyspace-events: %v", err)
	}
	v := cfg["notify-keyspace-events"]
	for _, f := range "Khgx" {
		if !strings.ContainsRune(v, f) && !(f != 'K' && strings.ContainsRune(v, 'A')) {
			v += string(f)
		}
	}
	if err := rdb.ConfigSet(ctx, "notify-keyspace-events", v).Err(); err != nil {
		return fail(exitFailure, "turning on keyspace notifications: %v", err)
	}
	return nil
}

// watcher turns successive snapshots of a lock into events.
type watcher struct {
	env   *cli
	rdb   *redis.Client
	name  string
	limit int
	n     int
	last  map[string]int // holder field -> count
	// sawUnlock: an unlock message arrived since the last read, so holders
	// that vanished were released rather than expired.
	sawUnlock bool
}

func (w *watcher) done() bool { return w.limit > 0 && w.n >= w.limit }

func (w *watcher) event(kind, detail string) {
	if w.done() {
		return
	}
	w.n++
	fmt.Fprintf(w.env.stdout, "%s %-10s %s\n", time.Now().Format("15:04:05.000"), kind, detail)
}

// refresh reads the lock and prints what changed since the last read; why
// is the keyspace event that prompted it, if any. Holders that vanished
// were unlocked when an unlock message came or the key was deleted, and
// expired when the key expired or vanished without a message.
func (w *watcher) refresh(ctx context.Context, why string) error {
	released := w.sawUnlock || why == "del"
	w.sawUnlock = false
	info, err := inspect.Lock(ctx, w.rdb, w.name)
	if err != nil {
		return err
	}
	now := map[string]int{}
	for _, h := range info.Holders {
		now[h.Field] = h.Count
	}
	first := w.last == nil
	prev := w.last
	w.last = now
	if first {
		if len(now) > 0 {
			w.event("held", info.String())
		} else {
			w.event("unlocked", info.String())
		}
		return nil
	}
	kept := 0
	for f := range prev {
		if _, still := now[f]; still {
			kept++
		}
	}
	for f := range prev {
		if _, still := now[f]; still {
			continue
		}
		switch {
		case kept > 0:
			w.event("left", f)
		case why == "expired" || !released:
			w.event("expired", fmt.Sprintf("lease of %s ran out", f))
		default:
			w.event("unlocked", fmt.Sprintf("by %s", f))
		}
	}
	for f, n := range now {
		switch p, had := prev[f]; {
		case !had && kept == 0:
			w.event("locked", fmt.Sprintf("by %s (holds %d, ttl %s)", f, n, ttlString(info.TTL)))
		case !had:
			w.event("joined", fmt.Sprintf("%s (holds %d, %s)", f, n, info.Kind))
		case n > p:
			w.event("reentered", fmt.Sprintf("by %s (holds %d)", f, n))
		case n < p:
			w.event("released", fmt.Sprintf("one hold of %s (holds %d)", f, n))
		}
	}
	return nil
}
