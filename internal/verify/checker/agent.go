package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// An agent is this program (or the test binary) started again with
// agentEnv set: it runs one executor and takes its calls as JSON lines on
// stdin, one reply line each on stdout. Its first line carries the
// Client's id. It ends at EOF or "quit".

const agentEnv = "GOREDISSON_CHECKER_AGENT"

// agentMode reports whether this process was started as an agent.
func agentMode() bool { return os.Getenv(agentEnv) != "" }

// agentMain runs the agent and returns the exit code.
func agentMain() int {
	var cfg execConfig
	if err := json.Unmarshal([]byte(os.Getenv(agentEnv)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "checker agent:", err)
		return 2
	}
	e, err := newExecutor(cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checker agent:", err)
		return 2
	}
	defer e.close()
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	send := func(r reply) bool {
		if err := enc.Encode(r); err != nil {
			return false
		}
		return out.Flush() == nil
	}
	if !send(reply{ID: e.clientID()}) {
		return 2
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var r req
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			send(reply{Err: "other", Msg: err.Error()})
			continue
		}
		if r.Op == "quit" {
			send(reply{OK: true})
			return 0
		}
		if !send(e.do(r)) {
			return 2
		}
	}
	return 0
}

// client is one goredisson Client of a sequence, in this process or in an
// agent.
type client interface {
	call(r req) (reply, error)
	id() string
	pid() int // 0: in this process
	// close closes the Client; for an agent it reports a process that
	// did not end well (a race the race detector found exits with 66).
	close() error
}

// inproc is a Client in the checker's own process.
type inproc struct{ e *executor }

func (c *inproc) call(r req) (reply, error) { return c.e.do(r), nil }
func (c *inproc) id() string                { return c.e.clientID() }
func (c *inproc) pid() int                  { return 0 }
func (c *inproc) close() error              { c.e.close(); return nil }

// agent is a Client in a process of its own.
type agent struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan []byte
	cid     string
	exited  chan struct{}
	waitErr error // how the process ended, once exited is closed
	stopped bool
}

// agentTimeout bounds one call to an agent: every call has a timeout of its
// own well below it, so running out means the agent hung or died.
const agentTimeout = 40 * time.Second

func startAgent(cfg execConfig) (*agent, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), agentEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = redistest.ChildAttr()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of our own, not StdoutPipe: Wait (on its own goroutine) must
	// not close it under the reader.
	out, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	a := &agent{cmd: cmd, in: in, lines: make(chan []byte, 16), exited: make(chan struct{})}
	go func() {
		defer close(a.lines)
		defer out.Close()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			a.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	go func() { a.waitErr = cmd.Wait(); close(a.exited) }()
	first, err := a.read(agentTimeout)
	if err != nil {
		_ = a.close()
		return nil, fmt.Errorf("checker: agent did not start: %w", err)
	}
	a.cid = first.ID
	return a, nil
}

func (a *agent) read(timeout time.Duration) (reply, error) {
	select {
	case l, ok := <-a.lines:
		if !ok {
			return reply{}, errors.New("agent exited")
		}
		var r reply
		if err := json.Unmarshal(l, &r); err != nil {
			return reply{}, fmt.Errorf("agent said %q: %w", l, err)
		}
		return r, nil
	case <-time.After(timeout):
		return reply{}, fmt.Errorf("agent did not answer within %v", timeout)
	}
}

func (a *agent) call(r req) (reply, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return reply{}, err
	}
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		return reply{}, fmt.Errorf("agent: %w", err)
	}
	return a.read(agentTimeout)
}

// kill kills the agent's process (SIGKILL) and waits for it to end.
func (a *agent) kill() {
	if a.stopped {
		return
	}
	a.stopped = true
	_ = a.cmd.Process.Kill()
	<-a.exited
	_ = a.in.Close()
	for range a.lines {
	}
}

func (a *agent) id() string { return a.cid }
func (a *agent) pid() int   { return a.cmd.Process.Pid }

// close asks the agent to quit (it closes its Client) and kills it if it
// does not within a few seconds; it reports an agent that exited with an
// error or had to be killed.
func (a *agent) close() error {
	if a.stopped {
		return nil
	}
	a.stopped = true
	_ = a.cmd.Process.Signal(syscall.SIGCONT)
	_ = a.in.Close() // EOF: the agent closes its Client and exits
	var err error
	select {
	case <-a.exited:
		if a.waitErr != nil {
			err = fmt.Errorf("agent pid %d: %w (a race found by the race detector exits with 66; its report is on stderr)", a.cmd.Process.Pid, a.waitErr)
		}
	case <-time.After(5 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.exited
		err = fmt.Errorf("agent pid %d did not exit within 5 s of its input closing", a.cmd.Process.Pid)
	}
	for range a.lines {
	}
	return err
}
