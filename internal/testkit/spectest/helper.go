package spectest

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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// Specs that need a lock user in another OS process (one that can be
// killed with SIGKILL or stopped with SIGSTOP) start their test binary
// again as a helper: the suite's TestMain calls RunHelper, which runs the
// helper named by the environment instead of the tests. A helper reads its
// settings from the environment, prints "ready <client id>" once
// connected, and then "<event>" lines.

const helperEnv = "GOREDISSON_TEST_HELPER"

// HelperFunc is the body of a helper process: it runs with a Client on
// HELPER_REDIS and a context whose owner is "helper".
type HelperFunc func(ctx context.Context, c *rlock.Client) error

// RunHelper runs the helper this process was started as, from helpers, and
// exits; it returns at once when the process is not a helper. Call it
// first in TestMain.
func RunHelper(helpers map[string]HelperFunc) {
	name := os.Getenv(helperEnv)
	if name == "" {
		return
	}
	if err := runHelper(helpers, name); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func runHelper(helpers map[string]HelperFunc, name string) error {
	run, ok := helpers[name]
	if !ok {
		return fmt.Errorf("no helper %q", name)
	}
	opts := Unregistered(nil)
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

// HelperProc is a running helper process.
type HelperProc struct {
	cmd *exec.Cmd
	// Lines carries the helper's output lines after "ready".
	Lines chan string
	// Field is the hash field of the helper's owner.
	Field string
}

// StartHelper runs the named helper against the suite's server with the
// given extra environment ("KEY=value"), waits until it is ready, and kills
// it at cleanup.
func StartHelper(name string, env ...string) *HelperProc {
	GinkgoHelper()
	exe, err := os.Executable()
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + name, "HELPER_REDIS=" + server.Addr}, env...)...)
	cmd.Stderr = GinkgoWriter
	cmd.SysProcAttr = redistest.ChildAttr()
	out, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(cmd.Start()).To(Succeed())
	h := &HelperProc{cmd: cmd, Lines: make(chan string, 4096)}
	go func() {
		defer close(h.Lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.Lines <- sc.Text()
		}
	}()
	DeferCleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for range h.Lines { // the reader ends with the pipe
		}
	})
	var ready string
	Eventually(h.Lines).WithTimeout(10 * time.Second).Should(Receive(&ready))
	id, ok := strings.CutPrefix(ready, "ready ")
	Expect(ok).To(BeTrue(), "helper said %q", ready)
	h.Field = id + ":ctx:helper"
	return h
}

// Signal sends sig to the helper process.
func (h *HelperProc) Signal(sig syscall.Signal) {
	GinkgoHelper()
	Expect(h.cmd.Process.Signal(sig)).To(Succeed())
}

// Kill sends SIGKILL and reaps the process.
func (h *HelperProc) Kill() {
	GinkgoHelper()
	Expect(h.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
	_ = h.cmd.Wait()
}

// WaitAcquired drops what the helper said so far and waits for its next
// "acquired" line.
func (h *HelperProc) WaitAcquired() {
	GinkgoHelper()
	for len(h.Lines) > 0 {
		<-h.Lines
	}
	Eventually(func() bool {
		select {
		case l := <-h.Lines:
			return strings.HasPrefix(l, "acquired")
		default:
			return false
		}
	}).WithTimeout(20 * time.Second).WithPolling(time.Millisecond).Should(BeTrue())
}

// Pid returns the helper's process id.
func (h *HelperProc) Pid() int { return h.cmd.Process.Pid }
