package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// holdDialer dials TCP connections whose writes it can hold back, as a slow
// network would: once armed, the first write holding a script call
// (EVALSHA) is taken whole, reported written, and kept until release,
// which puts it on the wire. A held connection's Close waits for its
// release, so the bytes are still on their way when the Client has given
// the call up and settled it.
type holdDialer struct {
	armed chan struct{} // one token: hold the next script call
	held  chan *heldConn
}

func newHoldDialer() *holdDialer {
	return &holdDialer{armed: make(chan struct{}, 1), held: make(chan *heldConn, 1)}
}

func (d *holdDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &heldConn{TCPConn: c.(*net.TCPConn), d: d}, nil
}

// arm holds the next script call written on any of the dialer's
// connections.
func (d *holdDialer) arm() { d.armed <- struct{}{} }

// heldConn is a *net.TCPConn (its SyscallConn included: the lane's direct
// path and go-redis's health check peek at the socket) whose one write
// may be held.
type heldConn struct {
	*net.TCPConn
	d *holdDialer

	mu       sync.Mutex
	bytes    []byte // held, not yet written
	holding  bool
	closeDue bool // Close came while holding
}

func (c *heldConn) Write(p []byte) (int, error) {
	if strings.Contains(strings.ToLower(string(p)), "evalsha") {
		select {
		case <-c.d.armed:
			c.mu.Lock()
			c.bytes, c.holding = append([]byte(nil), p...), true
			c.mu.Unlock()
			c.d.held <- c
			return len(p), nil
		default:
		}
	}
	return c.TCPConn.Write(p)
}

func (c *heldConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding {
		c.closeDue = true
		return nil
	}
	return c.TCPConn.Close()
}

// release writes the held bytes, and closes the connection if the Client
// closed it meanwhile; it returns the write's error (a connection the
// server closed may fail it, or take the bytes and reset later).
func (c *heldConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.TCPConn.Write(c.bytes)
	c.holding = false
	if c.closeDue {
		time.Sleep(50 * time.Millisecond) // the bytes leave before the FIN
		_ = c.TCPConn.Close()
	}
	return err
}

// Issue 41, item 2: a call whose reply was lost never takes effect after
// its settle, fenced one of two ways. With FenceAuto, an acquire or
// release on a connection the Client can close on the server reads no
// cancel floor, and its settle first closes that connection (CLIENT KILL);
// when the ACL refuses CLIENT, or with FenceFloor, every call reads the
// floor, which the settle raises. Each spec holds the lost call's bytes
// back (a slow network) until after the settle, then lets them go: the
// call must not run.
var _ = Describe("issue 41: a lost call is fenced", Label("fault", "slow"), func() {
	const readTimeout = time.Second
	var (
		ctx context.Context
		srv *redistest.Server
		raw *redis.Client
	)
	BeforeEach(func() {
		before := gleak.Goroutines()
		DeferCleanup(func() {
			Eventually(gleak.Goroutines).WithTimeout(15 * time.Second).ShouldNot(gleak.HaveLeaked(before))
		})
		ctx = context.Background()
		var err error
		srv, err = redistest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		raw = redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
		DeferCleanup(raw.Close)
		Expect(raw.Do(ctx, "acl", "setuser", "noclient", "on", ">pw", "~*", "&*", "+@all", "-client").Err()).To(Succeed())
	})

	// calls returns how many times the server ran cmd (INFO commandstats;
	// commands inside scripts count).
	calls := func(cmd string) int {
		GinkgoHelper()
		info, err := raw.Info(ctx, "commandstats").Result()
		Expect(err).NotTo(HaveOccurred())
		var n int
		if i := strings.Index(info, "cmdstat_"+cmd+":calls="); i >= 0 {
			_, _ = fmt.Sscanf(info[i+len("cmdstat_"+cmd+":calls="):], "%d", &n)
		}
		return n
	}

	type mode struct {
		user   string // "" the default user, else an ACL user without CLIENT
		fence  rlock.LostCallFence
		floors int // the floor reads (HGET) of one uncontended acquire and release
	}
	// client returns a Client in mode m dialing through d, on a lock that
	// has been taken and released once (the lane keeps its connection,
	// and the server has the scripts), and checks that pair's floor reads.
	client := func(m mode, d *holdDialer, name string) (*rlock.Client, rlock.Locker) {
		GinkgoHelper()
		ro := &redis.Options{Addr: srv.Addr, Dialer: d.dial, MaxRetries: -1, ReadTimeout: readTimeout, DisableIdentity: true}
		if m.user != "" {
			ro.Username, ro.Password = m.user, "pw"
		}
		c, _ := spectest.ClientWith(ro, rlock.WithLostCallFence(m.fence))
		l := c.NewLock(name)
		w := ctxowner.New(ctx)
		Expect(l.TryLock(w, 0, 0)).To(BeTrue())
		Expect(l.Unlock(w)).To(Succeed())
		before := calls("hget")
		Expect(l.TryLock(w, 0, 0)).To(BeTrue())
		Expect(l.Unlock(w)).To(Succeed())
		Expect(calls("hget")-before).To(Equal(m.floors), "floor reads of an uncontended acquire and release")
		return c, l
	}

	DescribeTable("an acquire whose reply was lost does not take the lock when its bytes arrive after the settle",
		func(m mode) {
			d := newHoldDialer()
			name := spectest.UniqueName("fence-acq")
			_, l := client(m, d, name)
			owner := ctxowner.New(ctx)
			d.arm()
			ok, err := l.TryLock(owner, 0, 20*time.Second)
			Expect(err).To(HaveOccurred(), "the reply was held back: the acquire's outcome is unknown")
			Expect(ok).To(BeFalse())
			var hc *heldConn
			Eventually(d.held).Should(Receive(&hc))
			// HoldCount waits for the settle in flight, then reads.
			Expect(l.HoldCount(owner)).To(Equal(0))
			GinkgoWriter.Printf("late write: %v\n", hc.release())
			Consistently(func() int64 { return raw.Exists(ctx, name).Val() }).WithTimeout(time.Second).
				Should(BeZero(), "the lost acquire ran after its settle")
			other := ctxowner.New(ctx)
			Expect(l.TryLock(other, 0, 0)).To(BeTrue(), "another owner takes the lock")
			Expect(l.Unlock(other)).To(Succeed())
		},
		Entry("by CLIENT KILL (FenceAuto)", mode{fence: rlock.FenceAuto, floors: 0}),
		Entry("by the cancel floor when the ACL refuses CLIENT (FenceAuto)", mode{user: "noclient", fence: rlock.FenceAuto, floors: 2}),
		Entry("by the cancel floor (FenceFloor)", mode{fence: rlock.FenceFloor, floors: 2}),
	)

	DescribeTable("a release whose reply was lost does not drop a later hold when its bytes arrive after the settle",
		func(m mode) {
			d := newHoldDialer()
			name := spectest.UniqueName("fence-rel")
			c, l := client(m, d, name)
			owner := ctxowner.New(ctx)
			Expect(l.TryLock(owner, 0, 20*time.Second)).To(BeTrue())
			d.arm()
			err := l.Unlock(owner)
			var hc *heldConn
			Eventually(d.held).Should(Receive(&hc))
			// The settle carried the release out (or Unlock says it may not
			// have): either way the owner holds nothing now.
			if err != nil {
				Expect(errors.Is(err, rlock.ErrUnknownOutcome)).To(BeTrue(), "%v", err)
			}
			Expect(l.HoldCount(owner)).To(Equal(0))
			Expect(raw.Exists(ctx, name).Val()).To(BeZero())
			// The owner takes the lock again; then the lost release arrives.
			Expect(l.TryLock(owner, 0, 20*time.Second)).To(BeTrue())
			GinkgoWriter.Printf("late write: %v\n", hc.release())
			field := c.ID() + ":" + ctxowner.Of(owner)
			Consistently(func() string { return raw.HGet(ctx, name, field).Val() }).WithTimeout(time.Second).
				Should(Equal("1"), "the lost release ran after its settle and dropped the owner's new hold")
			Expect(l.Unlock(owner)).To(Succeed())
		},
		Entry("by CLIENT KILL (FenceAuto)", mode{fence: rlock.FenceAuto, floors: 0}),
		Entry("by the cancel floor when the ACL refuses CLIENT (FenceAuto)", mode{user: "noclient", fence: rlock.FenceAuto, floors: 2}),
		Entry("by the cancel floor (FenceFloor)", mode{fence: rlock.FenceFloor, floors: 2}),
	)
})

var _ = Describe("WithLostCallFence", func() {
	It("refuses a mode it does not know with ErrInvalidArgument", func() {
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		DeferCleanup(rdb.Close)
		_, err := rlock.NewClient(rdb, rlock.WithLostCallFence(rlock.LostCallFence(99)))
		Expect(errors.Is(err, rlock.ErrInvalidArgument)).To(BeTrue(), "%v", err)
	})
})
