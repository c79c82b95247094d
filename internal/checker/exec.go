package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// The executor runs the calls of one goredisson Client for its owners, in
// this process (an in-process Client) or in an agent process. It keeps one
// LostContext per owner: opened right after a successful acquisition when
// the owner has none that is live, stopped at its last Unlock, and watched
// by a goroutine that records when (and why) it ended.

// kinds are the exclusive single-key lock kinds that share RLock's
// semantics (the write side of a read-write lock among them).
var kinds = []string{"Lock", "FencedLock", "FairLock", "SpinLock", "WriteLock"}

func newLock(c *rlock.Client, kind, name string) (rlock.Locker, error) {
	switch kind {
	case "Lock":
		return c.NewLock(name), nil
	case "FencedLock":
		return c.NewFencedLock(name), nil
	case "FairLock":
		return c.NewFairLock(name), nil
	case "SpinLock":
		return c.NewSpinLock(name), nil
	case "WriteLock":
		return c.NewReadWriteLock(name).WriteLock(), nil
	}
	return nil, fmt.Errorf("checker: unknown lock kind %q", kind)
}

// fieldSuffix follows the owner in the lock hash's field.
func fieldSuffix(kind string) string {
	if kind == "WriteLock" {
		return ":write"
	}
	return ""
}

// ownerID is the ctxowner id of owner o of a Client.
func ownerID(o int) string { return fmt.Sprintf("o%d", o) }

// extender is a lock with Extend (absent from older versions of the
// library: the op is then reported unsupported and skipped).
type extender interface {
	Extend(ctx context.Context, lease time.Duration) error
}

// req is one call for an executor.
type req struct {
	Op      string        `json:"op"` // trylock lock locklease unlock extend holdcount force lc open ping quit
	Owner   int           `json:"o"`
	Lease   time.Duration `json:"lease,omitempty"` // <= 0: watchdog
	Last    bool          `json:"last,omitempty"`  // unlock: the owner's last hold (stop its LostContext)
	Timeout time.Duration `json:"timeout,omitempty"`
}

// reply is what a call did. Times are wall-clock nanoseconds (the agents
// run on the same machine as the checker).
type reply struct {
	OK    bool     `json:"ok,omitempty"` // TryLock's, ForceUnlock's result
	N     int      `json:"n,omitempty"`  // HoldCount's result
	Err   string   `json:"err,omitempty"`
	Msg   string   `json:"msg,omitempty"`
	Start int64    `json:"s,omitempty"`
	End   int64    `json:"e,omitempty"`
	LC    []lcInfo `json:"lc,omitempty"` // op lc: every owner's LostContext
	// Prev is the owner's ended LostContext that a successful acquisition
	// replaced with a new one (nil: none, or it was live and was kept).
	Prev *lcInfo `json:"prev,omitempty"`
	ID   string  `json:"id,omitempty"` // the Client's id (the agent's first line)
}

// lcInfo is the state of an owner's LostContext.
type lcInfo struct {
	State string `json:"st"`           // none, live, ended
	At    int64  `json:"at,omitempty"` // ended: when its watcher saw it end
	Cause string `json:"cause,omitempty"`
}

// errClass names the sentinel an error wraps.
func errClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, rlock.ErrLockLost):
		return "lost"
	case errors.Is(err, rlock.ErrNotHeld):
		return "notheld"
	case errors.Is(err, rlock.ErrInvalidArgument):
		return "invalid"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, rlock.ErrClosed):
		return "closed"
	}
	return "other"
}

type executor struct {
	rdb    *redis.Client
	c      *rlock.Client
	lock   rlock.Locker
	owners []*ownerCtl
}

type ownerCtl struct {
	ctx context.Context
	mu  sync.Mutex
	w   *lcWatch
}

// lcWatch watches one LostContext.
type lcWatch struct {
	stop    context.CancelFunc
	mu      sync.Mutex
	stopped bool
	ended   bool
	at      time.Time
	cause   string
}

// execConfig sets up an executor.
type execConfig struct {
	Redis    string        `json:"redis"`
	Watchdog time.Duration `json:"wd"`
	Kind     string        `json:"kind"`
	Lock     string        `json:"lock"`
	Owners   int           `json:"owners"`
	Verbose  bool          `json:"verbose,omitempty"`
}

func newExecutor(cfg execConfig, logOut io.Writer) (*executor, error) {
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Redis})
	level := slog.LevelError + 1 // losses are expected here: say nothing
	if cfg.Verbose {
		level = slog.LevelWarn
	}
	c, err := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(cfg.Watchdog),
		rlock.WithLogger(slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))))
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	l, err := newLock(c, cfg.Kind, cfg.Lock)
	if err != nil {
		_ = c.Close()
		_ = rdb.Close()
		return nil, err
	}
	e := &executor{rdb: rdb, c: c, lock: l}
	for o := range cfg.Owners {
		e.owners = append(e.owners, &ownerCtl{ctx: ctxowner.WithID(context.Background(), ownerID(o))})
	}
	return e, nil
}

func (e *executor) close() {
	for _, o := range e.owners {
		o.mu.Lock()
		if o.w != nil {
			o.w.halt()
		}
		o.mu.Unlock()
	}
	_ = e.c.Close()
	_ = e.rdb.Close()
}

func (w *lcWatch) halt() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.stop()
}

func (w *lcWatch) info() lcInfo {
	if w == nil {
		return lcInfo{State: "none"}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.stopped:
		return lcInfo{State: "none"}
	case w.ended:
		return lcInfo{State: "ended", At: w.at.UnixNano(), Cause: w.cause}
	}
	return lcInfo{State: "live"}
}

// open starts watching a new LostContext of the owner, when it has none
// that is live, and returns the ended one it replaced.
func (e *executor) open(o *ownerCtl) (prev *lcInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.w != nil {
		info := o.w.info()
		if info.State == "live" {
			return nil
		}
		if info.State == "ended" {
			prev = &info
		}
		o.w.halt()
	}
	lctx, stop := rlock.LostContext(o.ctx, e.lock)
	w := &lcWatch{stop: stop}
	o.w = w
	go func() {
		<-lctx.Done()
		at := time.Now()
		cause := context.Cause(lctx)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return
		}
		w.ended, w.at = true, at
		switch {
		case errors.Is(cause, rlock.ErrLockLost):
			w.cause = "lost"
		case errors.Is(cause, rlock.ErrNotHeld):
			w.cause = "notheld"
		case errors.Is(cause, rlock.ErrClosed):
			w.cause = "closed"
		default:
			w.cause = fmt.Sprint(cause)
		}
	}()
	return prev
}

// stopLive stops the owner's LostContext if it is live (an ended one is
// kept, to be reported).
func (e *executor) stopLive(o *ownerCtl) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.w != nil && o.w.info().State == "live" {
		o.w.halt()
	}
}

func (e *executor) lcs() []lcInfo {
	out := make([]lcInfo, len(e.owners))
	for i, o := range e.owners {
		o.mu.Lock()
		out[i] = o.w.info()
		o.mu.Unlock()
	}
	return out
}

// do runs one call.
func (e *executor) do(r req) reply {
	switch r.Op {
	case "lc":
		return reply{LC: e.lcs()}
	case "open":
		if r.Owner < 0 || r.Owner >= len(e.owners) {
			return reply{Err: "other", Msg: fmt.Sprintf("no owner %d", r.Owner)}
		}
		return reply{Prev: e.open(e.owners[r.Owner])}
	case "ping":
		return reply{OK: true}
	}
	if r.Op != "force" && (r.Owner < 0 || r.Owner >= len(e.owners)) {
		return reply{Err: "other", Msg: fmt.Sprintf("no owner %d", r.Owner)}
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var o *ownerCtl
	base := context.Background()
	if r.Op != "force" {
		o = e.owners[r.Owner]
		base = o.ctx
	}
	ctx, cancel := context.WithTimeout(base, timeout)
	defer cancel()
	var rep reply
	var err error
	start := time.Now()
	switch r.Op {
	case "trylock":
		rep.OK, err = e.lock.TryLock(ctx, 0, r.Lease)
	case "lock":
		err = e.lock.Lock(ctx)
		rep.OK = err == nil
	case "locklease":
		err = e.lock.LockLease(ctx, r.Lease)
		rep.OK = err == nil
	case "unlock":
		err = e.lock.Unlock(ctx)
	case "extend":
		x, ok := e.lock.(extender)
		if !ok {
			return reply{Err: "unsupported", Msg: "this version has no Extend"}
		}
		err = x.Extend(ctx, r.Lease)
	case "holdcount":
		rep.N, err = e.lock.HoldCount(ctx)
	case "force":
		rep.OK, err = e.lock.ForceUnlock(ctx)
	default:
		return reply{Err: "other", Msg: "unknown op " + r.Op}
	}
	end := time.Now()
	rep.Start, rep.End = start.UnixNano(), end.UnixNano()
	if err != nil {
		rep.Err, rep.Msg = errClass(err), err.Error()
	}
	switch {
	case rep.OK && err == nil && (r.Op == "trylock" || r.Op == "lock" || r.Op == "locklease"):
		rep.Prev = e.open(o)
	case r.Op == "unlock" && err == nil && r.Last:
		e.stopLive(o)
	}
	return rep
}
