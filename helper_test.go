package goredisson_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// Specs that need a lock user in another OS process (one that can be
// killed with SIGKILL or stopped with SIGSTOP) start this test binary again
// as a helper: TestMain runs the helper named by helperEnv instead of the
// tests. A helper reads its settings from the environment, prints
// "ready <client id>" once connected, and then "<event>" lines.

const helperEnv = "GOREDISSON_TEST_HELPER"

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		if err := runHelper(name); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helpers by name.
var helpers = map[string]func(ctx context.Context, c *rlock.Client) error{
	// fair-waiter waits for the fair lock HELPER_LOCK and, once it holds
	// it, prints "acquired" and keeps it until killed.
	"fair-waiter": func(ctx context.Context, c *rlock.Client) error {
		if err := c.NewFairLock(os.Getenv("HELPER_LOCK")).Lock(ctx); err != nil {
			return err
		}
		fmt.Println("acquired")
		select {}
	},
}

// fencedStore is the storage a fenced lock guards: it takes a write only
// with a token at least as new as every token it has seen (KEYS[1] the
// highest token, KEYS[2] the data; ARGV[1] token, ARGV[2] value). It
// returns 1 when the write was taken, 0 when it was refused as stale.
var fencedStore = redis.NewScript(`
local last = tonumber(redis.call('get', KEYS[1]) or '0')
local token = tonumber(ARGV[1])
if token < last then return 0 end
redis.call('set', KEYS[1], token)
redis.call('rpush', KEYS[2], ARGV[2])
return 1`)

func init() {
	// fenced-worker takes the fenced lock HELPER_LOCK again and again (a
	// watchdog lease of HELPER_WATCHDOG_MS), holds it HELPER_HOLD_MS,
	// then writes through fencedStore, and logs every critical section
	// to the file HELPER_LOG as "enter <owner> <token> <ns>" and
	// "exit <owner> <token> <ns> <write taken 1|0>" lines. It prints
	// "acquired <token>" when it enters.
	helpers["fenced-worker"] = func(ctx context.Context, c *rlock.Client) error {
		hold, _ := strconv.Atoi(os.Getenv("HELPER_HOLD_MS"))
		f, err := os.OpenFile(os.Getenv("HELPER_LOG"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		lock := c.NewFencedLock(os.Getenv("HELPER_LOCK"))
		me := strconv.Itoa(os.Getpid())
		rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("HELPER_STORE")})
		for {
			token, err := lock.LockToken(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, "helper lock:", err)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			fmt.Fprintf(f, "enter %s %d %d\n", me, token, time.Now().UnixNano())
			fmt.Println("acquired", token)
			time.Sleep(time.Duration(hold) * time.Millisecond)
			taken, err := fencedStore.Run(context.Background(), rdb, []string{"fence:last", "fence:data"}, token, me).Int()
			if err != nil {
				return err
			}
			fmt.Fprintf(f, "exit %s %d %d %d\n", me, token, time.Now().UnixNano(), taken)
			_ = lock.Unlock(ctx) // ErrNotHeld after a lost lease: nothing to give back
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func runHelper(name string) error {
	run, ok := helpers[name]
	if !ok {
		return fmt.Errorf("no helper %q", name)
	}
	var opts []rlock.Option
	if ms, err := strconv.Atoi(os.Getenv("HELPER_FAIR_WAIT_MS")); err == nil {
		opts = append(opts, rlock.WithFairLockWaitTimeout(time.Duration(ms)*time.Millisecond))
	}
	if os.Getenv("HELPER_DEBUG") != "" {
		opts = append(opts, rlock.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	if ms, err := strconv.Atoi(os.Getenv("HELPER_WATCHDOG_MS")); err == nil {
		opts = append(opts, rlock.WithWatchdogTimeout(time.Duration(ms)*time.Millisecond))
	}
	ro := &redis.Options{Addr: os.Getenv("HELPER_REDIS")}
	if ms, err := strconv.Atoi(os.Getenv("HELPER_IO_TIMEOUT_MS")); err == nil {
		ro.ReadTimeout, ro.WriteTimeout = time.Duration(ms)*time.Millisecond, time.Duration(ms)*time.Millisecond
	}
	rdb := redis.NewClient(ro)
	c, err := rlock.NewClient(rdb, opts...)
	if err != nil {
		return err
	}
	ctx := ctxowner.WithID(context.Background(), "helper")
	if err := rdb.Ping(ctx).Err(); err != nil {
		return err
	}
	fmt.Println("ready", c.ID())
	return run(ctx, c)
}

// helperProc is a running helper process.
type helperProc struct {
	cmd   *exec.Cmd
	lines chan string
	// Field is the hash field of the helper's owner.
	Field string
}

// startHelper runs the named helper against the suite's server with the
// given extra environment ("KEY=value"), waits until it is ready, and kills
// it at cleanup.
func startHelper(name string, env ...string) *helperProc {
	exe, err := os.Executable()
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + name, "HELPER_REDIS=" + server.Addr}, env...)...)
	cmd.Stderr = GinkgoWriter
	cmd.SysProcAttr = redistest.ChildAttr()
	out, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(cmd.Start()).To(Succeed())
	h := &helperProc{cmd: cmd, lines: make(chan string, 4096)}
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	DeferCleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for range h.lines { // the reader ends with the pipe
		}
	})
	var ready string
	Eventually(h.lines).WithTimeout(10 * time.Second).Should(Receive(&ready))
	id, ok := strings.CutPrefix(ready, "ready ")
	Expect(ok).To(BeTrue(), "helper said %q", ready)
	h.Field = id + ":ctx:helper"
	return h
}

// Signal sends sig to the helper process.
func (h *helperProc) Signal(sig syscall.Signal) {
	Expect(h.cmd.Process.Signal(sig)).To(Succeed())
}

// Kill sends SIGKILL and reaps the process.
func (h *helperProc) Kill() {
	Expect(h.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
	_ = h.cmd.Wait()
}
