package goredisson_test

import (
	"bufio"
	"context"
	"fmt"
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

func runHelper(name string) error {
	run, ok := helpers[name]
	if !ok {
		return fmt.Errorf("no helper %q", name)
	}
	var opts []rlock.Option
	if ms, err := strconv.Atoi(os.Getenv("HELPER_WAITER_TIMEOUT_MS")); err == nil {
		opts = append(opts, rlock.WithFairWaiterTimeout(time.Duration(ms)*time.Millisecond))
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("HELPER_REDIS")})
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
	h := &helperProc{cmd: cmd, lines: make(chan string, 16)}
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

// Kill sends SIGKILL and reaps the process.
func (h *helperProc) Kill() {
	Expect(h.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
	_ = h.cmd.Wait()
}
