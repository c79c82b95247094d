// Package embedded gives the demo programs a Redis to talk to: the address
// the user gave, else a private redis-server on a free loopback port
// ($REDIS_SERVER, else the one on PATH), else, when there is none or it
// does not start, an in-process Redis (miniredis, with its TTLs driven by
// the wall clock) whose description says why. Only programs import it: the
// library never does.
package embedded

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// Redis is a Redis the program may use.
type Redis struct {
	// Addr is its host:port.
	Addr string
	// Options are the go-redis options to reach it (Addr, and for a given
	// Redis whatever else its options said: credentials, TLS, database).
	Options *redis.Options
	// What says which Redis it is, for the user.
	What  string
	close func()
}

// Close stops a Redis this package started; it leaves a given one alone.
func (r *Redis) Close() {
	if r.close != nil {
		r.close()
	}
}

// Open returns the Redis at addr when addr is not empty (after checking
// that it answers PING), else starts one.
func Open(ctx context.Context, addr string) (*Redis, error) {
	if addr == "" {
		return OpenOptions(ctx, nil)
	}
	return OpenOptions(ctx, &redis.Options{Addr: addr})
}

// OpenOptions returns the Redis that opt reaches when opt is not nil (after
// checking that it answers PING), else starts one.
func OpenOptions(ctx context.Context, opt *redis.Options) (*Redis, error) {
	if opt != nil {
		o := *opt
		o.MaxRetries = -1
		rdb := redis.NewClient(&o)
		defer rdb.Close()
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := rdb.Ping(pctx).Err(); err != nil {
			return nil, fmt.Errorf("redis at %s is unreachable: %w", opt.Addr, err)
		}
		return &Redis{Addr: opt.Addr, Options: opt, What: "redis at " + opt.Addr}, nil
	}
	s, why := startServer()
	if s != nil {
		return &Redis{Addr: s.Addr, Options: &redis.Options{Addr: s.Addr}, What: fmt.Sprintf("private redis-server on %s (pid %d)", s.Addr, s.Pid()), close: func() { _ = s.Close() }}, nil
	}
	return startInProcess(why)
}

// startServer starts a private redis-server ($REDIS_SERVER, else the one on
// PATH), or says for the user why there is none.
func startServer() (*redistest.Server, string) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return nil, fmt.Sprintf("REDIS_SERVER=%s is not an executable file", p)
		}
	} else if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, "no redis-server on PATH"
	}
	s, err := redistest.Start()
	if err != nil {
		bin, _ := redistest.Binary()
		why := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(err.Error(), "redistest: ")), ":")
		return nil, fmt.Sprintf("%s did not start (%s)", bin, why)
	}
	return s, ""
}

// startInProcess starts a miniredis whose TTLs follow the wall clock; why
// says why no redis-server was started.
func startInProcess(why string) (*Redis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("starting in-process redis: %w", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // miniredis keeps TTLs frozen unless told how much time passed
		defer close(done)
		last := time.Now()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			case <-stop:
				return
			}
		}
	}()
	return &Redis{Addr: m.Addr(), Options: &redis.Options{Addr: m.Addr()}, What: "in-process Redis (miniredis) on " + m.Addr() + ": " + why, close: func() {
		close(stop)
		<-done
		m.Close()
	}}, nil
}
