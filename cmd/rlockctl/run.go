package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
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
			"Exit 75 when the lock is not acquired within --wait.", defaultAddr())
	name := fs.String("lock", "", "lock `name` (required)")
	wait := fs.Duration("wait", -1, "how long to wait for the lock; 0 makes one attempt, < 0 waits forever")
	lease := fs.Duration("lease", 0, "fixed lease; 0 keeps a watchdog lease renewed while CMD runs")
	wd := fs.Duration("watchdog", 30*time.Second, "watchdog lease, renewed every third of it")
	killAfter := fs.Duration("kill-after", 5*time.Second, "after a lost lock, SIGKILL CMD this long after SIGTERM")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *name == "":
		fs.Usage()
		return fail(exitUsage, "missing --lock NAME")
	case fs.NArg() == 0:
		fs.Usage()
		return fail(exitUsage, "missing command: rlockctl run --lock NAME -- CMD ARGS...")
	case *lease < 0:
		return fail(exitUsage, "--lease must be >= 0 (0: watchdog)")
	case *killAfter <= 0:
		return fail(exitUsage, "--kill-after must be > 0")
	}
	_, c, closeAll, err := connect(ctx, *addr, rlock.WithWatchdogTimeout(*wd))
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
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, env.stdout, env.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		release(owner, lock, env)
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return fail(code, "%v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var lostErr error
	var kill <-chan time.Time
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case <-lost.Done():
			lostErr = context.Cause(lost)
			if *lease > 0 {
				lostErr = fmt.Errorf("fixed lease of %v ran out: %w", *lease, lostErr)
			}
			fmt.Fprintf(env.stderr, "rlockctl run: lock %s lost (%v): sending SIGTERM to %s (pid %d)\n", *name, lostErr, fs.Arg(0), cmd.Process.Pid)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			kill = time.After(*killAfter)
			lost = context.Background() // Done() of Background is nil: never again
		case <-kill:
			_ = cmd.Process.Kill()
		case err := <-exited:
			if lostErr != nil {
				return fail(exitLost, "%s stopped after the lock was lost", fs.Arg(0))
			}
			if uerr := release(owner, lock, env); errors.Is(uerr, rlock.ErrNotHeld) {
				return fail(exitLost, "%s finished, but the lock had been lost meanwhile (another owner may have run at the same time)", fs.Arg(0))
			}
			return childStatus(err)
		}
	}
}

// acquire takes the lock. A forwarded signal while waiting ends the wait
// (nothing is left behind) and run exits 128+signal, as the signal's
// default action would have; the command is not started.
func acquire(owner context.Context, lock *rlock.Lock, wait, lease time.Duration, sigs <-chan os.Signal) error {
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
	var ok bool
	var err error
	if wait < 0 {
		err = lock.LockLease(actx, lease)
		ok = err == nil
	} else {
		ok, err = lock.TryLock(actx, wait, lease)
	}
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
		return fail(exitUsage, "%v", err)
	case err != nil:
		return fail(exitUnavailable, "acquiring %s: %v", lock.Name(), err)
	case !ok:
		return fail(exitNotAcquired, "lock %s not acquired within %v", lock.Name(), wait)
	}
	return nil
}

// release gives the lock back and says so when it cannot.
func release(owner context.Context, lock *rlock.Lock, env *cli) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(owner), 5*time.Second)
	defer cancel()
	err := lock.Unlock(ctx)
	if err != nil {
		fmt.Fprintf(env.stderr, "rlockctl run: releasing %s: %v\n", lock.Name(), err)
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
