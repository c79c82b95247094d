// Command naivelocks replays the ladder of hand-written Redis locks that
// articles on distributed locks climb, next to goredisson on the same
// timing, and prints what each lock did.
//
// The rungs, written out below with go-redis:
//
//  1. SETNX + DEL: no expiry at all.
//  2. SETNX, then EXPIRE: the expiry is a second command.
//  3. SET NX PX + DEL: one command sets the expiry, but the release deletes
//     whatever lock is there.
//  4. SET NX PX + GET/DEL: the release compares the owner's token first,
//     but the check and the delete are two commands.
//  5. SET NX PX + Lua DEL: compare-and-delete in one script; the release is
//     safe, but nothing renews the lock while a long job runs.
//
// The scenarios: a holder crashes before it releases; a job outlasts its
// TTL; the lock expires between the check and the delete of a release.
// goredisson takes part as rlock.Lock with the watchdog (lease 0, renewed
// while held) and with a fixed lease of one TTL. The program exits 1 when
// goredisson breaks a promise: a crashed holder's lock not freed, a lock
// of another owner deleted, a watchdog-held lock lost.
//
//	go run ./examples/naivelocks [--redis ADDR] [--ttl 1s]
//
// Without --redis it starts a throwaway redis-server (it must be on PATH, or
// named by REDIS_SERVER) and stops it at the end.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

// The locks of the ladder, as the table names them.
const (
	setnxDel      = "SETNX + DEL"
	setnxExpire   = "SETNX, then EXPIRE"
	setPxDel      = "SET NX PX + DEL"
	getCompareDel = "SET NX PX + GET/DEL"
	luaCompareDel = "SET NX PX + Lua DEL"
	watchdog      = "goredisson (watchdog)"
	fixedLease    = "goredisson (fixed lease)"
)

func main() {
	addr := flag.String("redis", "", "Redis address (default: start a throwaway redis-server)")
	ttl := flag.Duration("ttl", time.Second, "TTL of the naive locks, lease of goredisson's (>= 100ms)")
	flag.Parse()
	if err := run(*addr, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "naivelocks:", err)
		os.Exit(1)
	}
}

// mutex is one owner's view of a lock: take it within wait, give it back.
type mutex interface {
	lock(ctx context.Context, wait time.Duration) (bool, error)
	unlock(ctx context.Context) error
}

// naiveLock is a lock written by hand with go-redis, the way one rung of
// the ladder writes it. Each owner has its own naiveLock.
type naiveLock struct {
	rung      string
	rdb       *redis.Client
	key       string
	ttl       time.Duration
	token     string // this owner's value, for the rungs that compare it
	beforeDel func() // GET/DEL rung: what happens between its GET and its DEL
}

// lock tries every 5 ms until it gets the lock or wait has passed.
func (n *naiveLock) lock(ctx context.Context, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	for {
		ok, err := n.tryOnce(ctx)
		if err != nil || ok || time.Now().After(deadline) {
			return ok, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (n *naiveLock) tryOnce(ctx context.Context) (bool, error) {
	switch n.rung {
	case setnxDel:
		return n.rdb.SetNX(ctx, n.key, "1", 0).Result() // no expiry
	case setnxExpire:
		ok, err := n.rdb.SetNX(ctx, n.key, "1", 0).Result()
		if err != nil || !ok {
			return ok, err
		}
		// A crash right here leaves a lock that never expires.
		return true, n.rdb.Expire(ctx, n.key, n.ttl).Err()
	}
	n.token = rand.Text()
	return n.rdb.SetNX(ctx, n.key, n.token, n.ttl).Result() // SET key token NX PX ttl
}

// compareAndDelete deletes KEYS[1] only when it still holds the caller's token.
var compareAndDelete = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
	return redis.call('del', KEYS[1])
end
return 0`)

func (n *naiveLock) unlock(ctx context.Context) error {
	switch n.rung {
	case getCompareDel:
		v, err := n.rdb.Get(ctx, n.key).Result()
		if errors.Is(err, redis.Nil) || (err == nil && v != n.token) {
			return nil // not ours any more: nothing to delete
		}
		if err != nil {
			return err
		}
		if n.beforeDel != nil {
			n.beforeDel() // the lock may expire and be taken right here
		}
		return n.rdb.Del(ctx, n.key).Err()
	case luaCompareDel:
		return compareAndDelete.Run(ctx, n.rdb, []string{n.key}, n.token).Err()
	}
	return n.rdb.Del(ctx, n.key).Err() // whoever holds it now
}

// goredissonLock is an rlock.Lock behind the same two calls. The owner is
// the one ctx carries (ctxowner.New), so one value serves every owner.
type goredissonLock struct {
	l     *rlock.Lock
	lease time.Duration // 0: the watchdog renews the lock while it is held
}

func (g goredissonLock) lock(ctx context.Context, wait time.Duration) (bool, error) {
	return g.l.TryLock(ctx, wait, g.lease) // waits on Redisson's unlock messages, up to wait
}

func (g goredissonLock) unlock(ctx context.Context) error { return g.l.Unlock(ctx) }

// row is one line of the table: a scenario played with one lock.
type row struct {
	scenario, lock, verdict string
	broken                  bool // goredisson broke a promise
}

// lab holds what the scenarios share.
type lab struct {
	addr   string
	rdb    *redis.Client
	locks  *rlock.Client // watchdog timeout: one TTL
	ttl    time.Duration
	prefix string // of the keys of this run
}

// crash: the holder takes the lock and its process dies before releasing
// it; then the next owner tries for two TTLs.
func (l *lab) crash(ctx context.Context, name string) (row, error) {
	key := l.prefix + ":crash:" + name
	defer l.rdb.Del(ctx, key)
	var next mutex
	if name == watchdog {
		if err := l.crashHolder(ctx, key); err != nil {
			return row{}, err
		}
		next = goredissonLock{l: l.locks.NewLock(key)}
	} else {
		// The holder's SETNX; it dies before its DEL (rung 1) or EXPIRE (rung 2).
		if err := l.rdb.SetNX(ctx, key, "1", 0).Err(); err != nil {
			return row{}, err
		}
		next = &naiveLock{rung: name, rdb: l.rdb, key: key, ttl: l.ttl}
	}
	ctx = ctxowner.New(ctx)
	start := time.Now()
	ok, err := next.lock(ctx, 2*l.ttl)
	took := time.Since(start).Round(10 * time.Millisecond)
	if err != nil {
		return row{}, err
	}
	r := row{scenario: "holder crashes", lock: name, broken: name == watchdog && !ok}
	if !ok {
		left, _ := l.rdb.PTTL(ctx, key).Result()
		r.verdict = fmt.Sprintf("FAILS: the lock is never released (TTL %s); the next owner was refused for %v", ttlText(left), took)
		return r, nil
	}
	r.verdict = fmt.Sprintf("ok: the next owner got the lock after %v, when the crashed holder's lease ran out", took)
	return r, next.unlock(ctx)
}

// crashHolder takes the lock key in a process of its own (a go-redis client
// and an rlock Client) that then dies without Unlock.
func (l *lab) crashHolder(ctx context.Context, key string) error {
	rdb := redis.NewClient(&redis.Options{Addr: l.addr})
	defer rdb.Close()
	holder, err := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(l.ttl))
	if err != nil {
		return err
	}
	defer holder.Close() // the process dies: no Unlock, and no more renewals
	return holder.NewLock(key).Lock(ctxowner.New(ctx))
}

func ttlText(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return d.String()
}

// relayResult is what happened when three owners took turns on a lock.
type relayResult struct {
	bDuringA bool  // the second owner got in while the first still worked
	cDuringB bool  // the third got in while the second worked: its lock was deleted
	aRelease error // what the first owner's release returned
}

// relay plays three owners, a, b and c, on one lock. a takes it and works
// for aWork or until b gets in; b tries meanwhile and, once in, works half
// a TTL; when a has released, c tries. bIn is closed when b got in (or gave
// up).
func (l *lab) relay(ctx context.Context, a, b, c mutex, aWork time.Duration, bIn chan struct{}) (relayResult, error) {
	var r relayResult
	aCtx, bCtx, cCtx := ctxowner.New(ctx), ctxowner.New(ctx), ctxowner.New(ctx)
	if ok, err := a.lock(aCtx, l.ttl); err != nil || !ok {
		return r, fmt.Errorf("the first owner did not get the lock: %v, %w", ok, err)
	}
	var aWorking, bWorking atomic.Bool
	aWorking.Store(true)
	bDone := make(chan error, 1)
	go func() {
		ok, err := b.lock(bCtx, 4*l.ttl)
		if err != nil || !ok {
			close(bIn)
			bDone <- fmt.Errorf("the second owner did not get the lock: %v, %w", ok, err)
			return
		}
		bWorking.Store(true)
		r.bDuringA = aWorking.Load()
		close(bIn)
		time.Sleep(l.ttl / 2)
		bWorking.Store(false)
		bDone <- b.unlock(bCtx)
	}()
	select { // a's job
	case <-bIn:
	case <-time.After(aWork):
	}
	aWorking.Store(false)
	r.aRelease = a.unlock(aCtx)
	ok, err := c.lock(cCtx, 4*l.ttl)
	if err == nil && ok {
		r.cDuringB = bWorking.Load()
		err = c.unlock(cCtx)
	} else if err == nil {
		err = errors.New("the third owner did not get the lock")
	}
	bErr := <-bDone // before r is read: b's goroutine writes r.bDuringA
	return r, errors.Join(err, bErr)
}

// relayRow plays relay with the lock called name; the first owner works for
// aWork (or until the second gets in).
func (l *lab) relayRow(ctx context.Context, scenario, name string, aWork time.Duration) (row, error) {
	key := l.prefix + ":" + scenario + ":" + name
	defer l.rdb.Del(ctx, key)
	bIn := make(chan struct{})
	var a, b, c mutex
	switch name {
	case watchdog, fixedLease:
		g := goredissonLock{l: l.locks.NewLock(key)}
		if name == fixedLease {
			g.lease = l.ttl
		}
		a, b, c = g, g, g
	default:
		first := &naiveLock{rung: name, rdb: l.rdb, key: key, ttl: l.ttl}
		if name == getCompareDel {
			first.beforeDel = func() { <-bIn } // the lock expires, the second owner takes it
		}
		a = first
		b = &naiveLock{rung: name, rdb: l.rdb, key: key, ttl: l.ttl}
		c = &naiveLock{rung: name, rdb: l.rdb, key: key, ttl: l.ttl}
	}
	res, err := l.relay(ctx, a, b, c, aWork, bIn)
	if err != nil || (res.aRelease != nil && !errors.Is(res.aRelease, rlock.ErrNotHeld)) {
		return row{}, errors.Join(err, res.aRelease)
	}
	r := row{scenario: scenario, lock: name, verdict: judge(res)}
	switch name {
	case fixedLease:
		// A fixed lease shorter than the job runs out, as rung 5's TTL
		// does; the promise is that the late release deletes nothing.
		r.broken = res.cDuringB || (res.bDuringA != errors.Is(res.aRelease, rlock.ErrNotHeld))
	case watchdog:
		r.broken = res.bDuringA || res.cDuringB
	}
	return r, nil
}

// judge says what went wrong in a relay, or that nothing did.
func judge(res relayResult) string {
	var what []string
	if res.bDuringA {
		what = append(what, "the second owner entered while the first still worked")
	}
	if errors.Is(res.aRelease, rlock.ErrNotHeld) {
		what = append(what, "the first's late Unlock was refused (ErrNotHeld) and deleted nothing")
	}
	if res.cDuringB {
		what = append(what, "the first's release deleted the second's lock, and a third entered while the second worked")
	}
	if !res.bDuringA && !res.cDuringB {
		return "ok: each owner waited for the previous one's release"
	}
	return "FAILS: " + strings.Join(what, "; ")
}

func run(addr string, ttl time.Duration) error {
	if ttl < 100*time.Millisecond {
		return fmt.Errorf("--ttl %v is too short (>= 100ms)", ttl)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt) // Ctrl-C ends every wait
	defer cancel()
	addr, stop, err := redisAddr(ctx, addr)
	if err != nil {
		return err
	}
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
	defer rdb.Close()
	locks, err := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(ttl))
	if err != nil {
		return err
	}
	defer locks.Close()
	l := &lab{addr: addr, rdb: rdb, locks: locks, ttl: ttl, prefix: "naivelocks:" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	const outlasts, checkDelete = "job outlasts its TTL", "check, then delete"
	plays := []func() (row, error){
		func() (row, error) { return l.crash(ctx, setnxDel) },
		func() (row, error) { return l.crash(ctx, setnxExpire) },
		func() (row, error) { return l.crash(ctx, watchdog) },
		func() (row, error) { return l.relayRow(ctx, outlasts, setPxDel, 2*ttl) },
		func() (row, error) { return l.relayRow(ctx, outlasts, luaCompareDel, 2*ttl) },
		func() (row, error) { return l.relayRow(ctx, outlasts, fixedLease, 2*ttl) },
		func() (row, error) { return l.relayRow(ctx, outlasts, watchdog, 2*ttl) },
		func() (row, error) { return l.relayRow(ctx, checkDelete, getCompareDel, ttl/2) },
		func() (row, error) { return l.relayRow(ctx, checkDelete, fixedLease, ttl/2) },
	}
	rows, errs := make([]row, len(plays)), make([]error, len(plays))
	var wg sync.WaitGroup
	for i, play := range plays { // each on its own key, all at once
		wg.Go(func() { rows[i], errs[i] = play() })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err // interrupted: every play failed with it
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var broken []string
	for _, r := range rows {
		fmt.Printf("%-20s  %-24s  %s\n", r.scenario, r.lock, r.verdict)
		if r.broken {
			broken = append(broken, r.scenario+" with "+r.lock)
		}
	}
	fmt.Println("A fixed lease shorter than the job runs out like rung 5's TTL; the watchdog keeps a long job's lock.")
	if len(broken) > 0 {
		return fmt.Errorf("goredisson broke a promise: %s", strings.Join(broken, ", "))
	}
	return nil
}

// redisAddr returns addr after checking that Redis answers there, or, when
// addr is empty, starts a throwaway redis-server. Call stop when done.
func redisAddr(ctx context.Context, addr string) (_ string, stop func(), _ error) {
	if addr == "" {
		srv, err := rlocktest.Start()
		if err != nil {
			return "", nil, err
		}
		return srv.Addr(), func() { _ = srv.Close() }, nil
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return "", nil, fmt.Errorf("redis at %s is unreachable: %w", addr, err)
	}
	return addr, func() {}, nil
}
