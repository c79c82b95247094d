package transport

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// hammer runs callers goroutines that send ECHO (a script that returns
// its argument, with script) of tokens of their own through s for d, each
// call under a ctx made by callCtx, and returns what went wrong: a reply
// that is not the call's own token, at once or once a call its caller
// left is done (a cut call's reply is still read); and how many calls
// replied, failed with no reply read, did not run, and were left.
func hammer(s *Sender, callers int, d time.Duration, script *Script, callCtx func() (context.Context, context.CancelFunc)) (wrong []string, counts map[string]int) {
	return hammerKeys(s, callers, d, script, callCtx, func(c int) string { return "b:k" + strconv.Itoa(c%4) })
}

// hammerKeys is hammer with the script's key of caller c given by key.
func hammerKeys(s *Sender, callers int, d time.Duration, script *Script, callCtx func() (context.Context, context.CancelFunc), key func(c int) string) (wrong []string, counts map[string]int) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		left    []*Op
		tokens  = map[*Op]string{}
		replied atomic.Int64
		unknown atomic.Int64
		notRun  atomic.Int64
	)
	check := func(o *Op, token string) {
		switch o.Outcome() {
		case Replied:
			replied.Add(1)
			if o.V != token {
				mu.Lock()
				wrong = append(wrong, fmt.Sprintf("%q read %#v", token, o.V))
				mu.Unlock()
			}
		case Unknown:
			unknown.Add(1)
		case NotRun:
			notRun.Add(1)
		}
	}
	end := time.Now().Add(d)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			for n := 0; time.Now().Before(end); n++ {
				token := "c" + strconv.Itoa(c) + "-" + strconv.Itoa(n)
				ctx, cancel := callCtx()
				var o *Op
				if script != nil {
					o = NewScriptOp(ctx, script, []any{key(c)}, token)
				} else {
					o = NewOp(ctx, "echo", token)
				}
				err := s.Exec(ctx, o)
				cancel()
				if _, ok := Abandoned(err); ok {
					mu.Lock()
					left = append(left, o)
					tokens[o] = token
					mu.Unlock()
					continue
				}
				Expect(err).NotTo(HaveOccurred())
				check(o, token)
			}
		}()
	}
	wg.Wait()
	for _, o := range left {
		Eventually(o.Done()).WithTimeout(40*time.Second).Should(BeClosed(), "a call its caller left is done (its reply read, or none)")
		check(o, tokens[o])
	}
	return wrong, map[string]int{"replied": int(replied.Load()), "unknown": int(unknown.Load()),
		"not run": int(notRun.Load()), "left": len(left)}
}

// Issue 41 item 3: the flushers write batches as RESP on connections of
// the library's own (two in flight when calls wait), never through
// go-redis's pool, and every call reads its own reply, whatever cuts it.
var _ = Describe("Batches on the library's own connections", Label("slow"), func() {
	var (
		srv *redistest.Server
		ctx context.Context
	)
	BeforeEach(func() {
		var err error
		srv, err = redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
		DeferCleanup(cancel)
	})

	// sender returns a Sender on a go-redis client made from o (Addr set
	// here), its goroutines checked at cleanup.
	sender := func(o *redis.Options) (*Sender, *redis.Client) {
		o.Addr = srv.Addr
		rdb := redis.NewClient(o)
		DeferCleanup(rdb.Close)
		before := gleak.Goroutines()
		done := make(chan struct{})
		s := NewSender(testConfig(done), rdb)
		DeferCleanup(func() {
			close(done)
			s.Shut()
			expectNoLeaks(before)
		})
		return s, rdb
	}
	background := func() (context.Context, context.CancelFunc) { return ctx, func() {} }

	It("sends them past go-redis's pool, on two connections when calls wait, each call reading its own reply", func() {
		s, rdb := sender(&redis.Options{})
		wrong, counts := hammer(s, 32, time.Second, nil, background)
		GinkgoWriter.Printf("%v\n", counts)
		Expect(wrong).To(BeEmpty())
		Expect(counts["replied"]).To(BeNumerically(">", 100))
		Expect(counts["unknown"] + counts["not run"]).To(BeZero())
		Expect(s.one.flushedOnLanes()).To(Equal(maxBatches), "both flushers sent batches")
		Expect(rdb.PoolStats().TotalConns).To(BeZero(), "nothing went through the user's pool")
		for _, l := range s.one.lanes() {
			// In go-redis's pool, or its pipelines' pool when the lane's
			// first call was a batch's.
			Expect(dialed(l)).To(Equal(uint32(1)), "each lane kept its one connection")
		}
	})

	for _, proto := range []int{2, 3} {
		It("keeps every reply its own with a pool of one, calls cut by their ctx at any moment, on RESP"+strconv.Itoa(proto), func() {
			s, _ := sender(&redis.Options{PoolSize: 1, ReadTimeout: 10 * time.Second, Protocol: proto})
			cut := func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, time.Duration(rand.IntN(3000))*time.Microsecond)
			}
			wrong, counts := hammer(s, 16, 2*time.Second, nil, cut)
			GinkgoWriter.Printf("%v\n", counts)
			Expect(wrong).To(BeEmpty())
			Expect(counts["replied"]).To(BeNumerically(">", 0))
			// A call cut before it was written is withdrawn (not run), one
			// cut after is left (its reply read once it comes).
			Expect(counts["left"]+counts["not run"]).To(BeNumerically(">", 0), "calls were cut")
		})
	}

	It("keeps every reply its own on RESP3 with client tracking's pushes between and before replies", func() {
		s, _ := sender(&redis.Options{Protocol: 3,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error {
				return cn.Do(ctx, "client", "tracking", "on").Err()
			}})
		// Each call reads a key the others write (its connection tracks
		// it: an invalidation push follows each write) and returns its
		// token.
		touch := &Script{Name: "touch", Src: "redis.call('get', KEYS[1]); redis.call('incr', KEYS[1]); return ARGV[1]"}
		wrong, counts := hammer(s, 16, time.Second, touch, background)
		GinkgoWriter.Printf("%v\n", counts)
		Expect(wrong).To(BeEmpty())
		Expect(counts["replied"]).To(BeNumerically(">", 100))
	})

	It("sends them through each lane's go-redis client over TLS and with a StreamingCredentialsProvider, two in flight", func() {
		tlsSrv, err := redistest.Start(redistest.WithTLS())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(tlsSrv.Close)
		for _, o := range []*redis.Options{
			{Addr: tlsSrv.Addr, TLSConfig: tlsSrv.TLSConfig()},
			{Addr: srv.Addr, StreamingCredentialsProvider: staticCreds{}},
		} {
			rdb := redis.NewClient(o)
			DeferCleanup(rdb.Close)
			done := make(chan struct{})
			s := NewSender(testConfig(done), rdb)
			DeferCleanup(func() { close(done); s.Shut() })
			wrong, counts := hammer(s, 16, time.Second, nil, background)
			GinkgoWriter.Printf("TLS %v: %v\n", o.TLSConfig != nil, counts)
			Expect(wrong).To(BeEmpty())
			Expect(counts["replied"]).To(BeNumerically(">", 100))
			Expect(counts["unknown"] + counts["not run"]).To(BeZero())
			Expect(s.one.flushedOnLanes()).To(Equal(maxBatches))
			Expect(rdb.PoolStats().TotalConns).To(BeZero(), "nothing went through the user's pool")
			for _, l := range s.one.lanes() {
				st := l.Client().PoolStats()
				Expect(st.Hits+st.Misses).To(BeNumerically(">", 10), "the lane's batches went through its go-redis client")
			}
		}
	})

	It("keeps every reply its own while CLIENT KILL closes its connections, and goes on on new ones", func() {
		s, _ := sender(&redis.Options{})
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
		DeferCleanup(admin.Close)
		killed := make(chan int)
		go func() {
			defer GinkgoRecover()
			n := 0
			for range 10 {
				time.Sleep(150 * time.Millisecond)
				k, err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Result()
				Expect(err).NotTo(HaveOccurred())
				n += int(k)
			}
			killed <- n
		}()
		wrong, counts := hammer(s, 16, 2*time.Second, nil, background)
		n := <-killed
		GinkgoWriter.Printf("%v, %d connections killed\n", counts, n)
		Expect(wrong).To(BeEmpty())
		Expect(n).To(BeNumerically(">", 0))
		Expect(counts["unknown"]+counts["not run"]).To(BeNumerically(">", 0), "calls met killed connections")
		// Calls go on, on new connections.
		wrong, counts = hammer(s, 16, 200*time.Millisecond, nil, background)
		Expect(wrong).To(BeEmpty())
		Expect(counts["replied"]).To(BeNumerically(">", 0))
	})

	It("keeps every reply its own while CLIENT PAUSE outlasts go-redis's read timeout", func() {
		s, rdb := sender(&redis.Options{ReadTimeout: 200 * time.Millisecond})
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
		DeferCleanup(admin.Close)
		paused := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(paused)
			for range 4 {
				time.Sleep(300 * time.Millisecond)
				Expect(admin.Do(ctx, "client", "pause", 500, "all").Err()).To(Succeed())
			}
		}()
		wrong, counts := hammer(s, 16, 3*time.Second, nil, background)
		<-paused
		GinkgoWriter.Printf("%v\n", counts)
		Expect(wrong).To(BeEmpty())
		Expect(counts["unknown"]).To(BeNumerically(">", 0), "calls outlasted the read timeout")
		Expect(counts["replied"]).To(BeNumerically(">", 0))
		Expect(rdb.PoolStats().TotalConns).To(BeZero())
	})
})
