package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// counter counts the commands a process sends and its round trips (a
// pipeline is one), on the wire of the connections newRedis's dialer makes
// (wirecount.go).
type counter struct {
	cmds, trips atomic.Int64
	dials       atomic.Int64 // connection set-up commands (HELLO, CLIENT SETINFO), not counted
	sockets     atomic.Int64 // SyscallConn calls (go-redis's health checks, the lane's dials)
	trace       bool         // log every pipeline (-v, watchdog runs)
	mu          sync.Mutex
	times       []time.Time // when each pipeline was sent
	// names, when not nil, counts the commands by name (lower case); set
	// it before the client dials. Only the specs use it.
	names map[string]int64
}

// named counts a command by name, if names are counted.
func (c *counter) named(name []byte) {
	if c.names == nil {
		return
	}
	c.mu.Lock()
	c.names[strings.ToLower(string(name))]++
	c.mu.Unlock()
}

// newRedis returns a go-redis client counting into cnt.
func newRedis(addr string, pool int, cnt *counter) *redis.Client {
	opt := &redis.Options{Addr: addr, PoolSize: pool}
	if cnt != nil {
		// Counted on the wire (wirecount.go), so that connections dialed
		// from these options by the library (goredisson's inline lane)
		// count too.
		opt.Dialer = cnt.dialer()
	}
	return redis.NewClient(opt)
}

// --- hung calls

// stallTimeout is how long a measurement may go without any lock or unlock
// call returning: then its context is cancelled, and the calls still
// waiting fail (a hung call is an error of the library, not a figure).
const stallTimeout = 10 * time.Second

var errStalled = fmt.Errorf("no lock or unlock call returned for %v (a call hung)", stallTimeout)

// withStallGuard returns a context cancelled with cause errStalled once
// progress has not moved for stallTimeout, and its stop function.
func withStallGuard(progress *atomic.Int64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(stallTimeout / 20)
		defer t.Stop()
		last, since := progress.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if p := progress.Load(); p != last {
					last, since = p, now
				} else if now.Sub(since) >= stallTimeout {
					cancel(errStalled)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// stalled returns err, or errStalled if ctx was cancelled by its guard.
func stalled(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errStalled) {
		return fmt.Errorf("%w: %v", cause, err)
	}
	return err
}

// openLib opens l in this process on the servers of srv, with a go-redis
// client of pool connections counting into cnt (nil: not counted); the
// returned close closes both.
func openLib(l lib, srv servers, pool int, cnt *counter, lease time.Duration) (newMutexFunc, func(), error) {
	if l.open == nil {
		return nil, nil, fmt.Errorf("%s runs in the Java bench, not in Go", l.name)
	}
	rdb := newRedis(srv.Redis, pool, cnt)
	newMutex, closeLib, err := l.open(env{rdb: rdb, addr: srv.Redis, cnt: cnt, srv: srv, lease: lease, pool: pool})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return newMutex, func() { closeLib(); rdb.Close() }, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pct returns the p-th percentile of d (sorted in place), 0 for none.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p/100))]
}
