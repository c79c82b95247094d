package main_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	"github.com/onsi/gomega/gleak"

	cli "github.com/goredisson/goredisson/cmd/rlockctl"
	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
	"github.com/redis/go-redis/v9"
)

// rlockctl is driven as a user drives it, through its arguments, output and
// exit codes, against a throwaway redis-server. Most specs run it in their
// own process (rlockctl: its run function with buffers for stdout and
// stderr); those that need it in a process of its own (process, start: a
// command run under a lock, signals, its pid, an environment of its own)
// run the test binary as rlockctl (export_test.go), not a build of it.

func TestRlockctl(t *testing.T) {
	suite.Run(t, "rlockctl")
}

var srv *rlocktest.Server

var _ = BeforeSuite(func() {
	srv = rlocktest.StartForSpec()
	// rlockctl's default address, in this process and the processes of
	// start.
	was, had := os.LookupEnv("REDIS_ADDR")
	Expect(os.Setenv("REDIS_ADDR", srv.Addr())).To(Succeed())
	DeferCleanup(func() {
		if had {
			_ = os.Setenv("REDIS_ADDR", was)
		} else {
			_ = os.Unsetenv("REDIS_ADDR")
		}
	})
	// What rlockctl starts in this process ends with its run (as a
	// process, its exit ended all of it). go-redis v9.23 leaves a circuit
	// breaker's cleanup loop of its maintenance notifications behind some
	// closed clients, the specs' own too: not rlockctl's.
	before := gleak.Goroutines()
	DeferCleanup(func() {
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before,
			gleak.IgnoringTopFunction("github.com/redis/go-redis/v9/maintnotifications.(*CircuitBreakerManager).cleanupLoop")))
	})
})

// session is one run of rlockctl: in this process, or in a process of its
// own (the embedded gexec.Session, nil in this process).
type session struct {
	*gexec.Session
	Out, Err *gbytes.Buffer

	done chan struct{} // closed when the run in this process returned
	code int
}

// ExitCode is the exit code, -1 while rlockctl runs (gexec.Exit matches
// it).
func (s *session) ExitCode() int {
	if s.Session != nil {
		return s.Session.ExitCode()
	}
	select {
	case <-s.done:
		return s.code
	default:
		return -1
	}
}

// rlockctl runs rlockctl with args in this process (its default --redis is
// the suite's server) and returns the session; a run still going at
// cleanup is stopped as a signal would (its context is cancelled).
func rlockctl(args ...string) *session {
	GinkgoHelper()
	s := &session{Out: gbytes.NewBuffer(), Err: gbytes.NewBuffer(), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer GinkgoRecover()
		defer close(s.done)
		s.code = cli.Run(ctx, args, nil, io.MultiWriter(s.Out, GinkgoWriter), io.MultiWriter(s.Err, GinkgoWriter))
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(s.done).WithTimeout(10 * time.Second).Should(BeClosed())
	})
	return s
}

// start runs rlockctl with args in a process of its own (the test binary
// as rlockctl), with env added to this process's environment, and returns
// the session; the process is killed at cleanup.
func start(env []string, args ...string) *session {
	GinkgoHelper()
	self, err := os.Executable()
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), cli.AsRlockctl+"=1")
	cmd.Env = append(cmd.Env, env...)
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { s.Kill().Wait(5 * time.Second) })
	return &session{Session: s, Out: s.Out, Err: s.Err}
}

// process runs rlockctl with args in a process of its own.
func process(args ...string) *session { GinkgoHelper(); return start(nil, args...) }

// exits waits for the session to end with code.
func exits(s *session, code int) {
	GinkgoHelper()
	Eventually(s).WithTimeout(time.Minute).Should(gexec.Exit(code), "stdout:\n%s\nstderr:\n%s", s.Out.Contents(), s.Err.Contents())
}

// newClient returns a goredisson Client on the suite's server, closed at
// cleanup.
func newClient(opts ...rlock.Option) *rlock.Client {
	GinkgoHelper()
	rdb := srv.Client()
	DeferCleanup(rdb.Close)
	c, err := rlock.NewClient(rdb, opts...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return c
}

func lockName() string {
	return "cli:" + strconv.Itoa(int(CurrentSpecReport().LeafNodeLocation.LineNumber))
}

var _ = Describe("rlockctl", func() {
	ctx := context.Background()

	Describe("demo", func() {
		It("runs the flash sale against a given Redis: oversell without a lock, exact stock with goredisson", Label("slow"), func() {
			s := rlockctl("demo", "--redis", srv.Addr())
			exits(s, 0)
			out := string(s.Out.Contents())
			Expect(out).To(ContainSubstring("Redis: redis at " + srv.Addr()))
			Expect(out).To(MatchRegexp(`goredisson\s+400\s+50/50\s+0\s+0\s+0\s+\d+(µs|\.\d+ms)`))
			Expect(out).To(MatchRegexp(`Without a lock: [1-9]\d* coupon\(s\) oversold`))
			Expect(out).To(ContainSubstring("[##############################] 400/400 requests"))
		})

		It("starts a private redis-server when no address is given", Label("slow"), func() {
			s := start([]string{"REDIS_ADDR="}, "demo", "--buyers", "60", "--coupons", "20")
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(MatchRegexp(`Redis: private redis-server on 127\.0\.0\.1:\d+ \(pid \d+\)`))
			Expect(string(s.Out.Contents())).To(MatchRegexp(`goredisson\s+120\s+20/20\s+0\s+0\s+0`))
		})

		It("falls back to an in-process Redis when redis-server is not installed", func() {
			empty := GinkgoT().TempDir()
			s := start([]string{"PATH=" + empty, "REDIS_SERVER="}, "demo", "--buyers", "60", "--coupons", "20")
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(ContainSubstring("in-process Redis (miniredis)"))
			Expect(string(s.Out.Contents())).To(MatchRegexp(`goredisson\s+120\s+20/20\s+0\s+0\s+0`))
		})

		It("falls back to an in-process Redis, and says why, when REDIS_SERVER points nowhere", func() {
			s := start([]string{"REDIS_SERVER=/nonexistent/redis-server"}, "demo", "--buyers", "60", "--coupons", "20")
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(ContainSubstring("in-process Redis (miniredis) on 127.0.0.1:"))
			Expect(string(s.Out.Contents())).To(ContainSubstring("REDIS_SERVER=/nonexistent/redis-server is not an executable file"))
			Expect(string(s.Out.Contents())).To(MatchRegexp(`goredisson\s+120\s+20/20\s+0\s+0\s+0`))
		})

		It("falls back to an in-process Redis, and says why, when REDIS_SERVER does not start", Label("slow"), func() {
			s := start([]string{"REDIS_SERVER=/bin/false"}, "demo", "--buyers", "60", "--coupons", "20")
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(MatchRegexp(`in-process Redis \(miniredis\) on 127\.0\.0\.1:\d+: /bin/false did not start \(`))
			Expect(string(s.Out.Contents())).To(MatchRegexp(`goredisson\s+120\s+20/20\s+0\s+0\s+0`))
		})
	})

	Describe("status", func() {
		It("shows holder fields, hold counts, TTL and kind, as text and JSON", func() {
			name := lockName()
			c := newClient()
			owner := ctxowner.WithID(ctx, "job-7")
			lock := c.NewLock(name)
			Expect(lock.Lock(owner)).To(Succeed())
			Expect(lock.Lock(owner)).To(Succeed())
			DeferCleanup(func() { _, _ = lock.ForceUnlock(ctx) })

			s := rlockctl("status", name)
			exits(s, 0)
			out := string(s.Out.Contents())
			Expect(out).To(MatchRegexp(`kind:\s+reentrant`))
			Expect(out).To(MatchRegexp(`state:\s+locked`))
			Expect(out).To(MatchRegexp(`holder:\s+` + c.ID() + `:ctx:job-7\s+holds 2`))
			Expect(out).To(MatchRegexp(`ttl:\s+(29|30)\.?\d*s`))

			s = rlockctl("status", "--json", name)
			exits(s, 0)
			var got struct {
				Kind    string `json:"kind"`
				Locked  bool   `json:"locked"`
				Holders []struct {
					Field string `json:"field"`
					Count int    `json:"count"`
				} `json:"holders"`
				TTL int64 `json:"ttl_ms"`
			}
			Expect(json.Unmarshal(s.Out.Contents(), &got)).To(Succeed())
			Expect(got.Kind).To(Equal("reentrant"))
			Expect(got.Locked).To(BeTrue())
			Expect(got.Holders).To(HaveLen(1))
			Expect(got.Holders[0].Count).To(Equal(2))
			Expect(got.TTL).To(BeNumerically("~", 30000, 2000))
		})

		It("shows a fair lock's queue and a read-write lock's mode and readers", func() {
			name := lockName()
			c := newClient()
			rw := c.NewReadWriteLock(name)
			Expect(rw.ReadLock().Lock(ctxowner.WithID(ctx, "r1"))).To(Succeed())
			Expect(rw.ReadLock().Lock(ctxowner.WithID(ctx, "r2"))).To(Succeed())
			DeferCleanup(func() { _, _ = rw.ReadLock().ForceUnlock(ctx) })
			s := rlockctl("status", name)
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(And(MatchRegexp(`kind:\s+read-write`), MatchRegexp(`state:\s+locked \(read\)`),
				ContainSubstring(":ctx:r1"), ContainSubstring(":ctx:r2")))

			fair := c.NewFairLock(name + ":fair")
			Expect(fair.Lock(ctxowner.WithID(ctx, "first"))).To(Succeed())
			DeferCleanup(func() { _, _ = fair.ForceUnlock(ctx) })
			wctx, cancel := context.WithCancel(ctxowner.WithID(ctx, "second"))
			DeferCleanup(cancel)
			go func() { defer GinkgoRecover(); _ = fair.Lock(wctx) }()
			Eventually(func() string {
				s := rlockctl("status", name+":fair")
				exits(s, 0)
				return string(s.Out.Contents())
			}).Should(And(MatchRegexp(`kind:\s+fair`), MatchRegexp(`queue:\s+1 waiting: `+c.ID()+`:ctx:second`), MatchRegexp(`subscribers:\s+1 `)))
		})

		It("says not locked, kind none, for a lock without a key, and foreign for a key that is not a lock", func() {
			name := lockName()
			s := rlockctl("status", name)
			exits(s, 0)
			out := string(s.Out.Contents())
			Expect(out).To(And(MatchRegexp(`kind:\s+none \(no key "`+name+`" in Redis\)`), MatchRegexp(`state:\s+not locked`), MatchRegexp(`ttl:\s+-`)))
			Expect(out).NotTo(ContainSubstring("unlocked"))
			s = rlockctl("status", "--json", name)
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(And(ContainSubstring(`"kind": "none"`), ContainSubstring(`"locked": false`)))
			rdb := srv.Client()
			DeferCleanup(rdb.Close)
			Expect(rdb.Set(ctx, "cli:plain", "v", 0).Err()).To(Succeed())
			s = rlockctl("status", "cli:plain")
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(And(MatchRegexp(`kind:\s+foreign`), MatchRegexp(`state:\s+not a lock\n`),
				ContainSubstring("the key is a Redis string: not a lock: a string that is not an integer counter")))
		})
	})

	It("prints only kinds that docs/cli.md lists for status", func() {
		readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
		Expect(err).NotTo(HaveOccurred())
		i := strings.Index(string(readme), "- `status` reads any lock or synchronizer of the family")
		Expect(i).To(BeNumerically(">=", 0), "docs/cli.md describes status")
		section := string(readme)[i:]
		section = section[:strings.Index(section, "\n- ")]
		for _, kind := range []string{"reentrant", "fenced", "fair", "read-write", "faster-multilock", "semaphore", "permit-semaphore",
			"latch", "semaphore-or-latch", "foreign", "none"} {
			Expect(section).To(ContainSubstring("`"+kind+"`"), kind)
		}
		Expect(section).To(ContainSubstring("`not locked`"))
		Expect(section).To(ContainSubstring("`not a lock`"))
	})

	Describe("unlock", func() {
		It("deletes a lock whoever holds it with --force, and says when there was none", func() {
			name := lockName()
			c := newClient()
			lock := c.NewLock(name)
			Expect(lock.Lock(ctx)).To(Succeed())
			s := rlockctl("unlock", name)
			exits(s, 2)
			Expect(string(s.Err.Contents())).To(ContainSubstring("confirm with --force"))
			Expect(lock).To(rlocktest.BeLocked())

			s = rlockctl("unlock", "--force", name)
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(ContainSubstring("unlocked " + name + " (reentrant, 1 holder(s))"))
			Expect(lock).NotTo(rlocktest.BeLocked())
			Expect(lock.Unlock(ctx)).To(MatchError(rlock.ErrNotHeld))

			s = rlockctl("unlock", "--force", name)
			exits(s, 1)
			Expect(string(s.Err.Contents())).To(ContainSubstring(name + " was not locked"))
		})
	})

	Describe("run", func() {
		It("runs the command holding the lock, returns its exit code and releases the lock", func() {
			name := lockName()
			c := newClient()
			s := process("run", "--lock", name, "--", "sh", "-c", "echo inside; sleep 0.3; exit 3")
			Eventually(s.Out).Should(gbytes.Say("inside"))
			Expect(c.NewLock(name)).To(rlocktest.BeLocked())
			Expect(c.NewLock(name)).To(rlocktest.HaveTTLWithin(30 * time.Second))
			exits(s, 3)
			Expect(c.NewLock(name)).NotTo(rlocktest.BeLocked())
		})

		It("excludes another run of the same lock: --wait 0 gives up with 75, a waiting one runs after", Label("slow"), func() {
			name := lockName()
			dir := GinkgoT().TempDir()
			log, goOn := filepath.Join(dir, "log"), filepath.Join(dir, "go-on")
			// Each command holds the lock until the spec creates go-on (no
			// sleep that a loaded machine could outlast).
			step := `echo "start $0" >> ` + log + `; while [ ! -e ` + goOn + ` ]; do sleep 0.01; done; echo "end $0" >> ` + log
			first := process("run", "--lock", name, "--", "sh", "-c", step, "one")
			Eventually(func() (string, error) { b, err := os.ReadFile(log); return string(b), err }).Should(Equal("start one\n"))
			busy := process("run", "--lock", name, "--wait", "0", "--", "true")
			exits(busy, 75)
			Expect(string(busy.Err.Contents())).To(ContainSubstring("lock " + name + " not acquired: another owner holds it (--wait 0: one attempt)"))
			second := process("run", "--lock", name, "--wait", "10", "--", "sh", "-c", step, "two") // seconds, as flock -w
			Consistently(func() (string, error) { b, err := os.ReadFile(log); return string(b), err }).
				WithTimeout(300*time.Millisecond).Should(Equal("start one\n"), "the second run waits")
			Expect(os.WriteFile(goOn, nil, 0o600)).To(Succeed())
			exits(first, 0)
			exits(second, 0)
			b, err := os.ReadFile(log)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(b)).To(Equal("start one\nend one\nstart two\nend two\n"))
		})

		It("waits until the lock is acquired without --wait, as flock(1) does, and says so in --help", Label("slow"), func() {
			name := lockName()
			c := newClient()
			holder := ctxowner.WithID(ctx, "holder")
			lock := c.NewLock(name)
			Expect(lock.Lock(holder)).To(Succeed())
			DeferCleanup(func() { _, _ = lock.ForceUnlock(ctx) })
			s := process("run", "--lock", name, "--", "echo", "ran")
			Consistently(s).WithTimeout(1500 * time.Millisecond).ShouldNot(gexec.Exit())
			Expect(lock.Unlock(holder)).To(Succeed())
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(Equal("ran\n"))

			help := rlockctl("run", "--help")
			exits(help, 0)
			Expect(string(help.Out.Contents())).To(And(MatchRegexp(`0 makes one attempt; forever waits until the lock is acquired \(default forever\)`),
				ContainSubstring("As flock(1) does, run waits until the lock is acquired")))
		})

		It("waits up to a duration given with a unit, then exits 75", Label("slow"), func() {
			name := lockName()
			c := newClient()
			lock := c.NewLock(name)
			Expect(lock.Lock(ctx)).To(Succeed())
			DeferCleanup(func() { _, _ = lock.ForceUnlock(ctx) })
			began := time.Now()
			s := process("run", "--lock", name, "--wait", "1s", "--", "true")
			exits(s, 75)
			Expect(time.Since(began)).To(BeNumerically(">=", time.Second))
			Expect(string(s.Err.Contents())).To(ContainSubstring("lock " + name + " not acquired within --wait 1s"))
		})

		It("passes signals to the command and returns its status", func() {
			name := lockName()
			s := process("run", "--lock", name, "--", "sh", "-c", `trap 'echo got TERM; exit 5' TERM; echo ready; while true; do sleep 0.05; done`)
			Eventually(s.Out).Should(gbytes.Say("ready"))
			s.Signal(syscall.SIGTERM)
			exits(s, 5)
			Expect(string(s.Out.Contents())).To(ContainSubstring("got TERM"))
			Expect(newClient().NewLock(name)).NotTo(rlocktest.BeLocked())
		})

		It("releases the lock and exits 128+9 when the command is killed", func() {
			name := lockName()
			s := process("run", "--lock", name, "--", "sh", "-c", `echo $$; exec sleep 30`)
			Eventually(s.Out).Should(gbytes.Say(`\d+`))
			pid, err := strconv.Atoi(strings.TrimSpace(string(s.Out.Contents())))
			Expect(err).NotTo(HaveOccurred())
			lock := newClient().NewLock(name)
			Expect(lock).To(rlocktest.BeLocked())
			Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
			exits(s, 137)
			Expect(lock).NotTo(rlocktest.BeLocked())
		})

		It("signals a command that outlives a force-unlock and exits 77", Label("slow"), func() {
			name := lockName()
			s := process("run", "--lock", name, "--watchdog", "1s", "--", "sh", "-c",
				`trap 'echo got TERM; exit 0' TERM; echo ready; while true; do sleep 0.05; done`)
			Eventually(s.Out).Should(gbytes.Say("ready"))
			u := rlockctl("unlock", "--force", name)
			exits(u, 0)
			exits(s, 77)
			Expect(string(s.Out.Contents())).To(ContainSubstring("got TERM"))
			Expect(string(s.Err.Contents())).To(And(ContainSubstring("lock "+name+" lost"), ContainSubstring("stopped after the lock was lost")))
		})

		It("kills a command that ignores SIGTERM after --kill-after when the lock is lost", Label("slow"), func() {
			name := lockName()
			s := process("run", "--lock", name, "--lease", "500ms", "--kill-after", "200ms", "--", "sh", "-c",
				`trap '' TERM; echo ready; while true; do sleep 0.05; done`)
			Eventually(s.Out).Should(gbytes.Say("ready"))
			exits(s, 77)
			Expect(string(s.Err.Contents())).To(ContainSubstring("fixed lease of 500ms ran out"))
		})

		It("says 127 for a command that does not exist and gives the lock back", func() {
			name := lockName()
			s := process("run", "--lock", name, "--", "/nonexistent/cmd")
			exits(s, 127)
			Expect(newClient().NewLock(name)).NotTo(rlocktest.BeLocked())
		})
	})

	Describe("watch", func() {
		// notifications turns the server's keyspace notifications on for a
		// spec (as --notify does) and back to what they were after it.
		notifications := func(on bool) {
			rdb := srv.Client()
			DeferCleanup(rdb.Close)
			was, err := rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { rdb.ConfigSet(ctx, "notify-keyspace-events", was["notify-keyspace-events"]) })
			flags := ""
			if on {
				flags = "Khgx"
			}
			Expect(rdb.ConfigSet(ctx, "notify-keyspace-events", flags).Err()).To(Succeed())
		}

		It("prints the state first, then lock, unlock and message events as they happen", func() {
			notifications(false)
			name := lockName()
			s := rlockctl("watch", "--count", "3", name)
			Eventually(s.Out).Should(gbytes.Say("watching " + name + ".*keyspace notifications off"))
			Eventually(s.Out).Should(gbytes.Say(`\nstate: not locked\n`))
			c := newClient()
			owner := ctxowner.WithID(ctx, "w1")
			lock := c.NewLock(name)
			Expect(lock.Lock(owner)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`\d\d:\d\d:\d\d\.\d{3} locked\s+by ` + c.ID() + `:ctx:w1 \(holds 1, ttl `))
			Expect(lock.Unlock(owner)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`message\s+redisson_lock__channel:\{` + name + `\} "0"`))
			Eventually(s.Out).Should(gbytes.Say(`unlocked\s+` + c.ID() + `:ctx:w1 no longer holds it: released by it or force-unlocked \(--notify tells which\)`))
			exits(s, 0)
		})

		It("prints a held lock's state first, and does not count it as an event", Label("slow"), func() {
			notifications(false)
			name := lockName()
			c := newClient()
			lock := c.NewLock(name)
			Expect(lock.Lock(ctxowner.WithID(ctx, "w2"))).To(Succeed())
			DeferCleanup(func() { _, _ = lock.ForceUnlock(ctx) })
			s := rlockctl("watch", "--count", "2", name) // the message and the unlock
			Eventually(s.Out).Should(gbytes.Say(`\nstate: locked by ` + c.ID() + `:ctx:w2 \(holds 1\); reentrant lock, ttl \d`))
			Consistently(s).WithTimeout(time.Second).ShouldNot(gexec.Exit())
			Expect(lock.ForceUnlock(ctx)).To(BeTrue())
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(MatchRegexp(`unlocked\s+` + c.ID() + `:ctx:w2 no longer holds it: released by it or force-unlocked`))
			Expect(string(s.Out.Contents())).NotTo(ContainSubstring("unlocked by"))
		})

		It("tells a holder's unlock from a force unlock with keyspace notifications", func() {
			notifications(true)
			name := lockName()
			s := rlockctl("watch", "--count", "5", name)
			Eventually(s.Out).Should(gbytes.Say(`keyspace notifications on \(`))
			Eventually(s.Out).Should(gbytes.Say(`state: not locked\n`))
			c := newClient()
			owner := ctxowner.WithID(ctx, "w3")
			lock := c.NewLock(name)
			Expect(lock.Lock(owner)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`locked\s+by ` + c.ID() + `:ctx:w3`))
			Expect(lock.Unlock(owner)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`unlocked\s+by ` + c.ID() + `:ctx:w3\n`))
			Expect(lock.Lock(owner)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`locked\s+by ` + c.ID() + `:ctx:w3`))
			u := rlockctl("unlock", "--force", name)
			exits(u, 0)
			Eventually(s.Out).Should(gbytes.Say(`force-unlocked\s+deleted while ` + c.ID() + `:ctx:w3 held it\n`))
			exits(s, 0)
		})

		It("names the holder's unlock even when it reads the lock after events that came before the unlock", func() {
			// A loaded watcher reads the lock only after Redis ran more
			// commands: here a PEXPIRE (as the watchdog's) and the
			// holder's unlock in one MULTI, so every event is queued
			// before the watcher reads. The vanishing must be told by
			// the unlock's own event (hincrby), not the expire's.
			notifications(true)
			name := lockName()
			s := rlockctl("watch", "--count", "3", name)
			Eventually(s.Out).Should(gbytes.Say(`state: not locked\n`))
			c := newClient()
			owner := ctxowner.WithID(ctx, "w4")
			Expect(c.NewLock(name).Lock(owner)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`locked\s+by ` + c.ID() + `:ctx:w4`))
			field := c.ID() + ":ctx:w4"
			rdb := srv.Client()
			DeferCleanup(rdb.Close)
			_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.PExpire(ctx, name, time.Minute)
				p.HIncrBy(ctx, name, field, -1)
				p.Del(ctx, name)
				p.Publish(ctx, "redisson_lock__channel:{"+name+"}", "0")
				return nil
			})
			Expect(err).NotTo(HaveOccurred())
			Eventually(s.Out).Should(gbytes.Say(`unlocked\s+by ` + field + `\n`))
			exits(s, 0)
		})

		It("sees holder changes with keyspace notifications (--notify), re-entries and expiries included", Label("slow"), func() {
			notifications(false)
			name := lockName()
			s := rlockctl("watch", "--notify", "--count", "3", name)
			Eventually(s.Out).Should(gbytes.Say(`keyspace notifications on \(`))
			// Lock only once the watcher has read the state: a lock taken
			// before that shows as its state, not as the first of the three
			// changes it counts.
			Eventually(s.Out).Should(gbytes.Say(`state: not locked\n`))
			c := newClient()
			lock := c.NewLock(name)
			Expect(lock.LockLease(ctx, time.Second)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`locked\s+by`))
			Expect(lock.LockLease(ctx, time.Second)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`reentered\s+by .* \(holds 2\)`))
			Eventually(s.Out).WithTimeout(5 * time.Second).Should(gbytes.Say(`expired\s+lease of .* ran out`))
			exits(s, 0)
		})

		It("hears Redisson's unlock channels of a read-write lock and of a name with its own hash tag", func() {
			notifications(false)
			name := "{" + lockName() + "}:rw"
			s := rlockctl("watch", name) // killed at cleanup
			Eventually(s.Out).Should(gbytes.Say(`state: not locked\n`))
			c := newClient()
			read := c.NewReadWriteLock(name).ReadLock()
			Expect(read.Lock(ctx)).To(Succeed())
			Expect(read.Unlock(ctx)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`message\s+redisson_rwlock:` + regexp.QuoteMeta(name) + ` "`))
			lock := c.NewLock(name)
			Expect(lock.Lock(ctx)).To(Succeed())
			Expect(lock.Unlock(ctx)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`message\s+redisson_lock__channel:` + regexp.QuoteMeta(name) + ` "0"`))
		})

		It("says an expired lease ran out without keyspace notifications", Label("slow"), func() {
			notifications(false)
			name := lockName()
			s := rlockctl("watch", "--count", "2", name)
			Eventually(s.Out).Should(gbytes.Say(`state: not locked\n`))
			Expect(newClient().NewLock(name).LockLease(ctx, time.Second)).To(Succeed())
			Eventually(s.Out).Should(gbytes.Say(`locked\s+by`))
			Eventually(s.Out).WithTimeout(5 * time.Second).Should(gbytes.Say(`expired\s+lease of .* ran out`))
			exits(s, 0)
		})
	})

	Describe("bad input", func() {
		DescribeTable("exits with a clear message and code",
			func(code int, want string, args ...string) {
				s := rlockctl(args...)
				exits(s, code)
				Expect(string(s.Err.Contents()) + string(s.Out.Contents())).To(ContainSubstring(want))
			},
			Entry("unknown subcommand", 2, `unknown subcommand "frob"`, "frob"),
			Entry("no subcommand", 2, "Usage: rlockctl <subcommand>"),
			Entry("status without a name", 2, "missing lock name", "status"),
			Entry("run without --lock", 2, "missing --lock NAME", "run", "--", "true"),
			Entry("run without a command", 2, "missing command", "run", "--lock", "x"),
			Entry("negative lease", 2, "--lease must be >= 0", "run", "--lock", "x", "--lease", "-1s", "--", "true"),
			Entry("unknown flag", 2, "flag provided but not defined: -bogus", "status", "--bogus", "x"),
			Entry("unreachable Redis", Label("slow"), 69, "cannot reach Redis at 127.0.0.1:1", "status", "--redis", "127.0.0.1:1", "x"),
			Entry("address without a port", 2, `bad --redis address "not-an-address" (missing port in address): want host:port`, "watch", "--redis", "not-an-address", "x"),
			Entry("address with a bad port", 2, `bad --redis address "localhost:http" (port "http" is not a number from 1 to 65535)`, "status", "--redis", "localhost:http", "x"),
			Entry("a URL nobody answers", Label("slow"), 69, "cannot reach Redis at redis://127.0.0.1:1", "run", "--redis", "redis://127.0.0.1:1", "--lock", "x", "--", "true"),
			Entry("bad address for the demo", 2, `bad --redis address "::1"`, "demo", "--redis", "::1"),
			Entry("unreachable Redis for run", Label("slow"), 69, "cannot reach Redis", "run", "--redis", "127.0.0.1:1", "--lock", "x", "--", "true"),
			Entry("negative wait", 2, `invalid value "-1" for flag -wait: negative: use 0 for one attempt, forever to wait until acquired`, "run", "--lock", "x", "--wait", "-1", "--", "true"),
			Entry("wait below 1ms", 2, "500µs is below 1ms: use 0 for one attempt", "run", "--lock", "x", "--wait", "500us", "--", "true"),
			Entry("wait that is no duration", 2, "want a duration (10s, 1m30s), seconds (2.5), 0 or forever", "run", "--lock", "x", "--wait", "soon", "--", "true"),
			Entry("lease below 1ms", 2, "--lease 1ns is below Redis's 1ms resolution (0: watchdog)", "run", "--lock", "x", "--lease", "1ns", "--", "true"),
			Entry("watchdog too short", 2, "rlockctl run: watchdog timeout 1ms: must be at least 1s\n", "run", "--lock", "x", "--watchdog", "1ms", "--", "true"),
			Entry("watchdog too short, Redis unreachable", 2, "watchdog timeout 1ms", "run", "--redis", "127.0.0.1:1", "--lock", "x", "--watchdog", "1ms", "--", "true"),
		)

		It("never shows the user internal names in errors", Label("slow"), func() {
			runs := [][]string{
				{"run", "--lock", "x", "--watchdog", "1ms", "--", "true"},
				{"run", "--lock", "x", "--lease", "1ns", "--", "true"},
				{"run", "--redis", "127.0.0.1:1", "--lock", "x", "--", "true"},
				{"status", "--redis", "not-an-address", "x"},
			}
			for _, args := range runs {
				s := rlockctl(args...)
				Eventually(s).WithTimeout(time.Minute).Should(gexec.Exit())
				Expect(s.ExitCode()).NotTo(BeZero(), "%q", args)
				Expect(string(s.Err.Contents())).NotTo(Or(ContainSubstring("goredisson:"), ContainSubstring("newclient"),
					ContainSubstring("trylock"), ContainSubstring("redistest"), ContainSubstring("invalid argument")), "%q", args)
			}
			s := start([]string{"REDIS_SERVER=/nonexistent/redis-server"}, "demo", "--buyers", "4", "--coupons", "2")
			exits(s, 0)
			Expect(string(s.Out.Contents()) + string(s.Err.Contents())).NotTo(ContainSubstring("redistest"))
		})

		It("documents every subcommand with --help (exit 0)", func() {
			for _, sub := range []string{"demo", "list", "run", "status", "unlock", "watch"} {
				s := rlockctl(sub, "--help")
				exits(s, 0)
				Expect(string(s.Out.Contents())).To(ContainSubstring("Usage: rlockctl "+sub), sub)
			}
			s := rlockctl("--help")
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(ContainSubstring("Exit codes"))
		})
	})

	Describe("dependencies", func() {
		It("adds no module to a program that imports only rlock", Label("slow"), func() {
			out := GinkgoT().TempDir()
			build := exec.Command("go", "build", "-o", filepath.Join(out, "rlockonly"), "./testdata/rlockonly")
			build.Stderr = GinkgoWriter
			Expect(build.Run()).To(Succeed())
			deps, err := exec.Command("go", "version", "-m", filepath.Join(out, "rlockonly")).Output()
			Expect(err).NotTo(HaveOccurred())
			var modules []string
			for _, line := range strings.Split(string(deps), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "dep" {
					modules = append(modules, f[1])
				}
			}
			Expect(modules).To(ContainElement("github.com/redis/go-redis/v9"))
			Expect(modules).NotTo(ContainElement(Or(ContainSubstring("miniredis"), ContainSubstring("gopher-lua"), ContainSubstring("ginkgo"), ContainSubstring("gomega"))))
		})
	})
})
