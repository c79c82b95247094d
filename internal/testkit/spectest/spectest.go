// Package spectest is the shared harness of goredisson's Ginkgo suites (the
// root suite and rlock's): one redis-server per suite process, a per-spec
// Env that flushes it and checks for leaked goroutines, goredisson clients
// closed at cleanup, helper OS processes, and small helpers the specs share.
//
// It holds one piece of package-level state, the suite's server, set by
// StartServer in a BeforeSuite.
package spectest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/faultproxy"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// server is the suite's redis-server (see StartServer).
var server *redistest.Server

// StartServer starts the suite's redis-server on a free loopback port (one
// per Ginkgo parallel process) and stops it at the suite's end. Call it in
// a BeforeSuite.
func StartServer() {
	GinkgoHelper()
	var err error
	server, err = redistest.Start()
	if err != nil {
		Fail(err.Error()) // one line, saying how to install redis-server when it is missing
	}
	DeferCleanup(func() { Expect(server.Close()).To(Succeed()) })
}

// Server returns the suite's redis-server.
func Server() *redistest.Server { return server }

// Env is one spec's world: a raw go-redis client for inspection and a way
// to make goredisson clients that are closed, and checked for leaked
// goroutines, when the spec ends.
type Env struct {
	Raw *redis.Client
}

// NewEnv flushes the suite's server (starting it again if a spec stopped
// it) and snapshots goroutines; at cleanup every client made through it is
// closed and no goroutine may be left behind.
func NewEnv() *Env {
	GinkgoHelper()
	if server.Pid() == 0 {
		Expect(server.Start()).To(Succeed())
	}
	before := gleak.Goroutines()
	e := &Env{Raw: server.Client()}
	Expect(e.Raw.FlushAll(context.Background()).Err()).To(Succeed())
	Expect(e.Raw.ConfigResetStat(context.Background()).Err()).To(Succeed())
	DeferCleanup(func() {
		Expect(e.Raw.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(5 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
	return e
}

// RDB returns a go-redis client on the suite's server, closed at cleanup.
func (e *Env) RDB(opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: server.Addr}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	DeferCleanup(c.Close)
	return c
}

// Client returns a goredisson client on its own go-redis client; both are
// closed at cleanup. Its registration is off (specs count keys) unless opts
// turn it on with rlock.WithClientRegistry(true).
func (e *Env) Client(opts ...rlock.Option) *rlock.Client {
	GinkgoHelper()
	c, err := rlock.NewClient(e.RDB(), Unregistered(opts)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() })
	return c
}

// CommandCalls returns the calls of each command since the last reset, from
// INFO commandstats.
func (e *Env) CommandCalls() map[string]int {
	GinkgoHelper()
	info, err := e.Raw.Info(context.Background(), "commandstats").Result()
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// NumSub returns PUBSUB NUMSUB for one channel.
func (e *Env) NumSub(channel string) int64 {
	GinkgoHelper()
	m, err := e.Raw.PubSubNumSub(context.Background(), channel).Result()
	Expect(err).NotTo(HaveOccurred())
	return m[channel]
}

// LockChannel is Redisson's unlock channel of a lock whose name has no '{':
// redisson_lock__channel:{name}.
func LockChannel(name string) string { return "redisson_lock__channel:{" + name + "}" }

// UniqueName returns a lock name unique to the running spec.
func UniqueName(prefix string) string {
	return fmt.Sprintf("%s:%d", prefix, GinkgoRandomSeed()+int64(CurrentSpecReport().LeafNodeLocation.LineNumber))
}

// WaitAll waits for wg, failing the spec instead of hanging when the
// goroutines do not finish within a minute.
func WaitAll(wg *sync.WaitGroup) {
	GinkgoHelper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Eventually(done).WithTimeout(time.Minute).Should(BeClosed(), "goroutines still running")
}

// CountInside runs perOwner critical sections with each locker, each under
// an owner of its own and all at once, incrementing a plain counter that
// only the lock guards (-race checks it); it returns the counter.
func CountInside(lockers []rlock.Locker, perOwner int) int {
	GinkgoHelper()
	var wg sync.WaitGroup
	var counter int
	for _, lock := range lockers {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			owner := ctxowner.New(context.Background())
			for range perOwner {
				Expect(lock.Lock(owner)).To(Succeed())
				counter++
				Expect(lock.Unlock(owner)).To(Succeed())
			}
		}()
	}
	WaitAll(&wg)
	return counter
}

// StartServers starts n extra redis-servers for one spec and stops them at
// cleanup.
func StartServers(n int) []*redistest.Server {
	GinkgoHelper()
	out := make([]*redistest.Server, n)
	for i := range out {
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		out[i] = srv
	}
	return out
}

// ClientOn returns a goredisson Client on addr; both are closed at cleanup.
func ClientOn(addr string, opts ...rlock.Option) *rlock.Client {
	GinkgoHelper()
	c, _ := ClientAndRedis(addr, opts...)
	return c
}

// ClientAndRedis returns a goredisson Client on its own go-redis client for
// addr (no retries, quick dial timeout: servers here get killed and paused),
// and that go-redis client; both are closed at cleanup.
func ClientAndRedis(addr string, opts ...rlock.Option) (*rlock.Client, *redis.Client) {
	GinkgoHelper()
	return ClientWith(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond}, opts...)
}

// ClientWith returns a goredisson Client on a go-redis client made from ro,
// and that go-redis client; both are closed at cleanup.
func ClientWith(ro *redis.Options, opts ...rlock.Option) (*rlock.Client, *redis.Client) {
	GinkgoHelper()
	rdb := redis.NewClient(ro)
	DeferCleanup(rdb.Close)
	c, err := rlock.NewClient(rdb, Unregistered(opts)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() })
	return c, rdb
}

// StartProxy starts a fault proxy in front of the suite's server.
func StartProxy() *faultproxy.Proxy {
	GinkgoHelper()
	p, err := faultproxy.Start(server.Addr)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(p.Close)
	return p
}

// ExpectNothingLeft checks, once every client is closed, that no
// subscription is left on the lock's channel and no key is left but keep,
// unlock latches and acquire-attempt markers (which expire by themselves).
func (e *Env) ExpectNothingLeft(name string, keep ...string) {
	GinkgoHelper()
	Eventually(func() int64 { return e.NumSub(LockChannel(name)) }).Should(BeZero(), "subscriptions left")
	Eventually(func() []string {
		keys := e.Raw.Keys(context.Background(), "*").Val()
		return slices.DeleteFunc(keys, func(k string) bool {
			if strings.HasPrefix(k, "goredisson_client:") {
				return true // a Client's registration (helper processes killed): it expires by itself
			}
			if strings.HasPrefix(k, "goredisson_cancel:") {
				ttl := e.Raw.PTTL(context.Background(), k).Val()
				return ttl > 0 && ttl <= time.Minute // the cancel floor of a settle expires by itself
			}
			return slices.Contains(keep, k)
		})
	}).WithTimeout(3*time.Second).Should(BeEmpty(), "keys left")
}

// Unregistered puts rlock.WithClientRegistry(false) before opts: the
// harness's Clients write no registration key (specs count the keys locks
// leave), unless opts turn it back on.
//
// It also applies the suite's lost-call fence mode (GOREDISSON_FENCE, see
// FenceOption) first; the specs' own options come after, and win.
func Unregistered(opts []rlock.Option) []rlock.Option {
	return append([]rlock.Option{rlock.WithClientRegistry(false), FenceOption()}, opts...)
}

// FenceOption is the suite's lost-call fence mode, from GOREDISSON_FENCE:
// "floor" rlock.FenceFloor (every call reads the cancel floor), "auto"
// rlock.FenceAuto (the library's default: no fence through the fault
// proxy, whose address the server sees), unset or "kill"
// rlock.FenceByID, so that calls through the fault proxy (a 1:1 TCP
// relay) are fenced by CLIENT KILL too.
func FenceOption() rlock.Option {
	switch os.Getenv("GOREDISSON_FENCE") {
	case "floor":
		return rlock.WithLostCallFence(rlock.FenceFloor)
	case "auto":
		return rlock.WithLostCallFence(rlock.FenceAuto)
	}
	return rlock.WithLostCallFence(rlock.FenceByID)
}
