package interop_test

// Redisson's synchronizers (RSemaphore, RPermitExpirableSemaphore,
// RCountDownLatch) are not in the lock probe. testdata/SyncProbe.java, this
// suite's own program, drives them through Redisson's public API with the
// probe's line protocol: it is compiled at suite start against the lock
// probe's class path (read from its run-probe.sh) and run next to it.
//
// goSync answers the same command language with goredisson's synchronizers,
// so that one scenario runs with either client on either side.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/rlock"
)

var (
	// syncJava is Redisson's synchronizers through SyncProbe (nil when the
	// synchronizer probe specs do not run).
	syncJava *probe
	// syncSkip says why the synchronizer probe specs are skipped.
	syncSkip string
)

var (
	classPathRE = regexp.MustCompile(`-cp\s+(?:"([^"]+)"|(\S+))`)
	versionRE   = regexp.MustCompile(`-Dprobe\.redisson="([^"]*)"`)
)

// probeClassPath reads the class path (and the Redisson version, when it
// says) out of the lock probe's run-probe.sh.
func probeClassPath(script string) (cp, version string, err error) {
	text, err := os.ReadFile(script)
	if err != nil {
		return "", "", err
	}
	m := classPathRE.FindStringSubmatch(string(text))
	if m == nil {
		return "", "", fmt.Errorf("no -cp argument in %s", script)
	}
	cp = m[1] + m[2]
	classes := filepath.Join(filepath.Dir(script), "classes")
	if !strings.Contains(":"+cp+":", ":"+classes+":") {
		cp = classes + ":" + cp
	}
	version = "Redisson classes of " + script
	if v := versionRE.FindStringSubmatch(string(text)); v != nil {
		version = v[1]
	}
	return cp, version, nil
}

// startTestdataProbe compiles testdata/<class>.java, one of this suite's
// own Java programs, with testdata/LineProbe.java (the line protocol they
// share) into a temporary directory (removed at the end of the suite)
// against the lock probe's class path, and runs it against the Redis at
// addr. A non-empty skip says why it cannot run here.
func startTestdataProbe(script, addr, class string) (p *probe, skip string, err error) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, "javac is not installed", nil
	}
	javaBin, err := exec.LookPath("java")
	if err != nil {
		return nil, "java is not installed", nil
	}
	cp, version, err := probeClassPath(script)
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", strings.ToLower(class)+"-")
	if err != nil {
		return nil, "", err
	}
	DeferCleanup(os.RemoveAll, dir)
	args := []string{"-nowarn", "-d", dir, "-cp", cp}
	for _, c := range []string{class, "LineProbe"} {
		src, err := filepath.Abs(filepath.Join("testdata", c+".java"))
		if err != nil {
			return nil, "", err
		}
		args = append(args, src)
	}
	if out, err := exec.Command(javac, args...).CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("javac %s.java: %w: %s", class, err, out)
	}
	p, err = runProbe(exec.Command(javaBin, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", dir+":"+cp, class, "redis://"+addr, version))
	return p, "", err
}

// startTestdataJava starts testdata/<class>.java for the suite next to the
// lock probe, stopped at the end of the suite, and warms it up; or it says
// in one line why the specs against what, which need it, are skipped.
func startTestdataJava(script, addr, class, what string, warmUp func(*probe)) (p *probe, skip string) {
	GinkgoHelper()
	p, skip, err := startTestdataProbe(script, addr, class)
	Expect(err).NotTo(HaveOccurred(), "starting %s", class)
	if skip != "" {
		skip += ", so the specs against " + what + " are skipped"
		fmt.Println("interop: " + skip)
		return nil, skip
	}
	DeferCleanup(func() { Expect(p.close()).To(Succeed()) })
	warmUp(p)
	return p, ""
}

// startSyncJava starts SyncProbe for the suite next to the lock probe, or
// says in one line why the synchronizer specs are skipped.
func startSyncJava(script, addr string) {
	GinkgoHelper()
	syncJava, syncSkip = startTestdataJava(script, addr, "SyncProbe", "Redisson's synchronizers", warmUpSync)
}

// warmUpSync runs every synchronizer, waits included, a few times, so that
// class loading and the JIT do not count in the first measured wake-ups.
func warmUpSync(p *probe) {
	GinkgoHelper()
	for i := range 3 {
		name, tid := fmt.Sprintf("warm-up:sync:%d", i), p.newTid()
		Expect(p.do("sem.trysetpermits " + name + " 1")).To(Equal("true"))
		c := p.send("sem.acquire " + name + " " + tid + " 2")
		p.ok("sem.release " + name + " 1")
		Expect(c.wait(30 * time.Second)).To(Equal("ok"))
		Expect(p.do("sem.tryacquire " + name + " " + tid + " 1 10")).To(Equal("false"))

		psem := name + ":psem"
		Expect(p.do("psem.trysetpermits " + psem + " 1")).To(Equal("true"))
		id := strings.TrimPrefix(p.do("psem.acquire "+psem+" "+tid+" -1"), "id ")
		c = p.send("psem.acquire " + psem + " " + p.newTid() + " 1000")
		p.ok("psem.release " + psem + " " + id)
		Expect(c.wait(30 * time.Second)).To(HavePrefix("id "))
		Expect(p.do("psem.tryacquire " + psem + " " + tid + " 10 -1")).To(Equal("false"))
		Expect(p.do("psem.release " + psem + " " + id)).To(HavePrefix("err "))
		Expect(p.do("psem.addpermits " + psem + " 1")).To(Equal("ok"))
		ids := strings.TrimPrefix(p.do("psem.acquiren "+psem+" "+tid+" 2 -1"), "ids ")
		c = p.send("psem.acquiren " + psem + " " + p.newTid() + " 2 1000")
		p.ok("psem.releasen " + psem + " " + ids)
		Expect(c.wait(30 * time.Second)).To(HavePrefix("ids "))
		Expect(p.do("psem.permits " + psem)).To(Equal("2"))

		latch := name + ":latch"
		Expect(p.do("latch.trysetcount " + latch + " 1")).To(Equal("true"))
		c = p.send("latch.await " + latch + " " + tid)
		p.ok("latch.countdown " + latch)
		Expect(c.wait(30 * time.Second)).To(Equal("ok"))
		Expect(p.do("latch.await " + latch + " " + tid + " 10")).To(Equal("true"))
	}
}

// syncSide is one client of a synchronizer scenario, taking SyncProbe's
// commands (see testdata/SyncProbe.java).
type syncSide interface {
	// title names the client in spec texts: "Redisson" or "goredisson".
	title() string
	// send starts a command; its answer comes with the call's wait. A
	// call's sent is when it started, its at() when it returned.
	send(cmd string) *pcall
	// newTid returns a thread name unused so far.
	newTid() string
	// settle is how long a waiter of this client needs, once it is
	// subscribed, to be asleep on its channel.
	settle() time.Duration
}

// javaSync is Redisson, through SyncProbe.
type javaSync struct{ p *probe }

// redissonSync returns Redisson's side of a synchronizer spec, or skips the
// spec when SyncProbe cannot run here.
func redissonSync() syncSide {
	GinkgoHelper()
	if syncSkip != "" {
		Skip(syncSkip)
	}
	Expect(syncJava).NotTo(BeNil(), "SyncProbe did not start")
	return javaSync{p: syncJava}
}

func (j javaSync) title() string          { return "Redisson" }
func (j javaSync) send(cmd string) *pcall { return j.p.send(cmd) }
func (j javaSync) newTid() string         { return j.p.newTid() }

// A Redisson thread blocks on its entry's latch right after the attempt
// that follows its subscription; the JVM needs a moment for that.
func (j javaSync) settle() time.Duration { return 500 * time.Millisecond }

// goSync is goredisson, answering SyncProbe's commands; every command runs
// on its own goroutine with the world's context.
type goSync struct {
	w *world
	g *rlock.Client
	n *atomic.Int64
}

// newGoSync returns goredisson's side on the world's Client.
func newGoSync(w *world) goSync { return w.goSyncOn(w.g) }

// goSyncOn returns goredisson's side on the Client g.
func (w *world) goSyncOn(g *rlock.Client) goSync { return goSync{w: w, g: g, n: new(atomic.Int64)} }

func (s goSync) title() string         { return "goredisson" }
func (s goSync) newTid() string        { return "g" + strconv.FormatInt(s.n.Add(1), 10) }
func (s goSync) settle() time.Duration { return 100 * time.Millisecond }

func (s goSync) send(cmd string) *pcall { return s.w.goCall(cmd, s.exec) }

// goCall runs a probe command with goredisson on its own goroutine, with
// the world's context: exec answers the command's words as the probe would.
func (w *world) goCall(cmd string, exec func(ctx context.Context, p []string) string) *pcall {
	c := &pcall{cmd: cmd, ch: make(chan answer, 1)}
	c.sent = time.Now()
	w.goBg(func() {
		text := exec(w.ctx, strings.Fields(cmd))
		c.ch <- answer{text: text, at: time.Now()}
	})
	return c
}

// exec answers one command as SyncProbe would, with goredisson.
func (s goSync) exec(ctx context.Context, p []string) string {
	g := s.g
	kind, _, _ := strings.Cut(p[0], ".")
	switch {
	case p[0] == "sleep":
		time.Sleep(ms(p, 1, 0))
		return "ok"
	case len(p) < 2:
		return "err no name in " + p[0]
	case kind == "sem":
		return goSemaphore(ctx, g.NewSemaphore(p[1]), p)
	case kind == "psem":
		return goPermits(ctx, g.NewPermitExpirableSemaphore(p[1]), p)
	case kind == "latch":
		return goLatch(ctx, g.NewCountDownLatch(p[1]), p)
	}
	return "err unknown command " + p[0]
}

func num(p []string, i int) int {
	n, _ := strconv.Atoi(p[i])
	return n
}

func goSemaphore(ctx context.Context, s *rlock.Semaphore, p []string) string {
	switch p[0] {
	case "sem.trysetpermits":
		return boolAnswer(s.TrySetPermits(ctx, num(p, 2)))
	case "sem.addpermits":
		return okAnswer(s.AddPermits(ctx, num(p, 2)))
	case "sem.acquire":
		return okAnswer(s.Acquire(ctx, num(p, 3)))
	case "sem.tryacquire":
		return boolAnswer(s.TryAcquire(ctx, num(p, 3), ms(p, 4, 0)))
	case "sem.release":
		return okAnswer(s.Release(ctx, num(p, 2)))
	case "sem.available":
		return intAnswer(s.AvailablePermits(ctx))
	case "sem.drain":
		return intAnswer(s.DrainPermits(ctx))
	case "sem.trysetpermitsttl":
		return boolAnswer(s.TrySetPermitsTTL(ctx, num(p, 2), ms(p, 3, 0)))
	case "sem.releaseifexists":
		return boolAnswer(s.ReleaseIfExists(ctx, num(p, 2)))
	case "sem.delete":
		return boolAnswer(s.Delete(ctx))
	case "sem.exists":
		return boolAnswer(s.IsExists(ctx))
	case "sem.expire":
		return boolAnswer(s.Expire(ctx, ms(p, 2, 0)))
	case "sem.clearexpire":
		return boolAnswer(s.ClearExpire(ctx))
	case "sem.remain":
		return ttlAnswer(s.RemainTTL(ctx))
	}
	return "err unknown command " + p[0]
}

func goPermits(ctx context.Context, s *rlock.PermitExpirableSemaphore, p []string) string {
	switch p[0] {
	case "psem.trysetpermits":
		return boolAnswer(s.TrySetPermits(ctx, num(p, 2)))
	case "psem.acquire":
		id, err := s.Acquire(ctx, max(ms(p, 3, -1), 0))
		if err != nil {
			return errAnswer(err)
		}
		return "id " + id
	case "psem.tryacquire":
		id, ok, err := s.TryAcquire(ctx, ms(p, 3, 0), max(ms(p, 4, -1), 0))
		if err != nil || !ok {
			return boolAnswer(ok, err)
		}
		return "id " + id
	case "psem.release":
		return okAnswer(s.Release(ctx, p[2]))
	case "psem.available":
		return intAnswer(s.AvailablePermits(ctx))
	case "psem.acquiren":
		ids, err := s.AcquireN(ctx, num(p, 3), max(ms(p, 4, -1), 0))
		if err != nil {
			return errAnswer(err)
		}
		return "ids " + strings.Join(ids, ",")
	case "psem.tryacquiren":
		ids, ok, err := s.TryAcquireN(ctx, num(p, 3), ms(p, 4, 0), max(ms(p, 5, -1), 0))
		if err != nil || !ok {
			return boolAnswer(ok, err)
		}
		return "ids " + strings.Join(ids, ",")
	case "psem.releasen":
		return okAnswer(s.ReleaseN(ctx, strings.Split(p[2], ",")))
	case "psem.tryrelease":
		return boolAnswer(s.TryRelease(ctx, p[2]))
	case "psem.tryreleasen":
		return intAnswer(s.TryReleaseN(ctx, strings.Split(p[2], ",")))
	case "psem.updatelease":
		return boolAnswer(s.UpdateLeaseTime(ctx, p[2], max(ms(p, 3, -1), 0)))
	case "psem.leasetime":
		return ttlAnswer(s.LeaseTime(ctx, p[2]))
	case "psem.setpermits":
		return okAnswer(s.SetPermits(ctx, num(p, 2)))
	case "psem.addpermits":
		return okAnswer(s.AddPermits(ctx, num(p, 2)))
	case "psem.permits":
		return intAnswer(s.Permits(ctx))
	case "psem.acquired":
		return intAnswer(s.AcquiredPermits(ctx))
	case "psem.delete":
		return boolAnswer(s.Delete(ctx))
	case "psem.exists":
		return boolAnswer(s.IsExists(ctx))
	case "psem.expire":
		return boolAnswer(s.Expire(ctx, ms(p, 2, 0)))
	}
	return "err unknown command " + p[0]
}

func goLatch(ctx context.Context, l *rlock.CountDownLatch, p []string) string {
	switch p[0] {
	case "latch.trysetcount":
		n, _ := strconv.ParseInt(p[2], 10, 64)
		return boolAnswer(l.TrySetCount(ctx, n))
	case "latch.countdown":
		return okAnswer(l.CountDown(ctx))
	case "latch.count":
		n, err := l.Count(ctx)
		return intAnswer(int(n), err)
	case "latch.await":
		if len(p) <= 3 {
			return okAnswer(l.Await(ctx))
		}
		wctx, cancel := context.WithTimeout(ctx, ms(p, 3, 0))
		defer cancel()
		err := l.Await(wctx)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return "false"
		}
		return boolAnswer(err == nil, err)
	case "latch.delete":
		return boolAnswer(l.Delete(ctx))
	case "latch.exists":
		return boolAnswer(l.IsExists(ctx))
	}
	return "err unknown command " + p[0]
}

// ttlAnswer answers a remaining time as Redisson does, in ms: -1 for none
// (NoExpiry), the ms otherwise (0 for a key that does not exist, where
// Redisson's remainTimeToLive says -2).
func ttlAnswer(d time.Duration, err error) string {
	if err != nil {
		return errAnswer(err)
	}
	if d == rlock.NoExpiry {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// errAnswer names goredisson's sentinel errors as SyncProbe names Java's
// exceptions: "err ErrNotHeld: ...".
func errAnswer(err error) string {
	for _, s := range []struct {
		name string
		err  error
	}{{"ErrNotHeld", rlock.ErrNotHeld}, {"ErrReentry", rlock.ErrReentry}, {"ErrInvalidArgument", rlock.ErrInvalidArgument}, {"ErrClosed", rlock.ErrClosed}} {
		if errors.Is(err, s.err) {
			return "err " + s.name + ": " + err.Error()
		}
	}
	return "err " + err.Error()
}

func okAnswer(err error) string {
	if err != nil {
		return errAnswer(err)
	}
	return "ok"
}

func boolAnswer(v bool, err error) string {
	if err != nil {
		return errAnswer(err)
	}
	return strconv.FormatBool(v)
}

func intAnswer(n int, err error) string {
	if err != nil {
		return errAnswer(err)
	}
	return strconv.Itoa(n)
}
