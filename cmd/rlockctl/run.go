package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// forwarded are the signals run passes on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

func runRun(ctx context.Context, env *cli, args []string) error {
	fs, addr := env.flags("run", "--lock NAME [flags] -- CMD [ARGS...]",
		"Runs CMD while holding the reentrant lock NAME (Redisson's RLock layout), like\n"+
			"flock(1) across machines. The lock is renewed by the watchdog while CMD runs\n"+
			"(or held for a fixed --lease) and released when CMD exits; run then exits with\n"+
			"CMD's status. Signals SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2\n"+
			"are passed to CMD, which runs in its own process group (a CMD that reads from\n"+
			"the terminal is stopped by it). If the lock is lost while CMD runs (force-\n"+
			"unlocked, expired while Redis was unreachable, or a fixed lease ran out), CMD\n"+
			"gets SIGTERM, SIGKILL after --kill-after, and run exits 77. The loss of a\n"+
			"watchdog lease is noticed at the next renewal, a third of --watchdog.\n"+
			"As flock(1) does, run waits until the lock is acquired; --wait D gives up\n"+
			"after D and --wait 0 after one attempt, and run then exits 75.", defaultAddr())
	name := fs.String("lock", "", "lock `name` (required)")
	wait := &waitFlag{forever: true}
	fs.Var(wait, "wait", "how long to wait for the lock: a `duration` (10s, 1m30s) or seconds as in flock -w (2.5);\n"+
		"0 makes one attempt; forever waits until the lock is acquired")
	lease := fs.Duration("lease", 0, "fixed lease; 0 keeps a watchdog lease renewed while CMD runs")
	wd := fs.Duration("watchdog", 30*time.Second, "watchdog lease, renewed every third of it")
	killAfter := fs.Duration("kill-after", 5*time.Second, "after a lost lock, SIGKILL CMD this long after SIGTERM")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	if err := checkRun(fs, *name, *lease, *killAfter); err != nil {
		return err
	}
	_, c, closeAll, err := connect(ctx, *addr, rlock.WithWatchdogTimeout(*wd),
		rlock.WithClientRegistry(true), rlock.WithClientName(clientName(*name, fs.Args())))
	if err != nil {
		return err
	}
	defer closeAll()

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	host, _ := os.Hostname()
	owner := ctxowner.WithID(ctx, fmt.Sprintf("rlockctl:%s:%d", host, os.Getpid()))
	lock := c.NewLock(*name)
	if err := acquire(owner, lock, *wait, *lease, sigs); err != nil {
		return err
	}
	lost, stopLost := rlock.LostContext(owner, lock)
	defer stopLost()

	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.stdin, env.stdout, env.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		release(owner, lock, env)
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return fail(code, "%v", err)
	}
	k := &keeper{env: env, cmd: cmd, owner: owner, lock: lock, lease: *lease, killAfter: *killAfter}
	return k.supervise(lost, sigs)
}

// checkRun refuses bad usage of run: a missing lock name or command, or a
// lease or --kill-after out of range.
func checkRun(fs *flag.FlagSet, name string, lease, killAfter time.Duration) error {
	switch {
	case name == "" && lockFlagAfter(fs.Args()):
		return fail(exitUsage, "flags go before CMD: rlockctl run --lock NAME [flags] -- CMD ARGS...; got %q", fs.Args())
	case name == "":
		return fail(exitUsage, "missing --lock NAME (see rlockctl run --help)")
	case fs.NArg() == 0:
		return fail(exitUsage, "missing command: rlockctl run --lock NAME -- CMD ARGS... (see rlockctl run --help)")
	case lease < 0:
		return fail(exitUsage, "--lease must be >= 0 (0: watchdog)")
	case lease > 0 && lease < time.Millisecond:
		return fail(exitUsage, "--lease %v is below Redis's 1ms resolution (0: watchdog)", lease)
	case killAfter <= 0:
		return fail(exitUsage, "--kill-after must be > 0")
	}
	return nil
}

// keeper is run's command while it runs under the lock.
type keeper struct {
	env       *cli
	cmd       *exec.Cmd
	owner     context.Context
	lock      *rlock.Lock
	lease     time.Duration
	killAfter time.Duration
}

// supervise waits for the started command to end, passing it the
// forwarded signals; when the lock is lost (lost ends) it sends the
// command SIGTERM, and SIGKILL --kill-after later. It releases the lock
// after the command ended and returns run's exit status.
func (k *keeper) supervise(lost context.Context, sigs <-chan os.Signal) error {
	exited := make(chan error, 1)
	go func() { exited <- k.cmd.Wait() }()

	var lostErr error
	var kill <-chan time.Time
	for {
		select {
		case s := <-sigs:
			_ = k.cmd.Process.Signal(s)
		case <-lost.Done():
			lostErr = k.stop(context.Cause(lost))
			kill = time.After(k.killAfter)
			lost = context.Background() // Done() of Background is nil: never again
		case <-kill:
			_ = k.cmd.Process.Kill()
		case err := <-exited:
			return k.ended(err, lostErr)
		}
	}
}

// stop tells the user that the lock was lost (cause) and sends the command
// SIGTERM; it returns the loss as reported.
func (k *keeper) stop(cause error) error {
	lostErr := cause
	if k.lease > 0 {
		lostErr = fmt.Errorf("fixed lease of %v ran out: %w", k.lease, lostErr)
	}
	fmt.Fprintf(k.env.stderr, "rlockctl run: lock %s lost (%s): sending SIGTERM to %s (pid %d)\n", k.lock.Name(), plain(lostErr), k.cmd.Args[0], k.cmd.Process.Pid)
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	return lostErr
}

// ended maps the command's end (err from Wait) to run's exit status,
// releasing the lock unless it was lost (lostErr).
func (k *keeper) ended(err, lostErr error) error {
	if lostErr != nil {
		return fail(exitLost, "%s stopped after the lock was lost", k.cmd.Args[0])
	}
	if uerr := release(k.owner, k.lock, k.env); errors.Is(uerr, rlock.ErrNotHeld) {
		return fail(exitLost, "%s finished, but the lock had been lost meanwhile (another owner may have run at the same time)", k.cmd.Args[0])
	}
	return childStatus(err)
}

// waitFlag is run's --wait: forever (the default, flock(1) without -w)
// waits until the lock is acquired; a duration or a number of seconds waits
// up to that long, 0 making one attempt.
type waitFlag struct {
	d       time.Duration
	forever bool
}

func (w *waitFlag) String() string {
	if w.forever {
		return "forever"
	}
	return w.d.String()
}

// Set parses "forever", a Go duration or a number of seconds. A negative
// wait is refused: it means "forever" to some and "do not wait" to others
// (Redisson's tryLock(-1)).
func (w *waitFlag) Set(s string) error {
	if s == "forever" {
		*w = waitFlag{forever: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if secs, ferr := strconv.ParseFloat(s, 64); err != nil && ferr == nil {
		d, err = time.Duration(secs*float64(time.Second)), nil
	}
	switch {
	case err != nil:
		return errors.New("want a duration (10s, 1m30s), seconds (2.5), 0 or forever")
	case d < 0:
		return errors.New("negative: use 0 for one attempt, forever to wait until acquired")
	case d > 0 && d < time.Millisecond:
		return fmt.Errorf("%v is below 1ms: use 0 for one attempt", d)
	}
	*w = waitFlag{d: d}
	return nil
}

// take acquires the lock as --wait says: until acquired, or with TryLock
// (wait 0: one attempt).
func (w waitFlag) take(ctx context.Context, lock *rlock.Lock, lease time.Duration) (bool, error) {
	if w.forever {
		err := lock.LockLease(ctx, lease)
		return err == nil, err
	}
	return lock.TryLock(ctx, w.d, lease)
}

// acquire takes the lock. A forwarded signal while waiting ends the wait
// (nothing is left behind) and run exits 128+signal, as the signal's
// default action would have; the command is not started.
func acquire(owner context.Context, lock *rlock.Lock, wait waitFlag, lease time.Duration, sigs <-chan os.Signal) error {
	actx, cancel := context.WithCancel(owner)
	defer cancel()
	got := make(chan struct{})
	interrupted := make(chan syscall.Signal, 1)
	go func() {
		select {
		case s := <-sigs:
			interrupted <- s.(syscall.Signal)
			cancel()
		case <-got:
		}
	}()
	ok, err := wait.take(actx, lock, lease)
	close(got)
	select {
	case s := <-interrupted:
		if ok {
			_ = lock.Unlock(context.WithoutCancel(owner))
		}
		return fail(128+int(s), "%v before lock %s was acquired", s, lock.Name())
	default:
	}
	switch {
	case errors.Is(err, rlock.ErrInvalidArgument):
		return fail(exitUsage, "%s", plain(err))
	case err != nil:
		return fail(exitUnavailable, "acquiring lock %s: %s", lock.Name(), plain(err))
	case !ok && wait.d == 0:
		return fail(exitNotAcquired, "lock %s not acquired: another owner holds it (--wait 0: one attempt)", lock.Name())
	case !ok:
		return fail(exitNotAcquired, "lock %s not acquired within --wait %v", lock.Name(), wait.d)
	}
	return nil
}

// release gives the lock back and says so when it cannot.
func release(owner context.Context, lock *rlock.Lock, env *cli) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(owner), 5*time.Second)
	defer cancel()
	err := lock.Unlock(ctx)
	if err != nil {
		fmt.Fprintf(env.stderr, "rlockctl run: releasing lock %s: %s\n", lock.Name(), plain(err))
	}
	return err
}

// childStatus maps the command's end to run's exit code.
func childStatus(err error) error {
	var ee *exec.ExitError
	if err == nil {
		return nil
	}
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fail(128+int(ws.Signal()), "")
		}
		return fail(ee.ExitCode(), "")
	}
	return fail(exitFailure, "%v", err)
}

// lockFlagAfter reports whether args (what follows the flags) hold a --lock
// flag before any "--": a flag given after the command.
func lockFlagAfter(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if t := strings.TrimLeft(a, "-"); len(t) < len(a) && (t == "lock" || strings.HasPrefix(t, "lock=")) {
			return true
		}
	}
	return false
}

// clientName names run's Client in its registration (rlockctl status shows
// it beside the holder field): the lock and the command, cut to 200 bytes.
func clientName(lock string, cmd []string) string {
	s := "rlockctl run --lock " + lock + " -- " + strings.Join(cmd, " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:197], "") + "..."
	}
	return s
}
