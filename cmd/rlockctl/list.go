package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/internal/layout"
)

func runList(ctx context.Context, env *cli, args []string) error {
	fs, addr := env.flags("list", "[flags] [PATTERN]",
		"Lists the locks (reentrant, fenced, fair, read-write, faster multilock)\n"+
			"and synchronizers (semaphore, permit semaphore, latch) whose names match\n"+
			"PATTERN (a Redis glob, default *), with holders and their processes, hold\n"+
			"counts, permits, counts and TTLs. Keys are found with SCAN (never KEYS),\n"+
			"COUNT --count at a time; on a Redis Cluster every master is scanned. At\n"+
			"most --limit are shown; the keys matched after that are counted, not read,\n"+
			"and the count is printed: narrow the pattern. A long scan prints its\n"+
			"progress on stderr; SIGINT or SIGTERM stops it and prints what it found.\n"+
			"Auxiliary keys (tokens, queues, permits, registrations) are not listed on\n"+
			"their own (their lock's line shows them); keys that are no lock or\n"+
			"synchronizer are counted, and listed with --all.", defaultAddr())
	limit := fs.Int("limit", 1000, "show at most `n` keys")
	count := fs.Int64("count", 1000, "SCAN COUNT: keys asked for per round trip")
	all := fs.Bool("all", false, "also show the keys that are not locks or synchronizers")
	asJSON := fs.Bool("json", false, "print JSON")
	every := fs.Duration("progress", time.Second, "print progress on stderr every `interval` of a long scan (0: never)")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	pattern, err := listPattern(fs, *limit, *count, *every)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			cancel(signalled{s.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()

	rdb, _, closeAll, err := connect(ctx, *addr)
	if err != nil {
		return err
	}
	defer closeAll()
	l := &lister{env: env, pattern: pattern, limit: *limit, count: *count, all: *all, every: *every, shown: map[string]bool{}}
	reader, nodes, closeCluster, err := masters(ctx, rdb)
	if err != nil {
		return fail(exitUnavailable, "finding the masters: %s", plain(err))
	}
	defer closeCluster()
	err = l.scanAll(ctx, reader, nodes)
	var sig signalled
	interrupted := errors.As(context.Cause(ctx), &sig)
	if err != nil && !interrupted {
		return fail(exitUnavailable, "scanning %s: %s", redact(*addr), plain(err))
	}
	sort.Slice(l.entries, func(a, b int) bool { return l.entries[a].Name < l.entries[b].Name })
	if *asJSON {
		err = l.printJSON(interrupted)
	} else {
		err = l.print()
	}
	if err != nil {
		return err
	}
	if interrupted {
		return fail(128+int(sig.s), "%v after scanning %d keys: the list is incomplete", sig.s, l.scanned)
	}
	return nil
}

// listPattern returns list's pattern (default *) and refuses bad usage:
// more than one pattern, or --limit, --count or --progress out of range.
func listPattern(fs *flag.FlagSet, limit int, count int64, every time.Duration) (string, error) {
	pattern := "*"
	switch {
	case fs.NArg() == 1 && fs.Arg(0) != "":
		pattern = fs.Arg(0)
	case fs.NArg() > 1:
		if f := flagAfter(fs); f != "" {
			return "", fail(exitUsage, "flags go before PATTERN: %s [flags] PATTERN; got %q after %q", fs.Name(), f, fs.Arg(0))
		}
		return "", fail(exitUsage, "one pattern expected, got %q", fs.Args())
	}
	switch {
	case limit < 1:
		return "", fail(exitUsage, "--limit must be at least 1")
	case count < 1:
		return "", fail(exitUsage, "--count must be at least 1")
	case every < 0:
		return "", fail(exitUsage, "--progress must be >= 0 (0: never)")
	}
	return pattern, nil
}

// signalled is the cause of a scan stopped by a signal.
type signalled struct{ s syscall.Signal }

func (s signalled) Error() string { return s.s.String() }

// masters returns the client that reads keys (a cluster client on a
// Cluster) and the nodes to scan: every master of a Cluster, else the one
// server.
func masters(ctx context.Context, rdb *redis.Client) (redis.UniversalClient, []*redis.Client, func(), error) {
	// A server that refuses INFO (an ACL, a managed service) is taken for
	// a single server; SCAN then tells whether it can be listed.
	info, err := rdb.Info(ctx, "cluster").Result()
	if err != nil && ctx.Err() != nil {
		return nil, nil, nil, err
	}
	if !strings.Contains(info, "cluster_enabled:1") {
		return rdb, []*redis.Client{rdb}, func() {}, nil
	}
	o := rdb.Options()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{o.Addr}, Username: o.Username, Password: o.Password,
		TLSConfig: o.TLSConfig, DialTimeout: o.DialTimeout, MaxRetries: o.MaxRetries})
	var mu sync.Mutex
	var nodes []*redis.Client
	err = cc.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, node)
		return nil
	})
	if err != nil {
		_ = cc.Close()
		return nil, nil, nil, err
	}
	sort.Slice(nodes, func(a, b int) bool { return nodes[a].Options().Addr < nodes[b].Options().Addr })
	return cc, nodes, func() { _ = cc.Close() }, nil
}

// lister is one list run: what it found and counted.
type lister struct {
	env     *cli
	pattern string
	limit   int
	count   int64
	all     bool
	every   time.Duration

	entries []*inspect.Info
	procs   map[string]*inspect.Process
	shown   map[string]bool
	// scanned counts the keys SCAN returned, aux the auxiliary ones among
	// them, skipped those read and found to be no lock or synchronizer,
	// more the keys matched after --limit was reached (counted, not read).
	scanned, aux, skipped, more int64
	nodes                       int
	started, last               time.Time
}

// scanAll scans the nodes one after the other, until one fails.
func (l *lister) scanAll(ctx context.Context, reader redis.UniversalClient, nodes []*redis.Client) error {
	l.started, l.last = time.Now(), time.Now()
	for _, node := range nodes {
		if err := l.scan(ctx, reader, node); err != nil {
			return err
		}
		l.nodes++
	}
	return nil
}

// scan walks one node's keyspace with SCAN and reads the keys it returns
// until --limit entries are found, then only counts them.
func (l *lister) scan(ctx context.Context, reader redis.UniversalClient, node *redis.Client) error {
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, l.pattern, l.count).Result()
		if err != nil {
			return err
		}
		l.scanned += int64(len(keys))
		var names []string
		for _, k := range keys {
			switch {
			case layout.Auxiliary(k):
				l.aux++
			case l.shown[k]: // SCAN may return a key twice
			case len(l.entries) >= l.limit:
				l.more++
			default:
				names = append(names, k)
			}
		}
		if err := l.read(ctx, reader, names); err != nil {
			return err
		}
		l.progress(false)
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// read reads a batch of keys and keeps those to show.
func (l *lister) read(ctx context.Context, reader redis.UniversalClient, names []string) error {
	if len(names) == 0 {
		return nil
	}
	infos, err := inspect.Read(ctx, reader, names)
	if err != nil {
		return err
	}
	var kept []*inspect.Info
	for _, info := range infos {
		switch {
		case info.Kind == inspect.KindNone: // deleted since SCAN saw it
		case info.Kind == inspect.KindForeign && !l.all:
			l.skipped++
		case len(l.entries) >= l.limit:
			l.more++
		default:
			l.entries = append(l.entries, info)
			l.shown[info.Name] = true
			kept = append(kept, info)
		}
	}
	procs, err := inspect.Processes(ctx, reader, holderFields(kept...))
	if err != nil {
		return err
	}
	if l.procs == nil {
		l.procs = map[string]*inspect.Process{}
	}
	for f, p := range procs {
		l.procs[f] = p
	}
	return nil
}

// progress prints the scan's progress on stderr, every --progress.
func (l *lister) progress(force bool) {
	if l.every == 0 {
		return
	}
	now := time.Now()
	if !force && (now.Sub(l.last) < l.every || now.Sub(l.started) < l.every) {
		return
	}
	l.last = now
	fmt.Fprintf(l.env.stderr, "rlockctl list: %d keys scanned in %s, %d shown, %d more matching\n",
		l.scanned, now.Sub(l.started).Round(time.Millisecond), len(l.entries), l.more)
}

// state renders an entry's state column.
func state(info *inspect.Info) string {
	switch info.Kind {
	case inspect.KindForeign:
		return "not a lock (" + info.RedisType + ")"
	case inspect.KindSemaphore:
		return fmt.Sprintf("%d permits available", info.Counter)
	case inspect.KindPermitSemaphore:
		return fmt.Sprintf("%d available, %d taken", info.Counter, info.Taken)
	case inspect.KindLatch:
		return fmt.Sprintf("count %d", info.Counter)
	case inspect.KindSemaphoreOrLatch:
		return fmt.Sprintf("value %d", info.Counter)
	}
	return lockState(info)
}

// maxHolders is the most holders list shows on an entry's line.
const maxHolders = 3

func (l *lister) holders(info *inspect.Info) string {
	var parts []string
	for i, h := range info.Holders {
		if i == maxHolders {
			parts = append(parts, fmt.Sprintf("+%d more (rlockctl status %s)", len(info.Holders)-maxHolders, info.Name))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s [%s]", h.Field, holds(info, h), process(l.procs[h.Field])))
	}
	if info.Kind == inspect.KindPermitSemaphore && len(info.Permits) > 0 {
		parts = append(parts, "next lease ends in "+ttlString(nearest(info.Permits)))
	}
	return strings.Join(parts, ", ")
}

// nearest is the shortest lease among the permits (NoExpiry when none
// expires).
func nearest(ps []inspect.Permit) time.Duration {
	out := inspect.NoExpiry
	for _, p := range ps {
		if p.Lease != inspect.NoExpiry && (out == inspect.NoExpiry || p.Lease < out) {
			out = p.Lease
		}
	}
	return out
}

func (l *lister) print() error {
	w := l.env.stdout
	if len(l.entries) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tTTL\tHOLDERS")
		for _, info := range l.entries {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", info.Name, info.Kind, state(info), shortTTL(info.TTL), l.holders(info))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	l.summary(w)
	return nil
}

func shortTTL(d time.Duration) string {
	if d == inspect.NoExpiry {
		return "none"
	}
	return ttlString(d)
}

// summary prints what was counted besides the entries.
func (l *lister) summary(w io.Writer) {
	nodes := "1 server"
	if l.nodes > 1 {
		nodes = fmt.Sprintf("%d masters", l.nodes)
	}
	fmt.Fprintf(w, "%d shown; %d keys matching %q scanned on %s\n", len(l.entries), l.scanned, l.pattern, nodes)
	if l.skipped > 0 {
		fmt.Fprintf(w, "%d keys that are not locks or synchronizers not shown (--all shows them)\n", l.skipped)
	}
	if l.more > 0 {
		fmt.Fprintf(w, "... %d more matching keys not read (--limit %d): narrow the pattern or raise --limit\n", l.more, l.limit)
	}
}

func (l *lister) printJSON(interrupted bool) error {
	out := struct {
		Pattern     string     `json:"pattern"`
		Entries     []infoJSON `json:"entries"`
		Scanned     int64      `json:"scanned"`
		Auxiliary   int64      `json:"auxiliary"`
		Skipped     int64      `json:"skipped"`
		More        int64      `json:"more"`
		Nodes       int        `json:"nodes"`
		Interrupted bool       `json:"interrupted,omitempty"`
	}{Pattern: l.pattern, Entries: []infoJSON{}, Scanned: l.scanned, Auxiliary: l.aux, Skipped: l.skipped, More: l.more, Nodes: l.nodes, Interrupted: interrupted}
	for _, info := range l.entries {
		out.Entries = append(out.Entries, statusJSON(info, l.procs))
	}
	enc := json.NewEncoder(l.env.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
