package transport

import (
	"context"
	"crypto/sha1"
	"fmt"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// On Sentinel the lone batcher has an inline lane to the primary the
// Sentinels name (sentinel.go): it follows a switch as go-redis's pool
// does, and Close cuts a call in flight on it.
var _ = Describe("The inline lane on Sentinel", Label("sentinel"), func() {
	var (
		topo   *redistest.Sentinels
		before []gleak.Goroutine
	)
	start := func(opts ...redistest.Option) {
		var err error
		topo, err = redistest.StartSentinels(1, 3, opts...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(topo.Close()).To(Succeed()) })
		before = gleak.Goroutines()
	}
	failoverClient := func(readTimeout time.Duration) *redis.Client {
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: topo.MasterName, SentinelAddrs: topo.SentinelAddrs(), ReadTimeout: readTimeout,
		})
		DeferCleanup(func() { _ = rdb.Close() })
		return rdb
	}
	sender := func(rdb *redis.Client) (*Sender, chan struct{}) {
		done := make(chan struct{})
		s := NewSender(testConfig(done), rdb)
		DeferCleanup(func() {
			select {
			case <-done:
			default:
				close(done)
				s.Shut()
			}
		})
		return s, done
	}
	primaryOf := func(s *Sender) func() string {
		return s.primaryAddr
	}
	// popInline sends BLPOP key on s and waits until it is in flight on
	// the lane.
	popInline := func(ctx context.Context, s *Sender, key string) (*Op, chan error) {
		Eventually(primaryOf(s)).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "the watch found the primary")
		pop := NewOp(ctx, "blpop", key, 20)
		popped := make(chan error, 1)
		go func() { popped <- s.Exec(ctx, pop) }()
		Eventually(s.one.inFlight).WithTimeout(10*time.Second).Should(BeTrue(), "the call is in flight on the lane")
		return pop, popped
	}

	It("sends an uncontended call inline, to the primary", func() {
		start()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rdb := failoverClient(0)
		s, _ := sender(rdb)
		Expect(rdb.Del(ctx, "sq").Err()).To(Succeed())
		pop, popped := popInline(ctx, s, "sq")
		Expect(primaryOf(s)()).To(Equal(topo.Primary.Addr))
		Expect(rdb.RPush(ctx, "sq", "x").Err()).To(Succeed())
		Eventually(popped).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(pop.Outcome()).To(Equal(Replied))
		Expect(pop.V).To(Equal([]any{"sq", "x"}))

		// A script replica sync follows still goes, with WAIT, through
		// the flusher: the primary has a replica.
		src := "return redis.call('set', KEYS[1], ARGV[1])"
		script := &Script{Name: "set", Src: src, SHA: fmt.Sprintf("%x", sha1.Sum([]byte(src))), Synced: true}
		script.ShaArg = script.SHA
		synced := NewScriptOp(ctx, script, []any{"sk"}, "v")
		Expect(s.Exec(ctx, synced)).To(Succeed())
		Expect(synced.V).To(Equal("OK"))
		Expect(synced.SyncWant).To(Equal(1), "WAIT for the replica")
		Expect(synced.Synced).To(BeEquivalentTo(1))
	})

	It("follows SENTINEL FAILOVER to the new primary, never taking a key on the old one, which stays a primary (split brain)", func() {
		// The old primary refuses to be made a replica (as when a
		// partition hides it from the Sentinels, not from this client):
		// a lane left on it would take locks there while go-redis's pool
		// takes them on the new one.
		start(redistest.WithArgs("--rename-command", "SLAVEOF", "", "--rename-command", "REPLICAOF", ""))
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		s1, _ := sender(failoverClient(0))
		s2, _ := sender(failoverClient(0))
		old := topo.Primary.Addr
		for _, s := range []*Sender{s1, s2} {
			Eventually(primaryOf(s)).WithTimeout(20 * time.Second).Should(Equal(old))
			Expect(s.Exec(ctx, NewOp(ctx, "ping"))).To(Succeed()) // a lane connection to the old primary
		}

		sc := redis.NewSentinelClient(&redis.Options{Addr: topo.Sentinels[0].Addr})
		defer sc.Close()
		Expect(sc.Failover(ctx, topo.MasterName).Err()).To(Succeed())
		var now string
		Eventually(func() string { now, _ = topo.CurrentPrimary(ctx); return now }).
			WithTimeout(30 * time.Second).ShouldNot(Equal(old))
		Eventually(primaryOf(s1)).WithTimeout(10 * time.Second).Should(Equal(now))
		Eventually(primaryOf(s2)).WithTimeout(10 * time.Second).Should(Equal(now))

		oldC := redis.NewClient(&redis.Options{Addr: old})
		defer oldC.Close()
		newC := redis.NewClient(&redis.Options{Addr: now})
		defer newC.Close()
		Expect(oldC.Do(ctx, "role").Val()).To(ContainElement("master"), "the old primary stays one")

		// On the lane, to the new primary: a BLPOP there is answered by a
		// push there (the old primary, not a replica of it, never sees it).
		pop, popped := popInline(ctx, s1, "fq")
		Expect(newC.RPush(ctx, "fq", "x").Err()).To(Succeed())
		Eventually(popped).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(pop.V).To(Equal([]any{"fq", "x"}))

		// Exclusion between the two: a key set NX by one is refused to
		// the other, and lives on the new primary only.
		for i := range 20 {
			a := NewOp(ctx, "set", "lk", "s1", "nx", "px", 30000)
			Expect(s1.Exec(ctx, a)).To(Succeed())
			Expect(a.V).To(Equal("OK"), "round %d", i)
			b := NewOp(ctx, "set", "lk", "s2", "nx", "px", 30000)
			Expect(s2.Exec(ctx, b)).To(Succeed())
			Expect(b.V).To(BeNil(), "round %d: the other sender is excluded", i)
			Expect(oldC.Exists(ctx, "lk").Val()).To(BeZero(), "round %d: nothing on the old primary", i)
			Expect(newC.Get(ctx, "lk").Val()).To(Equal("s1"))
			Expect(s1.Exec(ctx, NewOp(ctx, "del", "lk"))).To(Succeed())
		}
	})

	// With the watch stopped, the lane is left to its own checks.
	It("sends nothing on a lane whose dial reaches another server, and drops a lane answered READONLY", func() {
		start()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rdb := failoverClient(0)
		s, _ := sender(rdb)
		old := topo.Primary.Addr
		Eventually(s.primaryAddr).WithTimeout(20 * time.Second).Should(Equal(old))
		Expect(s.Exec(ctx, NewOp(ctx, "ping"))).To(Succeed()) // the lane's connection to the primary
		s.watch.close()

		// A lane made for the replica dials the primary (the failover
		// client's dialer asks the Sentinel): refused, the call goes
		// through the flusher.
		replica := topo.Replicas[0].Addr
		// A call made while the flusher still ends the last batch goes
		// through it and dials no lane: send until the lane's dial was
		// refused (a CI run failed once without the loop).
		Eventually(func() string {
			s.setPrimary(replica)
			moved := NewOp(ctx, "set", "mk", "v")
			Expect(s.Exec(ctx, moved)).To(Succeed())
			Expect(moved.V).To(Equal("OK"))
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.refused
		}).WithTimeout(10*time.Second).Should(Equal(replica), "the lane's dial reached the primary: refused")
		Expect(s.primaryAddr()).To(BeEmpty(), "the lane is dropped")
		s.setPrimary(replica)
		Expect(s.primaryAddr()).To(BeEmpty(), "no new lane for the address refused (a tunnel would refuse every one)")
		s.setPrimary(old)
		Expect(s.primaryAddr()).To(Equal(old))

		// The primary is made a replica by hand (a Sentinel's demotion
		// also kills its clients' connections; this one does not): the
		// lane, left on it, is answered READONLY (the reply is the
		// outcome, as on the flusher) and dropped.
		Expect(s.Exec(ctx, NewOp(ctx, "ping"))).To(Succeed())
		oldC := redis.NewClient(&redis.Options{Addr: old})
		DeferCleanup(oldC.Close) // after the REPLICAOF NO ONE below (clean-ups run last first)
		host, port, _ := net.SplitHostPort(replica)
		Expect(oldC.ReplicaOf(ctx, host, port).Err()).To(Succeed())
		DeferCleanup(func() { Expect(oldC.ReplicaOf(context.Background(), "no", "one").Err()).To(Succeed()) })
		// A call made while the flusher still ends the last batch goes
		// through it (also answered READONLY, by go-redis's pool): send
		// until one went on the lane.
		Eventually(func() string {
			ro := NewOp(ctx, "set", "rk", "v")
			Expect(s.Exec(ctx, ro)).To(Succeed())
			Expect(ro.V).To(BeAssignableToTypeOf(ReplyError("")))
			Expect(string(ro.V.(ReplyError))).To(HavePrefix("READONLY"))
			return s.primaryAddr()
		}).WithTimeout(10*time.Second).Should(BeEmpty(), "the lane is dropped")
	})

	It("makes a lane again for a refused address on the next +switch-master, or once the refusal expires", func() {
		// The watch can hear +switch-master before go-redis's failover
		// client knows of it: the lane for the new primary dials the old
		// one and is refused. A later switch (every Sentinel publishes
		// one) or the refusal's expiry lets the lane come back.
		start()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rdb := failoverClient(0)
		s, _ := sender(rdb)
		Eventually(s.primaryAddr).WithTimeout(20 * time.Second).Should(Equal(topo.Primary.Addr))
		s.watch.close()
		// close does not wait for the watch's goroutine, whose last act
		// is to drop the lane: once dropped, no ask of its can race ours.
		Eventually(s.primaryAddr).WithTimeout(10*time.Second).Should(BeEmpty(), "the watch has ended")
		replica := topo.Replicas[0].Addr
		refuse := func() {
			s.setPrimary(replica)
			// A call goes inline only while the flusher is idle (the
			// refused call before went through it): sent until one does.
			Eventually(func() string {
				Expect(s.Exec(ctx, NewOp(ctx, "set", "rk", "v"))).To(Succeed())
				return s.primaryAddr()
			}).WithTimeout(10*time.Second).Should(BeEmpty(), "refused: its dial reached the primary")
			s.setPrimary(replica)
			Expect(s.primaryAddr()).To(BeEmpty(), "still refused")
		}
		refuse()
		s.switched(replica)
		Expect(s.primaryAddr()).To(Equal(replica), "a +switch-master naming it again makes the lane again")

		refuse()
		s.mu.Lock()
		s.refusedAt = s.refusedAt.Add(-refuseFor) // as if refuseFor had passed
		s.mu.Unlock()
		s.setPrimary(replica)
		Expect(s.primaryAddr()).To(Equal(replica), "the refusal expired")
	})

	It("drops a lane whose script write is answered READONLY inside the script's error (Redis before 7)", func() {
		Expect(readOnly("READONLY You can't write against a read only replica.")).To(BeTrue())
		Expect(readOnly("ERR Error running script (call to f_0a2d1b5e): @user_script:1: @user_script: 1: " +
			"-READONLY You can't write against a read only replica. ")).To(BeTrue())
		Expect(readOnly("ERR Error running script (call to f_1): @user_script:1: "+
			"-READONLY You can't write against a read only slave. ")).To(BeTrue(), "Redis before 5")
		Expect(readOnly("ERR no such key READONLY x")).To(BeFalse(), "a user's words are not the code")
		Expect(readOnly("WRONGTYPE -READONLY")).To(BeFalse())
	})

	It("is cut by Close while a call is in flight on it, and leaves no goroutine", func() {
		start()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rdb := failoverClient(40 * time.Second) // the read timeout outlasts the BLPOP
		Expect(rdb.Del(ctx, "cq").Err()).To(Succeed())
		s, done := sender(rdb)
		_, popped := popInline(ctx, s, "cq")
		expectCutByClose(s, done, popped, rdb, "cq")
		Expect(rdb.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(20 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
})
