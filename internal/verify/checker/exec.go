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
	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/rlock"
)

// The executor runs the calls of one goredisson Client for its owners, in
// this process (an in-process Client) or in an agent process. It keeps one
// LostContext per owner: opened right after a successful acquisition when
// the owner has none that is live, stopped at its last Unlock, and watched
// by a goroutine that records when (and why) it ended. An election's
// executor runs one candidate instead (exec_elect.go).

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
	// Op: trylock lock locklease unlock extend holdcount isheld force lc
	// open ping arm disarm quit, or an election's (exec_elect.go).
	Op      string        `json:"op"`
	Owner   int           `json:"o"`
	Lease   time.Duration `json:"lease,omitempty"` // <= 0: watchdog
	Last    bool          `json:"last,omitempty"`  // unlock: the owner's last hold (stop its LostContext)
	Timeout time.Duration `json:"timeout,omitempty"`
	Value   string        `json:"value,omitempty"` // campaign: the candidate's value
}

// reply is what a call did. Times are wall-clock nanoseconds (the agents
// run on the same machine as the checker).
type reply struct {
	OK    bool     `json:"ok,omitempty"` // TryLock's, ForceUnlock's, IsHeldByCurrent's result
	N     int      `json:"n,omitempty"`  // HoldCount's result
	Err   string   `json:"err,omitempty"`
	Msg   string   `json:"msg,omitempty"`
	Start int64    `json:"s,omitempty"`
	End   int64    `json:"e,omitempty"`
	LC    []lcInfo `json:"lc,omitempty"` // op lc: every owner's LostContext
	// Prev is the owner's ended LostContext that a successful acquisition
	// replaced with a new one (nil: none, or it was live and was kept).
	Prev *lcInfo `json:"prev,omitempty"`
	ID   string  `json:"id,omitempty"` // the Client's id (the agent's first line); a kept permit's id
	// Looks are what the looker saw (op disarm), per owner (or, in an
	// election, of the candidate's leadership context).
	Looks []lookInfo `json:"looks,omitempty"`
	// Elect is an election candidate's state (exec_elect.go).
	Elect *electState `json:"elect,omitempty"`
}

// lcInfo is the state of an owner's LostContext.
type lcInfo struct {
	State string `json:"st"`           // none, live, ended
	At    int64  `json:"at,omitempty"` // ended: when its watcher (or a look at Err) saw it end
	Cause string `json:"cause,omitempty"`
	// Live is the time taken before the last look at its Err that saw it
	// live: proof that it was live then (the end's At is only when it
	// was noticed, late when the process was starved of CPU).
	Live int64 `json:"live,omitempty"`
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
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, rlock.ErrClosed):
		return "closed"
	case errors.Is(err, election.ErrNotLeader):
		return "notleader"
	case errors.Is(err, election.ErrNoLeader):
		return "noleader"
	case errors.Is(err, rlock.ErrUnknownOutcome):
		return "unknown"
	}
	return "other"
}

// causeClass names a LostContext's cause.
func causeClass(cause error) string {
	switch c := errClass(cause); c {
	case "lost", "notheld", "closed", "canceled":
		return c
	}
	return fmt.Sprint(cause)
}

type executor struct {
	cfg    execConfig
	rdb    *redis.Client
	c      *rlock.Client
	lock   rlock.Locker                    // a lock kind
	sem    *rlock.PermitExpirableSemaphore // Kept
	el     *electExec                      // Election
	owners []*ownerCtl
	look   lookerSlot
}

type ownerCtl struct {
	ctx    context.Context
	mu     sync.Mutex
	w      *lcWatch
	permit *rlock.KeptPermit // Kept: the owner's last permit
}

// lcWatch watches one LostContext.
type lcWatch struct {
	lctx     context.Context
	stop     context.CancelFunc
	mu       sync.Mutex
	stopped  bool
	ended    bool
	at       time.Time
	cause    string
	lastLive time.Time // the last look at Err that saw it live
}

// execConfig sets up an executor.
type execConfig struct {
	Redis       string        `json:"redis"`
	Watchdog    time.Duration `json:"wd"`
	Kind        string        `json:"kind"`
	Lock        string        `json:"lock"`
	Owners      int           `json:"owners"`
	Verbose     bool          `json:"verbose,omitempty"`
	ReadTimeout time.Duration `json:"rt,omitempty"`
	MaxLease    time.Duration `json:"max,omitempty"`
	Fence       string        `json:"fence,omitempty"` // Config.Fence
}

// fenceOption is the Clients' lost-call fence for Config.Fence.
func fenceOption(fence string) rlock.Option {
	if fence == "floor" {
		return rlock.WithLostCallFence(rlock.FenceFloor)
	}
	return rlock.WithLostCallFence(rlock.FenceAuto)
}

// parseFence checks a -fence flag's value.
func parseFence(s string) (string, error) {
	switch s {
	case "", "auto", "floor":
		return s, nil
	}
	return "", fmt.Errorf("fence %q: want auto or floor", s)
}

func (cfg execConfig) newClient(logOut io.Writer, opts ...rlock.Option) (*redis.Client, *rlock.Client, error) {
	opt := &redis.Options{Addr: cfg.Redis, ReadTimeout: cfg.ReadTimeout}
	if cfg.ReadTimeout > 0 {
		opt.MaxRetries = -1 // a call cut by the read timeout is not sent again by go-redis
	}
	rdb := redis.NewClient(opt)
	opts = append(opts, rlock.WithWatchdogTimeout(cfg.Watchdog), rlock.WithLogger(quietLogger(logOut, cfg.Verbose)), fenceOption(cfg.Fence))
	c, err := rlock.NewClient(rdb, opts...)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	return rdb, c, nil
}

// quietLogger is a Client's logger: losses are expected here, so it says
// nothing unless verbose.
func quietLogger(out io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelError + 1
	if verbose {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))
}

func newExecutor(cfg execConfig, logOut io.Writer) (*executor, error) {
	if cfg.Kind == electionKind {
		el, err := newElectExec(cfg, logOut)
		if err != nil {
			return nil, err
		}
		return &executor{cfg: cfg, el: el}, nil
	}
	rdb, c, err := cfg.newClient(logOut)
	if err != nil {
		return nil, err
	}
	e := &executor{cfg: cfg, rdb: rdb, c: c}
	if cfg.Kind == keptKind {
		e.sem = c.NewPermitExpirableSemaphore(cfg.Lock)
	} else if e.lock, err = newLock(c, cfg.Kind, cfg.Lock); err != nil {
		_ = c.Close()
		_ = rdb.Close()
		return nil, err
	}
	for o := range cfg.Owners {
		e.owners = append(e.owners, &ownerCtl{ctx: ctxowner.WithID(context.Background(), ownerID(o))})
	}
	return e, nil
}

// clientID is the id of the executor's Client ("" for an election's
// candidate, whose Client a close replaces).
func (e *executor) clientID() string {
	if e.c == nil {
		return ""
	}
	return e.c.ID()
}

func (e *executor) close() {
	e.look.disarm()
	if e.el != nil {
		e.el.close()
		return
	}
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

// info looks at the LostContext's Err and reports its state: ended when
// its watcher saw it end or the look sees it ended (the loss signal's own
// check, which may see a passed deadline before the watcher is told), with
// the last look that saw it live.
func (w *lcWatch) info() lcInfo {
	if w == nil {
		return lcInfo{State: "none"}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return lcInfo{State: "none"}
	}
	now := time.Now()
	live := w.lctx.Err() == nil
	if live {
		w.lastLive = now
	}
	var last int64
	if !w.lastLive.IsZero() {
		last = w.lastLive.UnixNano()
	}
	switch {
	case w.ended:
		return lcInfo{State: "ended", At: w.at.UnixNano(), Cause: w.cause, Live: last}
	case !live:
		return lcInfo{State: "ended", At: now.UnixNano(), Cause: causeClass(context.Cause(w.lctx)), Live: last}
	}
	return lcInfo{State: "live", Live: last}
}

// watch starts watching lctx.
func watch(lctx context.Context, stop context.CancelFunc) *lcWatch {
	w := &lcWatch{lctx: lctx, stop: stop}
	go func() {
		<-lctx.Done()
		at := time.Now()
		cause := context.Cause(lctx)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return
		}
		w.ended, w.at, w.cause = true, at, causeClass(cause)
	}()
	return w
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
	var lctx context.Context
	var stop context.CancelFunc
	if e.sem != nil {
		lctx, stop = o.permit.LostContext(o.ctx)
	} else {
		lctx, stop = rlock.LostContext(o.ctx, e.lock)
	}
	o.w = watch(lctx, stop)
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
	case "ping":
		return reply{OK: true}
	case "arm":
		e.look.arm(e.lookTargets())
		return reply{OK: true}
	case "disarm":
		return reply{Looks: e.look.disarm()}
	case "warm":
		return e.warm()
	}
	if e.el != nil {
		return e.el.do(r)
	}
	switch r.Op {
	case "lc":
		return reply{LC: e.lcs()}
	case "open":
		if r.Owner < 0 || r.Owner >= len(e.owners) {
			return reply{Err: "other", Msg: fmt.Sprintf("no owner %d", r.Owner)}
		}
		return reply{Prev: e.open(e.owners[r.Owner])}
	}
	if r.Op != "force" && (r.Owner < 0 || r.Owner >= len(e.owners)) {
		return reply{Err: "other", Msg: fmt.Sprintf("no owner %d", r.Owner)}
	}
	return e.call(r)
}

// call runs a lock call (or a kept permit's) with its timeout.
func (e *executor) call(r req) reply {
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
	start := time.Now()
	var rep reply
	var err error
	if e.sem != nil {
		rep, err = e.keptCall(ctx, o, r)
	} else {
		rep, err = e.lockCall(ctx, r)
	}
	if rep.Err == "unsupported" {
		return rep
	}
	end := time.Now()
	rep.Start, rep.End = start.UnixNano(), end.UnixNano()
	if err != nil {
		rep.Err, rep.Msg = errClass(err), err.Error()
	}
	switch {
	case rep.OK && err == nil && acquireOp(r.Op):
		rep.Prev = e.open(o)
	case r.Op == "unlock" && err == nil && r.Last:
		e.stopLive(o)
	}
	return rep
}

// lockCall runs one call of a lock kind.
func (e *executor) lockCall(ctx context.Context, r req) (rep reply, err error) {
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
			return reply{Err: "unsupported", Msg: "this version has no Extend"}, nil
		}
		err = x.Extend(ctx, r.Lease)
	case "holdcount":
		rep.N, err = e.lock.HoldCount(ctx)
	case "isheld":
		rep.OK, err = e.lock.IsHeldByCurrent(ctx)
	case "force":
		rep.OK, err = e.lock.ForceUnlock(ctx)
	default:
		return reply{Err: "unsupported", Msg: "unknown op " + r.Op}, nil
	}
	return rep, err
}

// keptCall runs one call of a kept permit: trylock is TryAcquireKept with
// no wait, lock AcquireKept, unlock the owner's last permit's Release.
func (e *executor) keptCall(ctx context.Context, o *ownerCtl, r req) (rep reply, err error) {
	var k *rlock.KeptPermit
	switch r.Op {
	case "trylock":
		k, rep.OK, err = e.sem.TryAcquireKept(ctx, 0)
	case "lock":
		k, err = e.sem.AcquireKept(ctx)
		rep.OK = err == nil
	case "unlock":
		o.mu.Lock()
		k = o.permit
		o.mu.Unlock()
		if k == nil {
			return reply{Err: "notheld", Msg: "the owner has no permit"}, nil
		}
		return reply{ID: k.ID()}, k.Release(ctx)
	default:
		return reply{Err: "unsupported", Msg: "not an op of kept permits: " + r.Op}, nil
	}
	if rep.OK && err == nil {
		o.mu.Lock()
		o.permit = k
		o.mu.Unlock()
		rep.ID = k.ID()
	}
	return rep, err
}

// warm makes an acquisition and a release of the lock's kind on an object
// of its own, so that the server has the scripts and the Client's lane a
// connection: the next call goes out at once (a lost step's TryLock must
// be written before Redis stalls).
func (e *executor) warm() reply {
	ctx, cancel := context.WithTimeout(ctxowner.WithID(context.Background(), "warm"), callTimeout)
	defer cancel()
	var err error
	if e.sem != nil {
		s := e.c.NewPermitExpirableSemaphore(e.cfg.Lock + ":warm")
		var k *rlock.KeptPermit
		if _, err = s.TrySetPermits(ctx, 1); err == nil {
			if k, _, err = s.TryAcquireKept(ctx, 0); err == nil && k != nil {
				err = k.Release(ctx)
			}
		}
	} else {
		var l rlock.Locker
		if l, err = newLock(e.c, e.cfg.Kind, e.cfg.Lock+":warm"); err == nil {
			if _, err = l.TryLock(ctx, 0, time.Second); err == nil {
				err = l.Unlock(ctx)
			}
		}
	}
	rep := reply{OK: err == nil}
	rep.Err, rep.Msg = errParts(err)
	return rep
}
