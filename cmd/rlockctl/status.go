package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/rlock"
)

func runStatus(ctx context.Context, env *cli, args []string) error {
	fs, addr := env.flags("status", "[flags] NAME",
		"Shows the key NAME as stored in Redis: its kind (a lock: reentrant, fenced,\n"+
			"fair, read-write, faster-multilock; a synchronizer: semaphore,\n"+
			"permit-semaphore, latch, or semaphore-or-latch when the data cannot tell;\n"+
			"foreign for a key that is not a lock, with the reason; none when no key\n"+
			"exists), a lock's state (locked or not locked), holder fields\n"+
			"(<client id>:<owner id>) with hold counts and the process of each holder's\n"+
			"Client when it registered, a synchronizer's permits or count, remaining\n"+
			"TTL, a fair lock's queued waiters, and the connections subscribed to its\n"+
			"channels. Works for locks taken by Redisson too.", defaultAddr())
	asJSON := fs.Bool("json", false, "print JSON")
	name, err := env.parseNamed(fs, args)
	if err != nil {
		return err
	}
	rdb, _, info, closeAll, err := readLock(ctx, *addr, name)
	if err != nil {
		return err
	}
	defer closeAll()
	procs, err := inspect.Processes(ctx, rdb, holderFields(info))
	if err != nil {
		return fail(exitUnavailable, "reading the registrations of %s's holders: %s", name, plain(err))
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(statusJSON(info, procs))
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "name:\t%s\n", info.Name)
	printKind(tw, info)
	if !info.Kind.IsSynchronizer() {
		fmt.Fprintf(tw, "state:\t%s\n", lockState(info))
	}
	for _, h := range info.Holders {
		fmt.Fprintf(tw, "holder:\t%s\t%s\t%s\n", h.Field, holds(info, h), process(procs[h.Field]))
	}
	if info.Partial {
		fmt.Fprintf(tw, "note:\tthe hash has more than %d fields: the first %d are shown\n", inspect.MaxFields, len(info.Holders))
	}
	if info.Kind.IsSynchronizer() {
		fmt.Fprintf(tw, "%s\n", counter(info))
		for _, p := range info.Permits {
			fmt.Fprintf(tw, "permit:\t%s\tlease %s\n", p.ID, ttlString(p.Lease))
		}
	}
	fmt.Fprintf(tw, "ttl:\t%s\n", ttlString(info.TTL))
	if len(info.Queue) > 0 {
		fmt.Fprintf(tw, "queue:\t%d waiting: %s\n", len(info.Queue), strings.Join(info.Queue, ", "))
	}
	if info.Kind != inspect.KindForeign {
		fmt.Fprintf(tw, "subscribers:\t%d connection(s) on its channel(s)\n", info.Subscribers)
	}
	if info.Token > 0 {
		fmt.Fprintf(tw, "token:\t%d (last fencing token issued)\n", info.Token)
	}
	return tw.Flush()
}

// printKind prints status's kind line, and the note that says why a key
// is not a lock or how a counter's kind was told.
func printKind(w io.Writer, info *inspect.Info) {
	switch {
	case info.Kind == inspect.KindNone:
		fmt.Fprintf(w, "kind:\t%s (no key %q in Redis)\n", inspect.KindNone, info.Name)
	case info.Kind == inspect.KindForeign:
		fmt.Fprintf(w, "kind:\t%s\n", info.Kind)
		fmt.Fprintf(w, "note:\tthe key is a Redis %s: %s\n", info.RedisType, info.Reason)
	case info.Reason != "":
		fmt.Fprintf(w, "kind:\t%s\n", info.Kind)
		fmt.Fprintf(w, "note:\t%s\n", info.Reason)
	default:
		fmt.Fprintf(w, "kind:\t%s\n", info.Kind)
	}
}

// unregistered is what status and list show for a holder whose Client has
// no registration.
const unregistered = "unregistered (a Java/Redisson client or an old goredisson)"

// process renders a holder's registered process.
func process(p *inspect.Process) string {
	if p == nil {
		return unregistered
	}
	return p.String()
}

// holds renders a holder's count: re-entries, or for a faster multilock
// the values it holds.
func holds(info *inspect.Info, h inspect.Holder) string {
	if info.Kind == inspect.KindFasterMulti {
		return fmt.Sprintf("holds %d value(s)", h.Count)
	}
	return fmt.Sprintf("holds %d", h.Count)
}

// counter renders a synchronizer's counter as a status line.
func counter(info *inspect.Info) string {
	switch info.Kind {
	case inspect.KindSemaphore:
		return fmt.Sprintf("permits:\t%d available", info.Counter)
	case inspect.KindPermitSemaphore:
		return fmt.Sprintf("permits:\t%d available, %d taken", info.Counter, info.Taken)
	case inspect.KindLatch:
		return fmt.Sprintf("count:\t%d", info.Counter)
	}
	return fmt.Sprintf("value:\t%d (the permits available of a semaphore, the count of a latch)", info.Counter)
}

// holderFields are the fields whose processes status and list show.
func holderFields(infos ...*inspect.Info) []string {
	var out []string
	for _, info := range infos {
		for _, h := range info.Holders {
			out = append(out, h.Field)
		}
	}
	return out
}

// lockState is "locked", with a read-write lock's mode, "not locked", or
// "not a lock".
func lockState(info *inspect.Info) string {
	switch {
	case info.Kind == inspect.KindForeign:
		return "not a lock"
	case !info.Locked():
		return "not locked"
	case info.Mode != "":
		return "locked (" + info.Mode + ")"
	}
	return "locked"
}

func ttlString(d time.Duration) string {
	switch d {
	case 0:
		return "-"
	case inspect.NoExpiry:
		return "none (the key never expires)"
	}
	return d.Round(time.Millisecond).String()
}

type processJSON struct {
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

type holderJSON struct {
	Field   string       `json:"field"`
	Count   int          `json:"count"`
	Process *processJSON `json:"process"`
}

type permitJSON struct {
	ID          string `json:"id"`
	LeaseMillis int64  `json:"lease_ms"`
}

type infoJSON struct {
	Name        string       `json:"name"`
	Kind        string       `json:"kind"`
	Locked      bool         `json:"locked"`
	Mode        string       `json:"mode,omitempty"`
	Note        string       `json:"note,omitempty"`
	Holders     []holderJSON `json:"holders"`
	Counter     *int64       `json:"counter,omitempty"`
	Taken       int64        `json:"taken,omitempty"`
	Permits     []permitJSON `json:"permits,omitempty"`
	TTLMillis   int64        `json:"ttl_ms"`
	Queue       []string     `json:"queue"`
	Subscribers int64        `json:"subscribers"`
	Token       int64        `json:"token,omitempty"`
	Partial     bool         `json:"partial,omitempty"`
}

func millis(d time.Duration) int64 {
	if d == inspect.NoExpiry {
		return -1
	}
	return d.Milliseconds()
}

func statusJSON(info *inspect.Info, procs map[string]*inspect.Process) infoJSON {
	out := infoJSON{Name: info.Name, Kind: string(info.Kind), Locked: info.Locked(), Mode: info.Mode, Note: info.Reason, Queue: info.Queue,
		Subscribers: info.Subscribers, Token: info.Token, Holders: []holderJSON{}, TTLMillis: millis(info.TTL), Taken: info.Taken, Partial: info.Partial}
	if out.Queue == nil {
		out.Queue = []string{}
	}
	if info.Kind.IsSynchronizer() {
		n := info.Counter
		out.Counter = &n
	}
	for _, p := range info.Permits {
		out.Permits = append(out.Permits, permitJSON{ID: p.ID, LeaseMillis: millis(p.Lease)})
	}
	for _, h := range info.Holders {
		hj := holderJSON{Field: h.Field, Count: h.Count}
		if p := procs[h.Field]; p != nil {
			hj.Process = &processJSON{ID: p.ID, Name: p.Name, Host: p.Host, PID: p.PID, Started: p.Started}
		}
		out.Holders = append(out.Holders, hj)
	}
	return out
}

func runUnlock(ctx context.Context, env *cli, args []string) error {
	fs, addr := env.flags("unlock", "--force [flags] NAME",
		"Deletes the lock NAME whoever holds it and wakes its waiters (Redisson's\n"+
			"forceUnlock). The holders' watchdogs notice at their next renewal. rlockctl\n"+
			"holds no lock of its own to release, so --force is required. Exits 1 when\n"+
			"there was no lock, and leaves a semaphore or latch alone (exit 1, naming\n"+
			"it, with its permits or count).", defaultAddr())
	force := fs.Bool("force", false, "required: delete the lock whoever holds it")
	name, err := env.parseNamed(fs, args)
	if err != nil {
		return err
	}
	if !*force {
		return fail(exitUsage, "unlock deletes a lock whoever holds it: confirm with --force")
	}
	rdb, c, info, closeAll, err := readLock(ctx, *addr, name)
	if err != nil {
		return err
	}
	defer closeAll()
	var lock rlock.Locker
	switch {
	case info.Kind == inspect.KindForeign:
		return fail(exitFailure, "%s is a Redis %s, not a lock: left alone", name, info.RedisType)
	case info.Kind.IsSynchronizer():
		return notForceUnlocked(name, info)
	case info.Kind == inspect.KindNone:
		if n := semaphoreWaiters(ctx, rdb, name); n > 0 {
			return fail(exitFailure, "%s has no key in Redis and %d connection(s) wait on it as a semaphore (its permits never set, e.g. by TrySetPermits, or its key deleted): force unlock applies to locks; left alone", name, n)
		}
		lock = c.NewLock(name)
	case info.Kind == inspect.KindFasterMulti:
		return fail(exitFailure, "%s is a faster multilock's group: force-unlock it with its values (FasterMultiLock.ForceUnlock); left alone", name)
	case info.Kind == inspect.KindReadWrite:
		lock = c.NewReadWriteLock(name).WriteLock()
		if info.Mode == "read" {
			lock = c.NewReadWriteLock(name).ReadLock()
		}
	case info.Kind == inspect.KindFair:
		lock = c.NewFairLock(name)
	default:
		lock = c.NewLock(name)
	}
	deleted, err := lock.ForceUnlock(ctx)
	if err != nil {
		return fail(exitUnavailable, "force-unlocking %s: %s", name, plain(err))
	}
	if !deleted {
		return fail(exitFailure, "%s was not locked", name)
	}
	fmt.Fprintf(env.stdout, "unlocked %s (%s, %d holder(s))\n", name, info.Kind, len(info.Holders))
	return nil
}
