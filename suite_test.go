package goredisson_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// The public behaviour of goredisson, specified against real redis-server
// processes that the suite starts on free loopback ports (one per Ginkgo
// parallel process) and stops by pid.

func TestGoredisson(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "goredisson")
}

var server *redistest.Server

var _ = BeforeSuite(func() {
	var err error
	server, err = redistest.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(server.Close()).To(Succeed()) })
})

// env is one spec's world: a raw go-redis client for inspection and a way to
// make goredisson clients that are closed, and checked for leaked
// goroutines, when the spec ends.
type env struct {
	raw *redis.Client
}

// newEnv flushes the server and snapshots goroutines; at cleanup every client
// made through it is closed and no goroutine may be left behind.
func newEnv() *env {
	if server.Pid() == 0 {
		Expect(server.Start()).To(Succeed())
	}
	before := gleak.Goroutines()
	e := &env{raw: server.Client()}
	Expect(e.raw.FlushAll(context.Background()).Err()).To(Succeed())
	Expect(e.raw.ConfigResetStat(context.Background()).Err()).To(Succeed())
	DeferCleanup(func() {
		Expect(e.raw.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(5 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
	return e
}

// rdb returns a go-redis client closed at cleanup.
func (e *env) rdb(opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: server.Addr}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	DeferCleanup(c.Close)
	return c
}

// client returns a goredisson client on its own go-redis client; both are
// closed at cleanup.
func (e *env) client(opts ...rlock.Option) *rlock.Client {
	c, err := rlock.NewClient(e.rdb(), opts...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() })
	return c
}

// commandCalls returns the calls of each command since the last reset, from
// INFO commandstats.
func (e *env) commandCalls() map[string]int {
	info, err := e.raw.Info(context.Background(), "commandstats").Result()
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

// numSub returns PUBSUB NUMSUB for one channel.
func (e *env) numSub(channel string) int64 {
	m, err := e.raw.PubSubNumSub(context.Background(), channel).Result()
	Expect(err).NotTo(HaveOccurred())
	return m[channel]
}

// lockChannel is Redisson's unlock channel of a lock whose name has no '{':
// redisson_lock__channel:{name}.
func lockChannel(name string) string { return "redisson_lock__channel:{" + name + "}" }

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s:%d", prefix, GinkgoRandomSeed()+int64(CurrentSpecReport().LeafNodeLocation.LineNumber))
}

// waitAll waits for wg, failing the spec instead of hanging when the
// goroutines do not finish within a minute.
func waitAll(wg *sync.WaitGroup) {
	GinkgoHelper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Eventually(done).WithTimeout(time.Minute).Should(BeClosed(), "goroutines still running")
}

// countInside runs perOwner critical sections with each locker, each under
// an owner of its own and all at once, incrementing a plain counter that
// only the lock guards (-race checks it); it returns the counter.
func countInside(lockers []rlock.Locker, perOwner int) int {
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
	waitAll(&wg)
	return counter
}
