package scenario

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/rlock"
)

// Outcome is one line of the ladder: a scenario played with one lock.
type Outcome struct {
	Scenario string // "holder crashes", ...
	Lock     string // a rung constant or Goredisson
	OK       bool   // the lock kept its promise
	Verdict  string // what happened, for people
}

// Ladder plays the naive ladder's failure scenarios, each with the naive
// rungs it breaks and with goredisson, against the Redis at addr, with
// locks of the given ttl (a few hundred ms keeps it quick).
func Ladder(ctx context.Context, addr string, ttl time.Duration) ([]Outcome, error) {
	if ttl < 50*time.Millisecond {
		return nil, fmt.Errorf("scenario: ladder ttl %v too short (>= 50ms)", ttl)
	}
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	conn := func() *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		closers = append(closers, func() { _ = rdb.Close() })
		return rdb
	}
	client := func(rdb *redis.Client) (*rlock.Client, error) {
		c, err := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(max(ttl, time.Second)))
		if err == nil {
			closers = append(closers, func() { _ = c.Close() })
		}
		return c, err
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var out []Outcome

	// 1. The holder crashes before releasing.
	for _, kind := range []string{SetnxDel, SetnxExpire, Goredisson} {
		key := "ladder:" + run + ":crash:" + kind
		holderConn, next := conn(), conn()
		var holder, waiter Mutex
		var crash func()
		if kind == Goredisson {
			hc, err := client(holderConn)
			if err != nil {
				return nil, err
			}
			nc, err := client(next)
			if err != nil {
				return nil, err
			}
			holder, waiter = NewRMutex(hc.NewLock(key), 0), NewRMutex(nc.NewLock(key), 0)
			crash = func() { _ = hc.Close(); _ = holderConn.Close() } // no Unlock, no more renewals
		} else {
			holder = &NaiveLock{Rdb: holderConn, Key: key, Kind: kind, TTL: ttl, CrashBetween: true}
			waiter = &NaiveLock{Rdb: next, Key: key, Kind: kind, TTL: ttl}
			crash = func() { _ = holderConn.Close() }
		}
		res, err := Crash(ctx, holder, waiter, crash, 4*ttl)
		if err != nil {
			return nil, fmt.Errorf("crash with %s: %w", kind, err)
		}
		o := Outcome{Scenario: "holder crashes", Lock: kind, OK: res.NextAcquired}
		if res.NextAcquired {
			o.Verdict = fmt.Sprintf("ok: next owner got the lock after %v (the lease ran out)", res.After.Round(time.Millisecond))
		} else {
			ttlLeft := "none"
			if d, err := next.PTTL(ctx, key).Result(); err == nil && d > 0 {
				ttlLeft = d.String()
			}
			o.Verdict = fmt.Sprintf("FAILS: lock never released (TTL %s), next owner refused for %v", ttlLeft, res.After.Round(time.Millisecond))
		}
		next.Del(ctx, key)
		out = append(out, o)
	}

	// 2. A job outlasts its TTL and its release deletes the next owner's
	// lock; 3. the owner check and the delete are two commands.
	const outlasts, checkDelete = "job outlasts its TTL", "check, then delete"
	type rung struct {
		scenario, kind string
		lease          time.Duration // goredisson: 0 watchdog, else fixed
	}
	for _, r := range []rung{
		{outlasts, SetPxDel, 0}, {outlasts, LuaCompareDel, 0},
		{outlasts, Goredisson, ttl}, {outlasts, Goredisson, 0},
		{checkDelete, GetCompareDel, 0}, {checkDelete, Goredisson, ttl},
	} {
		name := r.kind
		switch {
		case r.kind == Goredisson && r.lease > 0:
			name += " (fixed lease)"
		case r.kind == Goredisson:
			name += " (watchdog)"
		}
		key := "ladder:" + run + ":" + r.scenario + ":" + name
		var ms [3]Mutex
		var between *func()
		for i := range ms {
			rdb := conn()
			if r.kind == Goredisson {
				c, err := client(rdb)
				if err != nil {
					return nil, err
				}
				ms[i] = NewRMutex(c.NewLock(key), r.lease)
				continue
			}
			l := &NaiveLock{Rdb: rdb, Key: key, Kind: r.kind, TTL: ttl}
			if i == 0 && r.kind == GetCompareDel {
				var hook func()
				between = &hook
				l.Between = func() { hook() }
			}
			ms[i] = l
		}
		res, err := LateRelease(ctx, ms[0], ms[1], ms[2], ttl, r.scenario == checkDelete, between)
		if err != nil {
			return nil, fmt.Errorf("%s with %s: %w", r.scenario, name, err)
		}
		out = append(out, lateOutcome(r.scenario, name, r.kind == Goredisson && r.lease > 0, res))
	}
	return out, nil
}

// lateOutcome judges a LateRelease run. A fixed lease that runs out under a
// long job lets the next owner in with any lock (goredisson's fixed-lease
// row shows only that its release stays safe; its watchdog row is the
// answer to long jobs).
func lateOutcome(scenario, name string, fixedLease bool, res ReleaseResult) Outcome {
	o := Outcome{Scenario: scenario, Lock: name, OK: !res.StaleDelete && (fixedLease || !res.LeaseRanOut)}
	switch {
	case res.StaleDelete:
		o.Verdict = "FAILS: the first owner's release deleted the second's lock; a third entered while the second worked"
	case errors.Is(res.StaleRelease, rlock.ErrNotHeld):
		o.Verdict = "ok: the late release was refused (ErrNotHeld); the second owner's lock stayed"
	case res.StaleRelease != nil:
		o.OK = false
		o.Verdict = fmt.Sprintf("FAILS: release error %v", res.StaleRelease)
	case res.LeaseRanOut:
		o.Verdict = "no lock was deleted by another owner"
	default:
		o.Verdict = "ok: the lock was held until released; the next owners waited their turn"
	}
	if res.LeaseRanOut {
		if fixedLease {
			o.Verdict += "; the job outlived its fixed lease, so the next owner entered early (use the watchdog)"
		} else {
			o.OK = false
			o.Verdict = "FAILS: the job outlived the TTL and the next owner entered while it worked; " + strings.TrimPrefix(o.Verdict, "FAILS: ")
		}
	}
	return o
}
