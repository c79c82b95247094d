package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// A worker is a child process that runs jobs for the --backends run: a Go
// one (this program, re-executed as "bench serve") or a Java one
// (RedissonBench.java on the real Redisson). Both read one command a line
// and answer one JSON line; the commands are those of RedissonBench.java's
// header (the Go worker runs c, hold and release). Lock rows are named by
// their slug (spaces as '+'); the Java worker by "lock" or "fair".
type worker struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string // stdout lines; closed when the process ends
	mu    sync.Mutex  // one job at a time
}

// startWorker starts cmd as a worker and waits for its first line, the
// ready line, for up to ready.
func startWorker(name string, cmd *exec.Cmd, ready time.Duration) (*worker, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = redistest.ChildAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w := &worker{name: name, cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<30)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
		_ = cmd.Wait()
	}()
	select {
	case l, ok := <-w.lines:
		if !ok {
			return nil, fmt.Errorf("%s exited before it was ready", name)
		}
		if !strings.Contains(l, "Ready") {
			w.kill()
			return nil, fmt.Errorf("%s: unexpected first line %q", name, l)
		}
	case <-time.After(ready):
		w.kill()
		return nil, fmt.Errorf("%s: not ready within %v", name, ready)
	}
	return w, nil
}

// do sends one command and decodes its answer into reply; it gives up
// after timeout (the worker is then killed: its state is unknown).
func (w *worker) do(timeout time.Duration, reply any, args ...any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = fmt.Sprint(a)
	}
	if _, err := io.WriteString(w.in, strings.Join(parts, " ")+"\n"); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	select {
	case l, ok := <-w.lines:
		if !ok {
			return fmt.Errorf("%s exited", w.name)
		}
		if err := json.Unmarshal([]byte(l), reply); err != nil {
			return fmt.Errorf("%s: answer %q: %w", w.name, l, err)
		}
		return nil
	case <-time.After(timeout):
		w.kill()
		return fmt.Errorf("%s: no answer to %q within %v", w.name, parts[0], timeout)
	}
}

func (w *worker) pid() int { return w.cmd.Process.Pid }

func (w *worker) signal(sig syscall.Signal) error { return w.cmd.Process.Signal(sig) }

func (w *worker) kill() { _ = w.cmd.Process.Kill() }

// close asks the worker to quit, and kills it if it has not within 5 s.
func (w *worker) close() {
	_, _ = io.WriteString(w.in, "quit\n")
	_ = w.in.Close()
	done := make(chan struct{})
	go func() {
		for range w.lines {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		w.kill()
	}
}

func slug(name string) string   { return strings.ReplaceAll(name, " ", "+") }
func unslug(name string) string { return strings.ReplaceAll(name, "+", " ") }

// startGoWorker re-executes this program as a Go worker on srv, with
// lease for every lock (0: each row's own).
func startGoWorker(name string, srv servers, lease time.Duration) (*worker, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	js, _ := json.Marshal(srv)
	return startWorker(name, exec.Command(self, "serve", string(js), strconv.FormatInt(int64(lease), 10)), 30*time.Second)
}

// holdReply is the answer to hold; releaseReply to release.
type holdReply struct {
	Got int64 // wall clock ns of the acquisition; 0: not acquired
	Err string
}

type releaseReply struct {
	Called   int64 // wall clock ns when unlock was called
	Released int64 // wall clock ns when the unlock returned
	Lost     int64 // when the library told the holder its hold was lost (0: it did not)
	Err      string
}

// runServe is the Go worker's loop (args: servers as JSON, lease in ns).
func runServe(args []string) int {
	var srv servers
	if len(args) < 2 || json.Unmarshal([]byte(args[0]), &srv) != nil {
		fmt.Fprintln(os.Stderr, "bench serve: want servers JSON and lease")
		return 2
	}
	leaseNs, _ := strconv.ParseInt(args[1], 10, 64)
	lease := time.Duration(leaseNs)
	s := &serveState{srv: srv, lease: lease, holds: map[string]*heldLock{}, opened: map[string]newMutexFunc{}}
	enc := json.NewEncoder(os.Stdout)
	_ = enc.Encode(map[string]string{"Ready": "go"})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		if len(p) == 0 {
			continue
		}
		if p[0] == "quit" {
			break
		}
		_ = enc.Encode(s.run(p))
	}
	for _, c := range s.closers {
		c()
	}
	return 0
}

type serveState struct {
	srv     servers
	lease   time.Duration
	opened  map[string]newMutexFunc // by library, opened once per process
	closers []func()
	holds   map[string]*heldLock
}

type heldLock struct {
	m      mutex
	cancel context.CancelFunc
	lost   atomic.Int64 // when the library told the holder of the loss (0: not yet)
}

// told records the first loss signal.
func (h *heldLock) told() { h.lost.CompareAndSwap(0, time.Now().UnixNano()) }

// extender is a mutex of a library without a watchdog whose caller must
// extend the lock while a long job runs (redsync's Extend, redislock's
// Refresh, the naive lock's compare-and-PEXPIRE).
type extender interface {
	extend() error
}

// extendWhileHeld extends the lock every interval until ctx ends, as a
// caller of such a library does while its job runs; the first extension
// that finds the lock no longer held is the caller's loss signal (its time
// goes to lost). Other errors (the server unreachable) are tried again at
// the next tick.
func extendWhileHeld(ctx context.Context, ex extender, interval time.Duration, lost func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := ex.extend(); errors.Is(err, errNotHeld) {
				lost()
				return
			}
		}
	}
}

// watchStopper is a mutex whose loss watch must be stopped once the bench
// has read it (goredisson's LostContext).
type watchStopper interface {
	stopWatch()
}

// lossSignaller is a mutex whose library tells its holder that the hold
// was lost (goredisson's LostContext, a ZooKeeper session expiry, an
// etcd session's end).
type lossSignaller interface {
	lostSignal() <-chan struct{}
}

func (s *serveState) open(name string) (newMutexFunc, error) {
	if nm, ok := s.opened[name]; ok {
		return nm, nil
	}
	l, err := findAnyLib(name)
	if err != nil {
		return nil, err
	}
	nm, closeLib, err := openLib(l, s.srv, 16, nil, s.lease)
	if err != nil {
		return nil, err
	}
	s.opened[name] = nm
	s.closers = append(s.closers, closeLib)
	return nm, nil
}

func (s *serveState) run(p []string) any {
	num := func(i int) int64 {
		if i >= len(p) {
			return 0
		}
		v, _ := strconv.ParseInt(p[i], 10, 64)
		return v
	}
	switch p[0] {
	case "c": // c <lib> <key> <workers> <first> <holdNs> <thinkNs> <startNs> <endNs>
		spec := contendSpec{Lib: unslug(p[1]), Addr: s.srv.Redis, Srv: s.srv, Key: p[2], Workers: int(num(3)), FirstWorker: int(num(4)),
			Hold: time.Duration(num(5)), Think: time.Duration(num(6)), Start: num(7), End: num(8)}
		return contend(spec)
	case "hold": // hold <lib> <key> <timeoutMs> <retry>
		return s.hold(unslug(p[1]), p[2], time.Duration(num(3))*time.Millisecond, num(4) == 1)
	case "release": // release <key>
		h, ok := s.holds[p[1]]
		if !ok {
			return releaseReply{Err: "no hold of " + p[1]}
		}
		delete(s.holds, p[1])
		r := releaseReply{Called: time.Now().UnixNano()}
		done := make(chan error, 1)
		go func() { done <- h.m.unlock() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			err = errors.New("unlock did not return within 20 s")
		}
		r.Released = time.Now().UnixNano()
		if err != nil {
			r.Err = err.Error()
		}
		// A loss signal may be on its way (a ZooKeeper session expiry is
		// learnt on reconnecting): watch up to 1 s more.
		if _, ok := h.m.(lossSignaller); ok {
			for i := 0; i < 20 && h.lost.Load() == 0; i++ {
				time.Sleep(50 * time.Millisecond)
			}
		}
		r.Lost = h.lost.Load()
		h.cancel()
		if w, ok := h.m.(watchStopper); ok {
			w.stopWatch()
		}
		return r
	}
	return map[string]string{"Err": "unknown command " + p[0]}
}

// hold takes key's lock for a holder (retry false: one lock call) or a
// waiter (retry true: after an error it tries again, with a new owner,
// every 100 ms, as a caller that needs the lock would), within timeout,
// and keeps it. The reply's Err is the first error seen, even when the
// lock was got after it; Got 0 means it was not got within timeout.
func (s *serveState) hold(name, key string, timeout time.Duration, retry bool) holdReply {
	nm, err := s.open(name)
	if err != nil {
		return holdReply{Err: err.Error()}
	}
	deadline := time.Now().Add(timeout)
	var first string
	for {
		ctx, cancel := context.WithCancel(context.Background())
		m := nm(ctx, key)
		t := time.AfterFunc(time.Until(deadline), cancel)
		err := m.lock()
		if t.Stop() && err == nil {
			h := &heldLock{m: m, cancel: cancel}
			if ls, ok := m.(lossSignaller); ok && ls.lostSignal() != nil {
				go func() {
					select {
					case <-ls.lostSignal():
						h.told()
					case <-ctx.Done():
					}
				}()
			}
			if ex, ok := m.(extender); ok && s.lease > 0 {
				go extendWhileHeld(ctx, ex, s.lease/3, h.told)
			}
			s.holds[key] = h
			return holdReply{Got: time.Now().UnixNano(), Err: first}
		}
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut || time.Now().After(deadline) {
			return holdReply{Err: first}
		}
		if first == "" {
			first = err.Error()
		}
		if !retry {
			return holdReply{Err: first}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
