package transport

import (
	"context"
	"fmt"
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

// Issue 41 item 3: a connection the library keeps (the inline lane's, and
// each flusher's) is checked by a peek only once it sat idle
// inline.PeekIdle. A server restarted within that time is met by the next
// call on it: that call fails (no reply read: its outcome is unknown, or
// not run) or succeeds, never reads a reply that is not its own, never
// hangs; the calls after it go out on new connections and succeed.
var _ = Describe("A server restart between calls", Label("slow"), func() {
	var (
		srv *redistest.Server
		s   *Sender
		ctx context.Context
	)
	BeforeEach(func() {
		var err error
		srv, err = redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 5 * time.Second, MaxRetries: -1})
		DeferCleanup(rdb.Close)
		before := gleak.Goroutines()
		done := make(chan struct{})
		s = NewSender(testConfig(done), rdb)
		DeferCleanup(func() {
			close(done)
			s.Shut()
			expectNoLeaks(before)
		})
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
		DeferCleanup(cancel)
	})

	// echo sends ECHO token and reports whether its reply came back, or
	// what went wrong: another reply than its own token, a call that did
	// not end within 15 s (go-redis's read timeout is 5 s), or one that
	// failed with no error.
	echo := func(token string) (ok bool, wrong string) {
		o := NewOp(ctx, "echo", token)
		ended := make(chan error, 1)
		go func() { ended <- s.Exec(ctx, o) }()
		select {
		case err := <-ended:
			if err != nil {
				return false, fmt.Sprintf("Exec %q: %v", token, err)
			}
		case <-time.After(15 * time.Second):
			return false, fmt.Sprintf("ECHO %q hung", token)
		}
		switch o.Outcome() {
		case Replied:
			if o.V != token {
				return false, fmt.Sprintf("ECHO %q read %#v", token, o.V)
			}
			return true, ""
		case Unknown:
			return false, "" // o.Err says why: no reply was read
		}
		if o.Err == nil && o.V == nil {
			return false, fmt.Sprintf("ECHO %q not run, and nothing says why", token)
		}
		return false, ""
	}

	It("is met cleanly by the next inline call on the kept connection", func() {
		failed := 0
		for round := range 5 {
			for i := range 3 { // the direct path, on the kept connection
				ok, wrong := echo(fmt.Sprintf("r%d-before-%d", round, i))
				Expect(wrong).To(BeEmpty())
				Expect(ok).To(BeTrue())
			}
			start := time.Now()
			Expect(srv.Restart()).To(Succeed())
			ok, wrong := echo(fmt.Sprintf("r%d-first", round))
			GinkgoWriter.Printf("round %d: restarted in %v; the first call after it replied: %v\n", round, time.Since(start), ok)
			Expect(wrong).To(BeEmpty())
			if !ok {
				failed++
			}
			for i := range 3 {
				ok, wrong := echo(fmt.Sprintf("r%d-after-%d", round, i))
				Expect(wrong).To(BeEmpty())
				Expect(ok).To(BeTrue(), "the calls after it go out on a new connection")
			}
		}
		GinkgoWriter.Printf("%d of 5 first calls after a restart failed (no reply)\n", failed)
	})

	It("is met cleanly by the batches in flight and those after them", func() {
		const callers = 16
		var (
			stop    atomic.Bool
			mu      sync.Mutex
			wrongs  []string
			fails   int
			lastOK  [callers]atomic.Int64 // the last reply's time (UnixNano)
			running sync.WaitGroup
		)
		for c := range callers {
			running.Add(1)
			go func() {
				defer running.Done()
				for n := 0; !stop.Load(); n++ {
					ok, wrong := echo("c" + strconv.Itoa(c) + "-" + strconv.Itoa(n))
					mu.Lock()
					if wrong != "" {
						wrongs = append(wrongs, wrong)
					}
					if !ok {
						fails++
					}
					mu.Unlock()
					if ok {
						lastOK[c].Store(time.Now().UnixNano())
					}
				}
			}()
		}
		DeferCleanup(func() { stop.Store(true); running.Wait() })
		for round := range 3 {
			Eventually(func() bool { // the callers' calls go through both flushers
				return s.one.flushedOnLanes() == maxBatches
			}).WithTimeout(10 * time.Second).Should(BeTrue())
			Expect(srv.Restart()).To(Succeed())
			restarted := time.Now().UnixNano()
			Eventually(func() int {
				n := 0
				for c := range lastOK {
					if lastOK[c].Load() > restarted {
						n++
					}
				}
				return n
			}).WithTimeout(20*time.Second).Should(Equal(callers), "every caller gets replies again after restart %d", round)
		}
		stop.Store(true)
		running.Wait()
		mu.Lock()
		defer mu.Unlock()
		GinkgoWriter.Printf("%d calls failed (no reply) over 3 restarts\n", fails)
		Expect(wrongs).To(BeEmpty())
	})
})

// flushedOnLanes returns how many of b's flushers sent a batch since the
// last call.
func (b *batcher) flushedOnLanes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for i := range b.fl {
		if b.fl[i].batches > 0 {
			n++
		}
		b.fl[i].batches = 0
	}
	return n
}
