package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/rlock"
)

func runStatus(ctx context.Context, env *cli, args []string) error {
	fs, addr := env.flags("status", "[flags] NAME",
		"Shows the lock NAME as stored in Redis: its kind (reentrant, fenced, fair,\n"+
			"read-write, foreign for a key that is not a lock hash, or none when no key\n"+
			"exists), its state (locked or not locked), holder fields\n"+
			"(<client id>:<owner id>) with hold counts, remaining TTL, a fair lock's\n"+
			"queued waiters, and the connections subscribed to its unlock channel.\n"+
			"Works for locks taken by Redisson too.", defaultAddr())
	asJSON := fs.Bool("json", false, "print JSON")
	name, err := parseNamed(fs, args)
	if err != nil {
		return err
	}
	_, info, closeAll, err := readLock(ctx, *addr, name)
	if err != nil {
		return err
	}
	defer closeAll()
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(statusJSON(info))
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "lock:\t%s\n", info.Name)
	switch info.Kind {
	case inspect.KindNone:
		fmt.Fprintf(tw, "kind:\t%s (no key %q in Redis)\n", inspect.KindNone, info.Name)
	case inspect.KindForeign:
		fmt.Fprintf(tw, "kind:\t%s\n", info.Kind)
		fmt.Fprintf(tw, "note:\tthe key is a Redis %s, not a lock hash\n", info.RedisType)
	default:
		fmt.Fprintf(tw, "kind:\t%s\n", info.Kind)
	}
	fmt.Fprintf(tw, "state:\t%s\n", lockState(info))
	for _, h := range info.Holders {
		fmt.Fprintf(tw, "holder:\t%s\tholds %d\n", h.Field, h.Count)
	}
	fmt.Fprintf(tw, "ttl:\t%s\n", ttlString(info.TTL))
	if len(info.Queue) > 0 {
		fmt.Fprintf(tw, "queue:\t%d waiting: %s\n", len(info.Queue), strings.Join(info.Queue, ", "))
	}
	fmt.Fprintf(tw, "subscribers:\t%d connection(s) on the unlock channel\n", info.Subscribers)
	if info.Token > 0 {
		fmt.Fprintf(tw, "token:\t%d (last fencing token issued)\n", info.Token)
	}
	return tw.Flush()
}

// lockState is "locked", with a read-write lock's mode, or "not locked".
func lockState(info *inspect.Info) string {
	if !info.Locked() {
		return "not locked"
	}
	if info.Mode != "" {
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

type holderJSON struct {
	Field string `json:"field"`
	Count int    `json:"count"`
}

type infoJSON struct {
	Name        string       `json:"name"`
	Kind        string       `json:"kind"`
	Locked      bool         `json:"locked"`
	Mode        string       `json:"mode,omitempty"`
	Holders     []holderJSON `json:"holders"`
	TTLMillis   int64        `json:"ttl_ms"`
	Queue       []string     `json:"queue"`
	Subscribers int64        `json:"subscribers"`
	Token       int64        `json:"token,omitempty"`
}

func statusJSON(info *inspect.Info) infoJSON {
	out := infoJSON{Name: info.Name, Kind: string(info.Kind), Locked: info.Locked(), Mode: info.Mode, Queue: info.Queue,
		Subscribers: info.Subscribers, Token: info.Token, Holders: []holderJSON{}, TTLMillis: info.TTL.Milliseconds()}
	if info.TTL == inspect.NoExpiry {
		out.TTLMillis = -1
	}
	if out.Queue == nil {
		out.Queue = []string{}
	}
	for _, h := range info.Holders {
		out.Holders = append(out.Holders, holderJSON(h))
	}
	return out
}

func runUnlock(ctx context.Context, env *cli, args []string) error {
	fs, addr := env.flags("unlock", "--force [flags] NAME",
		"Deletes the lock NAME whoever holds it and wakes its waiters (Redisson's\n"+
			"forceUnlock). The holders' watchdogs notice at their next renewal. rlockctl\n"+
			"holds no lock of its own to release, so --force is required. Exits 1 when\n"+
			"there was no lock.", defaultAddr())
	force := fs.Bool("force", false, "required: delete the lock whoever holds it")
	name, err := parseNamed(fs, args)
	if err != nil {
		return err
	}
	if !*force {
		return fail(exitUsage, "unlock deletes a lock whoever holds it: confirm with --force")
	}
	c, info, closeAll, err := readLock(ctx, *addr, name)
	if err != nil {
		return err
	}
	defer closeAll()
	var lock rlock.Locker
	switch info.Kind {
	case inspect.KindForeign:
		return fail(exitFailure, "%s is a Redis %s, not a lock: left alone", name, info.RedisType)
	case inspect.KindReadWrite:
		lock = c.NewReadWriteLock(name).WriteLock()
		if info.Mode == "read" {
			lock = c.NewReadWriteLock(name).ReadLock()
		}
	case inspect.KindFair:
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
