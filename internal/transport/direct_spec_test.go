package transport

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/auth"

	"github.com/goredisson/goredisson/internal/inline"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// expectNoLeaks waits (20 s at most) until no goroutine is left but those
// in before and a restarted server's own (its Close ends them later).
func expectNoLeaks(before []gleak.Goroutine) {
	GinkgoHelper()
	Eventually(gleak.Goroutines).WithTimeout(20 * time.Second).ShouldNot(gleak.HaveLeaked(before,
		gleak.IgnoringCreator("github.com/goredisson/goredisson/internal/testkit/redistest.(*Server).start"),
		gleak.IgnoringCreator("os/exec.(*Cmd).Start")))
}

// The lane's direct path (inline.Lane.Do): after a first call through the
// lane's go-redis client, the inline calls go out on the connection it
// used, written and read by the lane itself, with every guarantee of a
// call through go-redis.
var _ = Describe("The inline lane's direct path", func() {
	var (
		srv  *redistest.Server
		rdb  *redis.Client
		s    *Sender
		done chan struct{}
		ctx  context.Context
	)
	BeforeEach(func() {
		var err error
		srv, err = redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		rdb = redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 20 * time.Second})
		DeferCleanup(rdb.Close)
		before := gleak.Goroutines()
		done = make(chan struct{})
		s = NewSender(testConfig(done), rdb)
		DeferCleanup(func() {
			close(done)
			s.Shut()
			expectNoLeaks(before)
		})
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
		DeferCleanup(cancel)
	})

	exec := func(args ...any) *Op {
		o := NewOp(ctx, args...)
		Expect(s.Exec(ctx, o)).To(Succeed())
		Expect(o.Outcome()).To(Equal(Replied))
		return o
	}

	It("sends every call after the first on the kept connection, past go-redis's pool", func() {
		Expect(exec("set", "d:k", "v").V).To(Equal("OK"))
		lane := s.one.lane.Client()
		gets := lane.PoolStats().Hits + lane.PoolStats().Misses
		for i := 0; i < 20; i++ {
			Expect(exec("incr", "d:n").V).To(Equal(int64(i + 1)))
		}
		Expect(exec("get", "d:k").V).To(Equal("v"))
		Expect(lane.PoolStats().Hits+lane.PoolStats().Misses).To(Equal(gets), "no connection taken from go-redis's pool")
		Expect(lane.PoolStats().TotalConns).To(Equal(uint32(1)))
	})

	It("finds the kept connection closed by a server restart once it sat idle PeekIdle, and sends the next call on a new one", func() {
		exec("set", "d:k", "v")
		exec("get", "d:k")
		last := time.Now()
		Expect(srv.Restart()).To(Succeed())
		// Idle PeekIdle, the kept connection is checked before the next
		// call: the server closed it, so the call must not go out on it
		// (its outcome would be unknown), but on a fresh one.
		time.Sleep(time.Until(last.Add(inline.PeekIdle + 50*time.Millisecond)))
		Expect(exec("set", "d:k", "w").V).To(Equal("OK"))
		Expect(exec("get", "d:k").V).To(Equal("w"))
	})

	It("bounds a call by go-redis's read timeout, as a call through go-redis is", func() {
		short := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: time.Second})
		DeferCleanup(short.Close)
		sd := NewSender(testConfig(done), short)
		DeferCleanup(sd.Shut)
		for i := 0; i < 2; i++ { // the second goes the direct path
			o := NewOp(ctx, "set", "d:k", "v")
			Expect(sd.Exec(ctx, o)).To(Succeed())
			Expect(o.V).To(Equal("OK"))
		}
		Expect(srv.Pause()).To(Succeed())
		DeferCleanup(srv.Resume)
		o := NewOp(ctx, "get", "d:k")
		ended := make(chan error, 1)
		go func() { ended <- sd.Exec(ctx, o) }()
		Eventually(ended).WithTimeout(15*time.Second).Should(Receive(BeNil()), "the read timeout (1 s) ended the call; ctx lasts 60 s")
		Expect(o.Outcome()).To(Equal(Unknown))
		Expect(srv.Resume()).To(Succeed())
	})

	It("reads the reply of a call cut by its ctx's end, and sends the next call on another connection", func() {
		exec("del", "d:q")
		exec("get", "d:k") // the lane keeps its connection
		cctx, cancel := context.WithCancel(ctx)
		pop := NewOp(cctx, "blpop", "d:q", 15)
		popped := make(chan error, 1)
		go func() { popped <- s.Exec(cctx, pop) }()
		Eventually(s.one.inFlight).WithTimeout(10 * time.Second).Should(BeTrue())
		Eventually(func() string {
			return rdb.Info(ctx, "clients").Val()
		}).WithTimeout(10*time.Second).Should(ContainSubstring("blocked_clients:1"), "the BLPOP reached Redis")
		cancel()
		var perr error
		Eventually(popped).WithTimeout(10 * time.Second).Should(Receive(&perr))
		_, ok := Abandoned(perr)
		Expect(ok).To(BeTrue(), "the caller left at its ctx's end")
		Expect(exec("rpush", "d:q", "x").V).To(Equal(int64(1)))
		Eventually(pop.Done()).WithTimeout(10 * time.Second).Should(BeClosed())
		Expect(pop.Outcome()).To(Equal(Replied), "the cut call's reply was read on")
		Expect(pop.V).To(Equal([]any{"d:q", "x"}))
		Expect(exec("llen", "d:q").V).To(Equal(int64(0)))
	})

	It("keeps a cut call's Tail bounded by the read timeout when go-redis checks its connection", func() {
		short := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 4 * time.Second})
		DeferCleanup(short.Close)
		sd := NewSender(testConfig(done), short)
		DeferCleanup(sd.Shut)
		run := func(o *Op) error { return sd.Exec(o.Ctx, o) }
		Expect(run(NewOp(ctx, "del", "d:q"))).To(Succeed())
		Expect(run(NewOp(ctx, "get", "d:k"))).To(Succeed()) // the lane keeps its connection
		cctx, cancel := context.WithCancel(ctx)
		pop := NewOp(cctx, "blpop", "d:q", 9) // on the kept connection; its reply (nil) comes in 9 s
		ended := make(chan error, 1)
		go func() { ended <- run(pop) }()
		Eventually(func() string {
			return rdb.Info(ctx, "clients").Val()
		}).WithTimeout(10*time.Second).Should(ContainSubstring("blocked_clients:1"), "the BLPOP reached Redis")
		cancel()
		Eventually(ended).WithTimeout(10 * time.Second).Should(Receive())
		// Through go-redis: its health check of the dropped connection sets
		// no deadline on the one the Tail reads on.
		Expect(run(NewOp(ctx, "get", "d:k"))).To(Succeed())
		Eventually(pop.Done()).WithTimeout(20 * time.Second).Should(BeClosed())
		Expect(pop.Outcome()).To(Equal(Unknown), "the Tail's read ended at the read timeout (4 s), not at the reply (9 s)")
	})

	It("leaves a cut call's Tail alone when the next call is cut too", func() {
		exec("del", "d:q")
		exec("get", "d:k") // the lane keeps its connection
		blocked := func(n int) {
			Eventually(func() string {
				return rdb.Info(ctx, "clients").Val()
			}).WithTimeout(10*time.Second).Should(ContainSubstring("blocked_clients:"+strconv.Itoa(n)), "the BLPOP reached Redis")
		}
		pop := func() (*Op, context.CancelFunc, chan error) {
			cctx, cancel := context.WithCancel(ctx)
			o := NewOp(cctx, "blpop", "d:q", 15)
			ended := make(chan error, 1)
			go func() { ended <- s.Exec(cctx, o) }()
			return o, cancel, ended
		}
		pop1, cancel1, ended1 := pop() // the direct path: its Tail reads on the kept connection
		blocked(1)
		cancel1()
		Eventually(ended1).WithTimeout(10 * time.Second).Should(Receive())
		pop2, cancel2, ended2 := pop() // through go-redis, on a new connection; cut too
		blocked(2)
		cancel2()
		Eventually(ended2).WithTimeout(10 * time.Second).Should(Receive())
		Expect(exec("rpush", "d:q", "x", "y").V).To(Equal(int64(2)))
		Eventually(pop1.Done()).WithTimeout(10 * time.Second).Should(BeClosed())
		Expect(pop1.Outcome()).To(Equal(Replied), "the second cut left the first call's Tail reading")
		Expect(pop1.V).To(Equal([]any{"d:q", "x"}))
		Eventually(pop2.Done()).WithTimeout(10 * time.Second).Should(BeClosed())
		Expect(pop2.Outcome()).To(Equal(Replied))
		Expect(pop2.V).To(Equal([]any{"d:q", "y"}))
	})
})

// staticCreds is a StreamingCredentialsProvider that never changes its
// credentials (the default user, no password).
type staticCreds struct{}

func (staticCreds) Subscribe(auth.CredentialsListener) (auth.Credentials, auth.UnsubscribeFunc, error) {
	return auth.NewBasicCredentials("default", "x"), func() error { return nil }, nil
}

var _ = Describe("The inline lane with a StreamingCredentialsProvider", func() {
	It("keeps no connection: go-redis may re-AUTH an idle one on its own goroutine", func() {
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, StreamingCredentialsProvider: staticCreds{}})
		DeferCleanup(rdb.Close)
		done := make(chan struct{})
		s := NewSender(testConfig(done), rdb)
		DeferCleanup(func() { close(done); s.Shut() })
		ctx := context.Background()
		for i := 0; i < 5; i++ {
			o := NewOp(ctx, "incr", "d:n")
			Expect(s.Exec(ctx, o)).To(Succeed())
			Expect(o.V).To(Equal(int64(i + 1)))
		}
		st := s.one.lane.Client().PoolStats()
		Expect(st.Hits+st.Misses).To(BeNumerically(">=", 5), "every call went through go-redis's pool")
	})
})

var _ = Describe("The inline lane's direct path on RESP3 with client tracking", func() {
	It("skips the invalidation pushes before a reply, and the next replies are not shifted", func() {
		srv, err := redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 3,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error {
				return cn.Do(ctx, "client", "tracking", "on").Err()
			}})
		DeferCleanup(rdb.Close)
		done := make(chan struct{})
		s := NewSender(testConfig(done), rdb)
		DeferCleanup(func() { close(done); s.Shut() })
		ctx := context.Background()
		exec := func(args ...any) any {
			o := NewOp(ctx, args...)
			Expect(s.Exec(ctx, o)).To(Succeed())
			Expect(o.Outcome()).To(Equal(Replied))
			return o.V
		}
		const read = "return redis.call('get', KEYS[1])"
		const write = "return redis.call('incr', KEYS[1])"
		for i := 1; i <= 5; i++ {
			Expect(exec("eval", read, 1, "t:k")).To(Or(BeNil(), Equal(strconv.Itoa(i-1))))
			Expect(exec("eval", write, 1, "t:k")).To(Equal(int64(i)))
			Expect(exec("get", "t:k")).To(Equal(strconv.Itoa(i)))
			Expect(exec("set", "t:o", "v")).To(Equal("OK"))
		}
	})
})
