package goredisson_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// silentListener accepts connections and never answers: a dial succeeds,
// and go-redis's handshake then waits for a reply that never comes (a
// hung server, or a proxy in front of a dead one).
func silentListener() string {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	DeferCleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// With Redis down, a wait ends at its bound: the wait (and ctx) bound the
// whole call, go-redis's dial, handshake and retries included, with go-redis
// left at its defaults (DialTimeout 5 s, ReadTimeout 3 s, MaxRetries 3).
var _ = Describe("Waits while Redis is down", Label("fault"), func() {
	// slack covers a loaded 2-core machine's scheduling delays.
	const slack = time.Second
	var ctx context.Context
	BeforeEach(func() { ctx = ctxowner.New(context.Background()) })

	clientOn := func(addr string) *rlock.Client {
		rdb := redis.NewClient(&redis.Options{Addr: addr}) // go-redis's defaults
		DeferCleanup(rdb.Close)
		c, err := rlock.NewClient(rdb)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		return c
	}
	closedPort := func() string {
		port, err := redistest.FreePort()
		Expect(err).NotTo(HaveOccurred())
		return "127.0.0.1:" + strconv.Itoa(port)
	}
	within := func(what string, bound time.Duration, call func() (bool, error)) {
		GinkgoHelper()
		start := time.Now()
		ok, _ := call()
		took := time.Since(start)
		GinkgoWriter.Printf("%s took %v (bound %v + %v slack)\n", what, took, bound, slack)
		Expect(ok).To(BeFalse(), what)
		Expect(took).To(BeNumerically("<", bound+slack), what)
	}

	for _, tc := range []struct {
		where string
		addr  func() string
	}{
		{"nothing listens (connection refused)", closedPort},
		{"the server accepts and never answers", silentListener},
	} {
		Context("when "+tc.where, func() {
			It("a 100 ms TryLock returns within its wait", func() {
				lock := clientOn(tc.addr()).NewLock("down:trylock")
				within("TryLock(100 ms)", 100*time.Millisecond, func() (bool, error) {
					return lock.TryLock(ctx, 100*time.Millisecond, 0)
				})
			})
			It("a 200 ms Semaphore.TryAcquire returns within its wait", func() {
				sem := clientOn(tc.addr()).NewSemaphore("down:sem")
				within("Semaphore.TryAcquire(200 ms)", 200*time.Millisecond, func() (bool, error) {
					return sem.TryAcquire(ctx, 1, 200*time.Millisecond)
				})
			})
			It("a one-attempt TryLock with a 300 ms ctx returns by ctx's end", func() {
				lock := clientOn(tc.addr()).NewLock("down:ctx")
				cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				within("TryLock(0) under a 300 ms ctx", 300*time.Millisecond, func() (bool, error) {
					return lock.TryLock(cctx, 0, 0)
				})
			})
		})
	}
})
