package goredisson_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/faultproxy"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

// Safety under faults: clients reach Redis through a fault-injecting relay
// (internal/testkit/faultproxy: latency, lost responses, connection resets,
// partitions), and lock holders run in other OS processes that are killed
// and paused. Run only these with: go test -run TestGoredisson -ginkgo.label-filter=fault .

// faultClient returns a goredisson Client whose go-redis client goes
// through the proxy with short I/O timeouts, and that go-redis client.
func faultClient(proxy *faultproxy.Proxy, opts ...rlock.Option) (*rlock.Client, *redis.Client) {
	GinkgoHelper()
	return spectest.ClientWith(&redis.Options{Addr: proxy.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 150 * time.Millisecond, WriteTimeout: 150 * time.Millisecond}, opts...)
}

// section is one critical section of a fenced-worker helper, from its log.
type section struct {
	pid         string
	token       int64
	enter, exit int64 // ns; exit 0: never left (killed inside)
	taken       bool  // its fenced write was taken
	killed      bool  // no exit line: killed inside (its write may have been taken)
}

func readSections(path string, killedAt map[string]int64) []section {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	byKey := map[string]*section{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 {
			continue // a line cut short by SIGKILL
		}
		token, _ := strconv.ParseInt(fs[2], 10, 64)
		ns, _ := strconv.ParseInt(fs[3], 10, 64)
		k := fs[1] + "/" + fs[2]
		switch fs[0] {
		case "enter":
			byKey[k] = &section{pid: fs[1], token: token, enter: ns}
			order = append(order, k)
		case "exit":
			if s := byKey[k]; s != nil && len(fs) == 5 {
				s.exit, s.taken = ns, fs[4] == "1"
			}
		}
	}
	var out []section
	for _, k := range order {
		s := *byKey[k]
		if s.exit == 0 {
			s.killed = true
			s.exit = killedAt[s.pid] // still inside when its process was killed
			if s.exit == 0 {
				s.exit = math.MaxInt64 // inside when the run ended
			}
		}
		out = append(out, s)
	}
	return out
}

// The lock model for porcupine: who holds the lock, and how often.
type lockState struct {
	holder string
	count  int
}

type lockInput struct {
	op    string // lock, trylock, unlock, settle (the give-back after an unknown acquire)
	owner string
}

// Outputs: "ok", "busy" (TryLock false), "notheld" (ErrNotHeld),
// "unknown" (an error: the call may or may not have taken effect) and
// "retried" (an unlock whose first attempts failed and whose last said
// ErrNotHeld: one of them may have released).
type lockOutput string

func acquireStep(s lockState, owner string) []any {
	switch s.holder {
	case "":
		return []any{lockState{owner, 1}}
	case owner:
		return []any{lockState{owner, s.count + 1}}
	}
	return nil
}

func releaseStep(s lockState) lockState {
	if s.count <= 1 {
		return lockState{}
	}
	return lockState{s.holder, s.count - 1}
}

// linearizeBudget bounds the linearizability check of one history.
const linearizeBudget = 4 * time.Minute

var lockModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{lockState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(lockState), input.(lockInput), output.(lockOutput)
		switch {
		case (in.op == "lock" || in.op == "trylock") && out == "ok":
			return acquireStep(s, in.owner)
		case in.op == "trylock" && out == "busy":
			if s.holder != "" && s.holder != in.owner {
				return []any{s}
			}
			return nil
		case (in.op == "lock" || in.op == "trylock") && out == "unknown":
			return append([]any{s}, acquireStep(s, in.owner)...)
		case in.op == "unlock" && out == "ok":
			if s.holder == in.owner {
				return []any{releaseStep(s)}
			}
			return nil
		case in.op == "unlock" && out == "notheld":
			if s.holder != in.owner {
				return []any{s}
			}
			return nil
		case (in.op == "unlock" && out == "retried") || in.op == "settle":
			if s.holder == in.owner {
				return []any{s, releaseStep(s)}
			}
			return []any{s}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(lockState) == b.(lockState) },
	DescribeOperation: func(input, output any) string {
		in := input.(lockInput)
		return fmt.Sprintf("%s(%s) -> %s", in.op, in.owner, output)
	},
}

// unlockUntilKnown unlocks for owner, trying again after errors until the
// answer is definite, and returns the history output: "ok", "notheld", or
// "retried" (ErrNotHeld after failed attempts that may have released).
func unlockUntilKnown(ctx context.Context, lock rlock.Locker, owner string) lockOutput {
	failed := false
	for {
		uctx, cancel := context.WithTimeout(ctxowner.WithID(ctx, owner), 500*time.Millisecond)
		err := lock.Unlock(uctx)
		cancel()
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, rlock.ErrNotHeld) && failed:
			return "retried"
		case errors.Is(err, rlock.ErrNotHeld):
			return "notheld"
		}
		failed = true
	}
}

var _ = Describe("Under faults", Label("fault"), func() {
	var (
		e   *spectest.Env
		ctx context.Context
	)
	BeforeEach(func() {
		e = spectest.NewEnv()
		ctx = context.Background()
	})

	It("keeps critical sections of processes apart through network faults, a SIGKILL and a pause past the lease, where the paused holder's late write is refused by its fencing token", func() {
		name := spectest.UniqueName("fault:fenced")
		proxy := spectest.StartProxy()
		log := filepath.Join(GinkgoT().TempDir(), "sections.log")
		env := []string{"HELPER_REDIS=" + proxy.Addr, "HELPER_STORE=" + spectest.Server().Addr, "HELPER_LOCK=" + name,
			"HELPER_WATCHDOG_MS=1000", "HELPER_HOLD_MS=30", "HELPER_LOG=" + log, "HELPER_IO_TIMEOUT_MS=200"}
		workers := []*spectest.HelperProc{spectest.StartHelper("fenced-worker", env...), spectest.StartHelper("fenced-worker", env...), spectest.StartHelper("fenced-worker", env...)}
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				b, _ := os.ReadFile(log)
				lines := strings.Split(string(b), "\n")
				GinkgoWriter.Printf("subscribers of %s: %d\n", spectest.LockChannel(name), e.NumSub(spectest.LockChannel(name)))
				for _, l := range strings.Split(e.Raw.ClientList(ctx).Val(), "\n") {
					if strings.Contains(l, "sub=1") {
						GinkgoWriter.Println("subscriber:", l)
					}
				}
				GinkgoWriter.Printf("proxy stats %+v\n", proxy.Stats())
				time.Sleep(500 * time.Millisecond)
				GinkgoWriter.Printf("worker pids %d %d %d; last log lines:\n%s\n", workers[0].Pid(), workers[1].Pid(), workers[2].Pid(),
					strings.Join(lines[max(0, len(lines)-15):], "\n"))
			}
		})
		pid := func(h *spectest.HelperProc) string { return strconv.Itoa(h.Pid()) }

		By("network faults: latency, lost responses, resets, a partition shorter than the lease")
		for range 3 {
			proxy.SetLatency(5 * time.Millisecond)
			time.Sleep(150 * time.Millisecond)
			proxy.SetLatency(0)
			proxy.ResetConnections()
			time.Sleep(100 * time.Millisecond)
			proxy.DropResponses(true)
			time.Sleep(80 * time.Millisecond)
			proxy.DropResponses(false)
			time.Sleep(100 * time.Millisecond)
			proxy.Partition(true)
			time.Sleep(150 * time.Millisecond)
			proxy.Partition(false)
			time.Sleep(100 * time.Millisecond)
		}

		By("a holder paused (SIGSTOP) for 2.5 leases")
		paused := workers[0]
		paused.WaitAcquired()
		paused.Signal(syscall.SIGSTOP)
		pausedAt := time.Now().UnixNano()
		time.Sleep(2500 * time.Millisecond)
		paused.Signal(syscall.SIGCONT)
		time.Sleep(300 * time.Millisecond)

		By("a holder killed (SIGKILL) inside its critical section")
		killed := workers[1]
		killed.WaitAcquired()
		killed.Kill()
		killedAt := map[string]int64{pid(killed): time.Now().UnixNano()}
		time.Sleep(2000 * time.Millisecond)
		for _, w := range []*spectest.HelperProc{workers[0], workers[2]} {
			w.Kill()
			killedAt[pid(w)] = time.Now().UnixNano()
		}

		sections := readSections(log, killedAt)
		Expect(len(sections)).To(BeNumerically(">", 20), "the workers made progress through the faults")
		var tookOver []section
		for i, a := range sections {
			for _, b := range sections[i+1:] {
				if b.enter >= a.exit {
					continue
				}
				// Overlap: allowed only when a's holder was paused past its
				// lease, b entered with a newer token and a's write was refused.
				Expect(a.pid).To(Equal(pid(paused)), "overlap of %+v and %+v", a, b)
				Expect(a.enter).To(BeNumerically("<", pausedAt))
				Expect(b.token).To(BeNumerically(">", a.token))
				Expect(a.taken).To(BeFalse(), "the stale holder's write was refused")
				tookOver = append(tookOver, b)
			}
		}
		Expect(tookOver).NotTo(BeEmpty(), "others took the lock while the holder was paused")
		GinkgoWriter.Printf("%d sections, %d entered while a paused holder thought it held the lock\n", len(sections), len(tookOver))

		taken, cut := 0, 0
		for _, s := range sections {
			if s.taken {
				taken++
			}
			if s.killed {
				cut++
			}
		}
		// A worker killed between its write and its exit line wrote without
		// saying so: at most one such write per killed section.
		Expect(e.Raw.LLen(ctx, "fence:data").Val()).To(BeNumerically(">=", taken), "the storage holds every write it took")
		Expect(e.Raw.LLen(ctx, "fence:data").Val()).To(BeNumerically("<=", taken+cut), "and no other write but those of sections killed before their exit line")
		Expect(e.Raw.Del(ctx, "fence:data", "fence:last").Err()).To(Succeed())
		Eventually(func() int64 { return e.Raw.Exists(ctx, name).Val() }).WithTimeout(2*time.Second).Should(BeZero(), "the dead holders' lease ran out")
		e.ExpectNothingLeft(name, "redisson_lock_token:{"+name+"}")
	})

	It("frees a lock whose acquire reply was lost within one lease, and the next owner gets it", func() {
		name := spectest.UniqueName("fault:lostreply")
		proxy := spectest.StartProxy()
		a, _ := faultClient(proxy, rlock.WithWatchdogTimeout(time.Second))
		b := e.Client()
		lockA, lockB := a.NewLock(name), b.NewLock(name)
		// Warm up: a connection in the pool and the script in Redis's cache,
		// so that what is lost below is the acquire's reply, not a HELLO
		// or a NOSCRIPT answer.
		Expect(lockA.Lock(ctx)).To(Succeed())
		Expect(lockA.Unlock(ctx)).To(Succeed())

		Expect(e.Raw.ConfigResetStat(ctx).Err()).To(Succeed())
		proxy.DropResponses(true)
		start := time.Now()
		actx, cancel := context.WithTimeout(ctxowner.New(ctx), 400*time.Millisecond)
		err := lockA.Lock(actx)
		cancel()
		Expect(err).To(HaveOccurred(), "the reply never came")
		Expect(e.CommandCalls()["hincrby"]).To(BeNumerically(">=", 1), "but the acquire script ran and took the lock")
		time.Sleep(200 * time.Millisecond)
		proxy.DropResponses(false)

		owner := ctxowner.New(ctx)
		Expect(lockB.Lock(owner)).To(Succeed())
		took := time.Since(start)
		GinkgoWriter.Printf("next owner got the lock %v after the lost acquire\n", took)
		Expect(took).To(BeNumerically("<", 1500*time.Millisecond), "within one lease (1 s) and a little")
		Expect(lockB).To(rlocktest.BeHeldBy(owner))
		Expect(lockB.Unlock(owner)).To(Succeed())
		Expect(a.Close()).To(Succeed())
		Expect(b.Close()).To(Succeed())
		e.ExpectNothingLeft(name)
	})

	It("wakes waiters promptly after their pub/sub connection is reset, before or after the unlock", func() {
		name := spectest.UniqueName("fault:psreset")
		proxy := spectest.StartProxy()
		holder := e.Client()
		waiterClient, _ := faultClient(proxy)
		for _, unlockFirst := range []bool{true, false} {
			hctx := ctxowner.New(ctx)
			Expect(holder.NewLock(name).Lock(hctx)).To(Succeed())
			got := make(chan time.Time, 1)
			done := make(chan struct{}) // the waiter has unlocked
			go func() {
				defer GinkgoRecover()
				defer close(done)
				wctx, cancel := context.WithTimeout(ctxowner.New(ctx), 20*time.Second)
				defer cancel()
				Expect(waiterClient.NewLock(name).Lock(wctx)).To(Succeed())
				got <- time.Now()
				Expect(waiterClient.NewLock(name).Unlock(wctx)).To(Succeed())
			}()
			Eventually(func() int64 { return e.NumSub(spectest.LockChannel(name)) }).Should(Equal(int64(1)), "the waiter is subscribed")
			var released time.Time
			if unlockFirst {
				proxy.Partition(true) // the unlock message cannot reach the waiter
				Expect(holder.NewLock(name).Unlock(hctx)).To(Succeed())
				released = time.Now()
				proxy.Partition(false)
				proxy.ResetConnections()
			} else {
				proxy.ResetConnections()
				time.Sleep(50 * time.Millisecond)
				Expect(holder.NewLock(name).Unlock(hctx)).To(Succeed())
				released = time.Now()
			}
			var at time.Time
			Eventually(got).WithTimeout(5 * time.Second).Should(Receive(&at))
			GinkgoWriter.Printf("unlock before reset %v: waiter got the lock %v after the unlock\n", unlockFirst, at.Sub(released))
			Expect(at.Sub(released)).To(BeNumerically("<", 2*time.Second), "not a whole TTL (30 s)")
			// Its Unlock must end before the next round (or Close) starts.
			Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed())
		}
		Expect(waiterClient.Close()).To(Succeed())
		Expect(holder.Close()).To(Succeed())
		e.ExpectNothingLeft(name)
	})

	Describe("linearizability (porcupine)", func() {
		It("tells an illegal history from a legal one", func() {
			model := lockModel.ToModel()
			both := []porcupine.Operation{
				{ClientId: 0, Input: lockInput{"lock", "a"}, Call: 0, Output: lockOutput("ok"), Return: 10},
				{ClientId: 1, Input: lockInput{"lock", "b"}, Call: 20, Output: lockOutput("ok"), Return: 30},
			}
			Expect(porcupine.CheckOperations(model, both)).To(BeFalse(), "two holders at once")
			handoff := append(slices.Clone(both[:1]),
				porcupine.Operation{ClientId: 0, Input: lockInput{"unlock", "a"}, Call: 11, Output: lockOutput("ok"), Return: 25},
				both[1])
			Expect(porcupine.CheckOperations(model, handoff)).To(BeTrue())
			unknown := []porcupine.Operation{
				{ClientId: 0, Input: lockInput{"lock", "a"}, Call: 0, Output: lockOutput("unknown"), Return: math.MaxInt64},
				{ClientId: 0, Input: lockInput{"settle", "a"}, Call: 0, Output: lockOutput("ok"), Return: math.MaxInt64},
				{ClientId: 1, Input: lockInput{"trylock", "b"}, Call: 5, Output: lockOutput("busy"), Return: 6},
				{ClientId: 1, Input: lockInput{"lock", "b"}, Call: 7, Output: lockOutput("ok"), Return: 9},
			}
			Expect(porcupine.CheckOperations(model, unknown)).To(BeTrue(), "an unknown acquire, given back later")
			Expect(porcupine.CheckOperations(model, unknown[2:])).To(BeFalse(), "busy with nobody holding")
		})

		It("finds lock, trylock and unlock histories linearizable under lost replies, latency and resets", func() {
			name := spectest.UniqueName("fault:linear")
			proxy := spectest.StartProxy()
			const clients = 4
			var (
				mu      sync.Mutex
				ops     []porcupine.Operation
				unknown int
				begin   = time.Now()
			)
			now := func() int64 { return int64(time.Since(begin)) }
			record := func(id int, in lockInput, out lockOutput, call, ret int64) {
				mu.Lock()
				defer mu.Unlock()
				ops = append(ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
				if out == "unknown" {
					unknown++
					ops = append(ops, porcupine.Operation{ClientId: id, Input: lockInput{"settle", in.owner}, Call: call, Output: lockOutput("ok"), Return: math.MaxInt64})
				}
			}
			lockers := make([]*rlock.Lock, clients)
			var clientsOf []*rlock.Client
			for i := range lockers {
				c, _ := faultClient(proxy, rlock.WithWatchdogTimeout(3*time.Second))
				lockers[i] = c.NewLock(name)
				clientsOf = append(clientsOf, c)
			}
			stop := make(chan struct{})
			var faults sync.WaitGroup
			faults.Add(1)
			go func() {
				defer faults.Done()
				r := rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), 7))
				// One outage longer than every call's 500 ms, whatever the
				// random ones below turn out to be: the calls in flight
				// then end with an unknown outcome.
				time.Sleep(time.Second)
				proxy.DropResponses(true)
				time.Sleep(700 * time.Millisecond)
				proxy.DropResponses(false)
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Duration(100+r.IntN(150)) * time.Millisecond):
					}
					switch r.IntN(3) {
					case 0: // some outlast the calls' 500 ms: outcomes unknown
						proxy.DropResponses(true)
						time.Sleep(time.Duration(60+r.IntN(700)) * time.Millisecond)
						proxy.DropResponses(false)
					case 1:
						proxy.ResetConnections()
					case 2:
						proxy.SetLatency(20 * time.Millisecond)
						time.Sleep(80 * time.Millisecond)
						proxy.SetLatency(0)
					}
				}
			}()
			var wg sync.WaitGroup
			for id, lock := range lockers {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), uint64(id)))
					gen := 0
					owner := func() string { return fmt.Sprintf("c%d-%d", id, gen) }
					holding := false
					for time.Since(begin) < 3*time.Second {
						octx, cancel := context.WithTimeout(ctxowner.WithID(ctx, owner()), 500*time.Millisecond)
						call := now()
						switch {
						case holding:
							time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
							record(id, lockInput{"unlock", owner()}, unlockUntilKnown(ctx, lock, owner()), call, now())
							holding = false
						case r.IntN(2) == 0:
							in := lockInput{"lock", owner()}
							if err := lock.Lock(octx); err != nil {
								record(id, in, "unknown", call, math.MaxInt64)
								gen++ // a fresh owner: the old one's fate is unknown
							} else {
								record(id, in, "ok", call, now())
								holding = true
							}
						default:
							in := lockInput{"trylock", owner()}
							ok, err := lock.TryLock(octx, 0, 0)
							switch {
							case err != nil:
								record(id, in, "unknown", call, math.MaxInt64)
								gen++
							case ok:
								record(id, in, "ok", call, now())
								holding = true
							default:
								record(id, in, "busy", call, now())
							}
						}
						cancel()
					}
					if holding { // give it back, recorded like any unlock
						call := now()
						record(id, lockInput{"unlock", owner()}, unlockUntilKnown(ctx, lock, owner()), call, now())
					}
				}()
			}
			spectest.WaitAll(&wg)
			close(stop)
			faults.Wait()
			for _, c := range clientsOf {
				Expect(c.Close()).To(Succeed())
			}
			e.ExpectNothingLeft(name)

			// A history is usually checked in well under a second, but
			// some take the search much longer: one of 453 operations (13
			// of unknown outcome) needed 28 s beside a CI run and ran out
			// of a 1-minute budget in a busier one (Unknown, not Illegal:
			// replayed with more time, it is linearizable).
			checked := time.Now()
			res, info := porcupine.CheckOperationsVerbose(lockModel.ToModel(), ops, linearizeBudget)
			if res != porcupine.Ok {
				path := filepath.Join(os.TempDir(), "goredisson-linearizability.html")
				_ = porcupine.VisualizePath(lockModel.ToModel(), info, path)
				why := "not linearizable"
				if res == porcupine.Unknown {
					why = fmt.Sprintf("not decided within %v (the checker ran out of time: no violation found)", linearizeBudget)
				}
				Fail(fmt.Sprintf("history of %d operations (%d of unknown outcome) is %s: %s; visualization in %s", len(ops), unknown, res, why, path))
			}
			GinkgoWriter.Printf("checked in %v\n", time.Since(checked).Round(time.Millisecond))
			GinkgoWriter.Printf("%d operations (%d with unknown outcome), faults %+v: linearizable\n", len(ops), unknown, proxy.Stats())
			Expect(unknown).To(BeNumerically(">", 0), "the faults produced calls of unknown outcome")
			Expect(proxy.Stats().DroppedBytes).To(BeNumerically(">", 0))
		})
	})
})
