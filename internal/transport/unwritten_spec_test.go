package transport

import (
	"context"
	"errors"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/inline"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// Issue 39 item 4: an inline call that ends before a byte of its command
// was written (its new connection's HELLO or AUTH still unanswered, the
// server stopped by SIGSTOP) did not run: its outcome is NotRun, never
// Unknown; a call cut part way through its write is Unknown.
var _ = Describe("An inline call cut before its command was written", Label("slow"), func() {
	var (
		srv  *redistest.Server
		done chan struct{}
		ctx  context.Context
		pass string // the server's password
	)
	BeforeEach(func() {
		pass = ""
		before := gleak.Goroutines()
		var err error
		srv, err = redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		DeferCleanup(func() { _ = srv.Resume() }) // a spec that failed while it was stopped
		done = make(chan struct{})
		DeferCleanup(func() {
			close(done)
			expectNoLeaks(before)
		})
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
		DeferCleanup(cancel)
	})

	// sender returns a Sender on a go-redis client made from o (Addr set
	// here), shut at cleanup.
	sender := func(o *redis.Options) (*Sender, *redis.Client) {
		o.Addr, o.MaxRetries = srv.Addr, -1
		rdb := redis.NewClient(o)
		DeferCleanup(rdb.Close)
		s := NewSender(testConfig(done), rdb)
		DeferCleanup(s.Shut)
		return s, rdb
	}
	// ran returns the server's INFO commandstats line of cmd ("never"
	// when it never ran).
	ran := func(cmd string) string {
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: pass})
		defer admin.Close()
		info, err := admin.Info(ctx, "commandstats").Result()
		Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "cmdstat_"+cmd+":") {
				return strings.TrimSpace(line)
			}
		}
		return "never"
	}

	for _, password := range []string{"", "pw"} {
		setup := "HELLO"
		if password != "" {
			setup = "HELLO with AUTH"
		}
		It("reports a call cut by its ctx's end while its new connection's "+setup+" is unanswered as not run", func() {
			pass = password
			if password != "" {
				admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
				Expect(admin.ConfigSet(ctx, "requirepass", password).Err()).To(Succeed())
				Expect(admin.Close()).To(Succeed())
			}
			s, _ := sender(&redis.Options{Password: password, ReadTimeout: 20 * time.Second})
			Expect(srv.Pause()).To(Succeed())
			cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			o := NewOp(cctx, "incr", "u:n")
			err := s.Exec(cctx, o)
			GinkgoWriter.Printf("cut during the set-up: Exec %v, op error %v\n", err, o.Err)
			Expect(err).NotTo(HaveOccurred(), "the caller is told the outcome: nothing to settle")
			Expect(o.Outcome()).To(Equal(NotRun))
			Expect(srv.Resume()).To(Succeed())
			// The server reads the connection's set-up now; no command
			// follows it, and the reply read is not taken for the call's.
			Consistently(func() string { return ran("incr") }).WithTimeout(time.Second).Should(Equal("never"))
			Expect(o.Outcome()).To(Equal(NotRun))
			Expect(o.V).To(BeNil())
			// The next call goes out and runs once.
			o = NewOp(ctx, "incr", "u:n")
			Expect(s.Exec(ctx, o)).To(Succeed())
			Expect(o.V).To(Equal(int64(1)))
		})
	}

	It("reports a call whose new connection's HELLO reply outlasts go-redis's read timeout as not run", func() {
		s, _ := sender(&redis.Options{ReadTimeout: 500 * time.Millisecond})
		Expect(srv.Pause()).To(Succeed())
		o := NewOp(ctx, "incr", "u:n")
		Expect(s.Exec(ctx, o)).To(Succeed())
		GinkgoWriter.Printf("read timeout during the set-up: %v\n", o.Err)
		Expect(o.Outcome()).To(Equal(NotRun))
		Expect(srv.Resume()).To(Succeed())
		Consistently(func() string { return ran("incr") }).WithTimeout(time.Second).Should(Equal("never"))
	})

	// Issue 41 item 3 (the gap issue 39 item 4 left): a call queued behind
	// an inline one goes through a flusher, on a connection of the
	// library's own, whose writes are counted as the inline lane's: before,
	// it went through go-redis's pool and came back unknown, though nothing
	// of it was written.
	It("reports a call queued behind an inline one, whose new connection's HELLO reply outlasts go-redis's read timeout, as not run", func() {
		s, _ := sender(&redis.Options{ReadTimeout: time.Second})
		Expect(srv.Pause()).To(Succeed())
		first := NewOp(ctx, "incr", "u:first")
		ended := make(chan error, 1)
		go func() { ended <- s.Exec(ctx, first) }()
		Eventually(s.one.inFlight).WithTimeout(10 * time.Second).Should(BeTrue())
		o := NewOp(ctx, "incr", "u:n") // queued: the first is in flight inline
		Expect(s.Exec(ctx, o)).To(Succeed())
		GinkgoWriter.Printf("queued behind an inline call: %v\n", o.Err)
		Expect(o.Outcome()).To(Equal(NotRun))
		Eventually(ended).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(first.Outcome()).To(Equal(NotRun))
		Expect(srv.Resume()).To(Succeed())
		Consistently(func() string { return ran("incr") }).WithTimeout(time.Second).Should(Equal("never"))
		// The next calls go out and run once each.
		o = NewOp(ctx, "incr", "u:n")
		Expect(s.Exec(ctx, o)).To(Succeed())
		Expect(o.V).To(Equal(int64(1)))
	})

	// The review of issue 41 item 3: a queued call whose caller's ctx ends
	// while its flusher's new connection's HELLO is unanswered was left
	// abandoned (ErrUnknownOutcome to rlock), though none of it was
	// written: its caller withdraws it now, as not run, and the flusher,
	// once the HELLO is answered, writes nothing of it.
	It("reports a queued call cut by its ctx's end while its flusher's new connection's HELLO is unanswered as not run", func() {
		s, _ := sender(&redis.Options{ReadTimeout: 20 * time.Second})
		Expect(srv.Pause()).To(Succeed())
		// Flusher 1's lone op is cut later.
		zctx, zcancel := context.WithCancel(ctx)
		defer zcancel()
		first, firstEnded, z := busyLanes(s, zctx)
		flusherLane := s.one.more[0]
		// Two calls queue, and go as one batch (not cut by a caller's
		// ctx) once flusher 1 is free.
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cut, other := NewOp(cctx, "incr", "u:cut"), NewOp(ctx, "incr", "u:other")
		cutEnded, otherEnded := make(chan error, 1), make(chan error, 1)
		go func() { cutEnded <- s.Exec(cctx, cut) }()
		go func() { otherEnded <- s.Exec(ctx, other) }()
		Eventually(s.one.queued).WithTimeout(10 * time.Second).Should(Equal(2))
		zcancel()
		Eventually(z.Done()).WithTimeout(10 * time.Second).Should(BeClosed())
		Expect(z.Outcome()).To(Equal(NotRun))
		Eventually(s.one.queued).WithTimeout(10*time.Second).Should(BeZero(), "flusher 1 took the batch")
		Eventually(func() uint32 { return dialed(flusherLane) }).WithTimeout(10*time.Second).
			Should(Equal(uint32(1)), "flusher 1 dialed anew for the batch; its HELLO waits for the stopped server")
		cancel()
		var err error
		Eventually(cutEnded).WithTimeout(10 * time.Second).Should(Receive(&err))
		GinkgoWriter.Printf("cut in a batch during its HELLO: Exec %v, op error %v\n", err, cut.Err)
		Expect(err).NotTo(HaveOccurred(), "the caller is told the outcome: nothing to settle")
		Expect(cut.Outcome()).To(Equal(NotRun))
		Expect(errors.Is(cut.Err, context.Canceled)).To(BeTrue(), "the reason: %v", cut.Err)
		Expect(srv.Resume()).To(Succeed())
		Eventually(firstEnded).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(first.Outcome()).To(Equal(Replied))
		Eventually(otherEnded).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(other.Outcome()).To(Equal(Replied))
		Expect(other.V).To(Equal(int64(1)))
		Consistently(func() string { return ran("incr") }).WithTimeout(time.Second).Should(HavePrefix("cmdstat_incr:calls=1,"),
			"the batch was written without the cut call")
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
		defer admin.Close()
		Expect(admin.Exists(ctx, "u:cut").Val()).To(BeZero())
	})

	It("reports a call cut while it waits in the queue as not run", func() {
		s, _ := sender(&redis.Options{ReadTimeout: 20 * time.Second})
		Expect(srv.Pause()).To(Succeed())
		_, firstEnded, z := busyLanes(s, ctx)
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		o := NewOp(cctx, "incr", "u:n")
		Expect(s.Exec(cctx, o)).To(Succeed(), "the caller is told the outcome: nothing to settle")
		Expect(o.Outcome()).To(Equal(NotRun))
		Expect(errors.Is(o.Err, context.DeadlineExceeded)).To(BeTrue(), "the reason: %v", o.Err)
		Expect(srv.Resume()).To(Succeed())
		Eventually(firstEnded).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Eventually(z.Done()).WithTimeout(10 * time.Second).Should(BeClosed())
		Consistently(func() string { return ran("incr") }).WithTimeout(time.Second).Should(Equal("never"))
	})

	It("writes a batch whose op was withdrawn during its new connection's HELLO again without that op", func() {
		s, _ := sender(&redis.Options{ReadTimeout: 20 * time.Second})
		Expect(srv.Pause()).To(Succeed())
		gone, kept := NewOp(ctx, "incr", "u:gone"), NewOp(ctx, "incr", "u:kept")
		lane := s.one.more[0]
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			var buf sendBuf
			Expect(s.one.sendBatch(&buf, lane, []*Op{gone, kept})).To(BeNil())
		}()
		Eventually(func() uint32 { return dialed(lane) }).WithTimeout(10*time.Second).
			Should(Equal(uint32(1)), "the flusher dialed its lane's connection; its HELLO waits for the stopped server")
		Expect(gone.withdraw(context.Canceled)).To(BeTrue(), "not taken: its HELLO is unanswered")
		Expect(srv.Resume()).To(Succeed())
		Eventually(sent).WithTimeout(10 * time.Second).Should(BeClosed())
		Expect(kept.Outcome()).To(Equal(Replied))
		Expect(kept.V).To(Equal(int64(1)))
		Expect(gone.Outcome()).To(Equal(NotRun))
		Consistently(func() string { return ran("incr") }).WithTimeout(time.Second).Should(HavePrefix("cmdstat_incr:calls=1,"))
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
		defer admin.Close()
		Expect(admin.Exists(ctx, "u:gone").Val()).To(BeZero())
	})

	It("refuses a write on the kept connection whose claim says no, writing nothing and keeping the connection", func() {
		s, _ := sender(&redis.Options{})
		for range 2 { // the lane keeps its connection
			Expect(s.Exec(ctx, NewOp(ctx, "get", "u:k"))).To(Succeed())
		}
		lane := s.one.lane
		cmd, _ := AppendCommand(nil, []any{"incr", "u:n"})
		Expect(lane.Begin(ctx, false, false)).To(BeTrue())
		lane.Claim(func() bool { return false })
		_, err, handled := lane.Do(ctx, cmd, ReplyComplete)
		lane.End(err != nil)
		Expect(handled).To(BeTrue())
		Expect(err).To(MatchError(inline.ErrWithdrawn))
		Expect(lane.Refused()).To(BeTrue())
		Expect(lane.Written()).To(BeZero())
		Expect(lane.Begin(ctx, false, false)).To(BeTrue())
		raw, err, handled := lane.Do(ctx, cmd, ReplyComplete)
		lane.End(err != nil)
		Expect(handled).To(BeTrue(), "the connection is still kept")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(Equal(":1\r\n"), "incr ran once, now")
		Expect(ran("incr")).To(HavePrefix("cmdstat_incr:calls=1,"))
	})

	It("reports a call on the kept connection whose reply outlasts go-redis's read timeout as unknown (it was written)", func() {
		s, _ := sender(&redis.Options{ReadTimeout: 500 * time.Millisecond})
		for range 2 { // the second goes the direct path
			Expect(s.Exec(ctx, NewOp(ctx, "get", "u:k"))).To(Succeed())
		}
		Expect(srv.Pause()).To(Succeed())
		o := NewOp(ctx, "incr", "u:n")
		Expect(s.Exec(ctx, o)).To(Succeed())
		Expect(o.Outcome()).To(Equal(Unknown))
		Expect(srv.Resume()).To(Succeed())
		Eventually(func() string { return ran("incr") }).WithTimeout(5*time.Second).Should(HavePrefix("cmdstat_incr:calls=1,"),
			"it was written: it ran once the server went on")
	})

	It("reports a call cut part way through its write as unknown", func() {
		s, _ := sender(&redis.Options{ReadTimeout: 20 * time.Second, WriteTimeout: 20 * time.Second})
		for range 2 { // the lane keeps its connection
			Expect(s.Exec(ctx, NewOp(ctx, "get", "u:k"))).To(Succeed())
		}
		Expect(srv.Pause()).To(Succeed())
		// More than the socket buffers of both ends hold (they do not grow
		// while the server reads nothing): the write blocks part way. The
		// cut comes 5 s after the call began: building a command this
		// large took more than a second on a loaded machine.
		big := strings.Repeat("x", 16<<20)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		o := NewOp(cctx, "set", "u:big", big)
		start := time.Now()
		err := s.Exec(cctx, o)
		GinkgoWriter.Printf("cut part way after %v: %v\n", time.Since(start), o.Err)
		_, abandoned := Abandoned(err)
		Expect(abandoned).To(BeTrue(), "Exec: %v (op error %v)", err, o.Err)
		Expect(o.Outcome()).To(Equal(Unknown))
		Expect(srv.Resume()).To(Succeed())
		o = NewOp(ctx, "get", "u:k")
		Expect(s.Exec(ctx, o)).To(Succeed())
		Expect(o.Outcome()).To(Equal(Replied))
	})
})

// dialed returns how many connections lane's go-redis client holds, in its
// pool and its pipelines' pool (go-redis 9.23 keeps one of each).
func dialed(lane *inline.Lane) uint32 {
	st := lane.Client().PoolStats()
	n := st.TotalConns
	if st.PipelineStats != nil {
		n += st.PipelineStats.TotalConns
	}
	return n
}

// queued returns how many ops wait in b's queue.
func (b *batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// busyLanes makes both lanes of s's batcher busy while its server is
// stopped: flusher 0's with an inline GET (first, whose Exec's result
// firstEnded receives), flusher 1's with z, a lone GET of SubmitAll's
// under zctx; it returns once both wait for their new connection's HELLO.
func busyLanes(s *Sender, zctx context.Context) (first *Op, firstEnded chan error, z *Op) {
	GinkgoHelper()
	ctx := context.WithoutCancel(zctx)
	first = NewOp(ctx, "get", "u:first")
	firstEnded = make(chan error, 1)
	go func() { firstEnded <- s.Exec(ctx, first) }()
	Eventually(s.one.inFlight).WithTimeout(10 * time.Second).Should(BeTrue())
	z = NewOp(zctx, "get", "u:z")
	s.SubmitAll([]*Op{z})
	Eventually(func() uint32 { return dialed(s.one.more[0]) }).WithTimeout(10 * time.Second).Should(Equal(uint32(1)))
	return first, firstEnded, z
}
