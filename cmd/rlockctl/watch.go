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
		"Prints the lock NAME's state (a line \"state: ...\"), then its events as they\n"+
			"happen, one per line: unlock messages on its channels (plain, read-write and\n"+
			"fair per-waiter), and changes of its holders (locked, reentered, released,\n"+
			"unlocked, force-unlocked, expired). With keyspace notifications on (K with h,\n"+
			"g and x, or A; --notify turns them on with CONFIG SET) holder changes are seen\n"+
			"as they happen, and a holder's own unlock is told from a force unlock (a DEL\n"+
			"by anyone). Without them, the lock is read every --interval, and the end of a\n"+
			"hold is reported as unlocked (released or force-unlocked) or expired. Stops\n"+
			"on SIGINT/SIGTERM, after --count events (the state line is not one) or\n"+
			"after --for.", defaultAddr())
	count := fs.Int("count", 0, "stop after this many events (0: no limit)")
	duration := fs.Duration("for", 0, "stop after this long (0: no limit)")
	interval := fs.Duration("interval", 100*time.Millisecond, "read the lock at least this often")
	notify := fs.Bool("notify", false, "turn on keyspace notifications for hashes, generic and expired events (CONFIG SET notify-keyspace-events)")
	name, err := env.parseNamed(fs, args)
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
	sub, err := subscribe(ctx, rdb, name, keyspace)
	if err != nil {
		return err
	}
	defer sub.Close()
	cfg, _ := rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	w := &watcher{env: env, rdb: rdb, name: name, limit: *count, notified: notifiesHolders(cfg["notify-keyspace-events"])}
	fmt.Fprintf(env.stdout, "watching %s on %s; keyspace notifications %s\n", name, redact(*addr),
		notifyMode(cfg["notify-keyspace-events"], w.notified, *interval))
	if err := w.refresh(ctx, ""); err != nil {
		return fail(exitUnavailable, "reading lock %s: %s", name, plain(err))
	}
	var tick <-chan time.Time
	if !w.notified { // with notifications, reads out of turn would race them
		ticker := time.NewTicker(*interval)
		defer ticker.Stop()
		tick = ticker.C
	}
	return w.watch(ctx, sub.Channel(), tick, keyspace)
}

// subscribe subscribes to the lock's channels (plain, read-write, and
// fair per-waiter by pattern) and to its keyspace channel, and waits until
// the subscription is in place.
func subscribe(ctx context.Context, rdb *redis.Client, name, keyspace string) (*redis.PubSub, error) {
	lockCh, rwCh := layout.Channel(name), layout.RWChannel(name)
	sub := rdb.Subscribe(ctx, lockCh, rwCh, keyspace)
	if err := sub.PSubscribe(ctx, lockCh+":*"); err != nil {
		_ = sub.Close()
		return nil, fail(exitUnavailable, "subscribing: %v", err)
	}
	if _, err := sub.Receive(ctx); err != nil { // wait for the subscription to be in place
		_ = sub.Close()
		return nil, fail(exitUnavailable, "subscribing: %v", err)
	}
	return sub, nil
}

// watch reports the lock's events until ctx ends or --count events were
// printed: an unlock message, a keyspace event (on the keyspace channel)
// or a tick makes it read the lock again.
func (w *watcher) watch(ctx context.Context, msgs <-chan *redis.Message, tick <-chan time.Time, keyspace string) error {
	var err error
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
		case <-tick:
			err = w.refresh(ctx, "")
		}
		if err != nil && ctx.Err() == nil {
			return fail(exitUnavailable, "reading lock %s: %s", w.name, plain(err))
		}
	}
	return nil
}

// notifiesHolders reports whether notify-keyspace-events flags v publish
// every change of a lock's hash: keyspace events (K) of hash commands (h),
// DEL (g) and expiries (x); A stands for all classes.
func notifiesHolders(v string) bool {
	return strings.Contains(v, "K") && (strings.Contains(v, "A") ||
		strings.Contains(v, "h") && strings.Contains(v, "g") && strings.Contains(v, "x"))
}

// notifyMode says how holder changes will be seen.
func notifyMode(v string, notified bool, interval time.Duration) string {
	switch {
	case notified:
		return "on (" + v + "): holder changes are seen as they happen"
	case v == "":
		return "off: holder changes are seen by reading the lock every " + interval.String()
	}
	return "incomplete (" + v + ", want K with h, g and x): holder changes are seen by reading the lock every " + interval.String()
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
	last  map[string]int // holder field -> count; nil before the first read
	// notified: keyspace notifications report every change of the hash, in
	// order with the unlock messages, so why tells how a hold ended.
	notified bool
	// sawUnlock: an unlock message arrived since the last read, so holders
	// that vanished were unlocked rather than expired.
	sawUnlock bool
	// expiry: the key cannot have expired before this time (the start of
	// the last read plus the TTL it read).
	expiry time.Time
}

func (w *watcher) done() bool { return w.limit > 0 && w.n >= w.limit }

func (w *watcher) event(kind, detail string) {
	if w.done() {
		return
	}
	w.n++
	fmt.Fprintf(w.env.stdout, "%s %-14s %s\n", time.Now().Format("15:04:05.000"), kind, detail)
}

// refresh reads the lock and prints what changed since the last read; why
// is the keyspace event that prompted it, if any. The first read prints
// the state, which is not an event.
func (w *watcher) refresh(ctx context.Context, why string) error {
	start := time.Now()
	info, err := inspect.Lock(ctx, w.rdb, w.name)
	if err != nil {
		return err
	}
	now := map[string]int{}
	for _, h := range info.Holders {
		now[h.Field] = h.Count
	}
	prev := w.last
	kept := 0
	for f := range prev {
		if _, still := now[f]; still {
			kept++
		}
	}
	if w.notified && kept < len(prev) && !endsHolds(why) {
		// A holder vanished, but the event that ended its hold is still
		// queued behind this one (notifications come in order): let it
		// tell how, then.
		return nil
	}
	w.last = now
	gone := w.ending(why, time.Now())
	w.sawUnlock = false
	w.expiry = expiryAfter(start, info.TTL)
	if prev == nil {
		fmt.Fprintf(w.env.stdout, "state: %s\n", describe(info))
		return nil
	}
	w.changes(info, prev, now, kept, gone)
	return nil
}

// changes reports the holders of prev that are gone from now (each as gone
// reports it when all vanished at once, as "left" when kept others stay)
// and those that came or whose counts changed.
func (w *watcher) changes(info *inspect.Info, prev, now map[string]int, kept int, gone func(field string)) {
	for f := range prev {
		if _, still := now[f]; !still && kept > 0 {
			w.event("left", f)
		} else if !still {
			gone(f)
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
}

// endsHolds reports whether a keyspace event can end a hold: the hash
// commands of an unlock, a DEL, an expiry.
func endsHolds(why string) bool {
	switch why {
	case "hincrby", "hdel", "hset", "del", "expired":
		return true
	}
	return false
}

// ending returns how to report a holder whose hold ended, all holders
// having vanished at once. With keyspace notifications, the first event
// that shows the vanishing tells how: a hash command is the holder's own
// unlock script, a DEL a force unlock, "expired" the lease. Without them,
// a vanishing seen by a read that ended before the key could have expired,
// or after an unlock message, is an unlock, by its holder or forced;
// otherwise the lease ran out.
func (w *watcher) ending(why string, readEnd time.Time) func(field string) {
	switch {
	case why == "expired":
		return func(f string) { w.event("expired", fmt.Sprintf("lease of %s ran out", f)) }
	case w.notified && (why == "hincrby" || why == "hdel" || why == "hset"):
		return func(f string) { w.event("unlocked", "by "+f) }
	case w.notified && why == "del":
		return func(f string) { w.event("force-unlocked", fmt.Sprintf("deleted while %s held it", f)) }
	case w.sawUnlock || readEnd.Before(w.expiry):
		return func(f string) {
			w.event("unlocked", fmt.Sprintf("%s no longer holds it: released by it or force-unlocked (--notify tells which)", f))
		}
	}
	return func(f string) { w.event("expired", fmt.Sprintf("lease of %s ran out", f)) }
}

// expiryAfter is the earliest time a key read at start with ttl expires.
func expiryAfter(start time.Time, ttl time.Duration) time.Time {
	switch {
	case ttl == inspect.NoExpiry:
		return start.Add(100 * 365 * 24 * time.Hour)
	case ttl > 0:
		return start.Add(ttl)
	}
	return time.Time{}
}

// describe renders a lock's state for watch's first line.
func describe(info *inspect.Info) string {
	switch {
	case info.Kind == inspect.KindForeign:
		return fmt.Sprintf("%s (the key is a Redis %s)", info.Reason, info.RedisType)
	case info.Kind.IsSynchronizer():
		return fmt.Sprintf("not a lock: a %s (rlockctl status shows it)", info.Kind)
	}
	if !info.Locked() {
		return "not locked"
	}
	holders := make([]string, 0, len(info.Holders))
	for _, h := range info.Holders {
		holders = append(holders, fmt.Sprintf("%s (holds %d)", h.Field, h.Count))
	}
	return fmt.Sprintf("%s by %s; %s lock, ttl %s", lockState(info), strings.Join(holders, ", "), info.Kind, ttlString(info.TTL))
}
