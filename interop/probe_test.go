package interop_test

// A driver for the Redisson probe (shared/tools/redisson-probe): the real
// Redisson client in a JVM, taking one command per line on stdin.
//
// Every command is sent tagged ("@c<n> <command>"), so the probe runs it on
// the thread of its <tid> (or a pool thread) and keeps reading: a command
// for a thread blocked in lock() queues behind it without stalling the
// others. Answers come back "@c<n> <answer>" in completion order and are
// matched to their call by tag, with the time they were read.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// javaWatchdog is the probe's lockWatchdogTimeout: short, so that the
// watchdog specs see several renewals, and so that a Java waiter woken by
// nothing still gives up its sleep within a few seconds.
const javaWatchdog = 3000

// probe is one running probe process.
type probe struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	id      string // the Redisson instance's UUID
	version string

	wmu sync.Mutex // one line at a time on stdin

	mu      sync.Mutex
	calls   map[string]chan answer
	seq     atomic.Uint64
	stray   []string // lines that matched no call
	stderr  *tailBuffer
	readEnd chan struct{} // closed when stdout reached EOF
	exited  chan struct{} // closed when the process has been waited for
	tids    atomic.Uint64
}

// answer is one answer line and when the driver read it.
type answer struct {
	text string
	at   time.Time
}

// pcall is a command in flight.
type pcall struct {
	cmd  string
	sent time.Time
	ch   chan answer
	got  *answer
}

// startProbe runs script (run-probe.sh) against the Redis at addr and waits
// for its "ready <id>" line.
func startProbe(script, addr string, watchdogMs int) (*probe, error) {
	p, err := runProbe(exec.Command(script, "redis://"+addr, strconv.Itoa(watchdogMs)))
	if err != nil {
		return nil, err
	}
	versions.Lock()
	versions.redisson = p.version
	versions.Unlock()
	return p, nil
}

// runProbe starts cmd, a program speaking the probe's line protocol (the
// lock probe, or SyncProbe), and waits for its "ready <id>" line and its
// answer to "version".
func runProbe(cmd *exec.Cmd) (*probe, error) {
	script := cmd.Path
	cmd.SysProcAttr = redistest.ChildAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &probe{cmd: cmd, stdin: stdin, calls: map[string]chan answer{}, stderr: &tailBuffer{max: 16 << 10},
		readEnd: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("probe: start %s: %w", script, err)
	}
	ready := make(chan string, 1)
	go p.read(stdout, ready)
	go func() {
		<-p.readEnd
		_ = cmd.Wait()
		close(p.exited)
	}()
	select {
	case id := <-ready:
		p.id = id
	case <-p.exited:
		return nil, fmt.Errorf("probe: exited before ready: %s", p.stderr.String())
	case <-time.After(90 * time.Second):
		_ = p.kill()
		return nil, fmt.Errorf("probe: no ready line within 90s: %s", p.stderr.String())
	}
	v, err := p.send("version").wait(30 * time.Second)
	if err != nil {
		_ = p.kill()
		return nil, err
	}
	p.version = v
	return p, nil
}

// read dispatches stdout lines until EOF.
func (p *probe) read(stdout io.Reader, ready chan<- string) {
	defer close(p.readEnd)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, at := sc.Text(), time.Now()
		if id, ok := strings.CutPrefix(line, "ready "); ok && p.id == "" {
			select {
			case ready <- strings.TrimSpace(id):
			default:
			}
			continue
		}
		tag, text, _ := strings.Cut(line, " ")
		p.mu.Lock()
		ch, ok := p.calls[tag]
		if ok {
			delete(p.calls, tag)
		} else {
			p.stray = append(p.stray, line)
		}
		p.mu.Unlock()
		if ok {
			ch <- answer{text: text, at: at}
		}
	}
}

// send writes one tagged command and returns the call; its answer comes
// with wait or done.
func (p *probe) send(cmd string) *pcall {
	tag := "@c" + strconv.FormatUint(p.seq.Add(1), 10)
	c := &pcall{cmd: cmd, ch: make(chan answer, 1)}
	p.mu.Lock()
	p.calls[tag] = c.ch
	p.mu.Unlock()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	c.sent = time.Now()
	if _, err := io.WriteString(p.stdin, tag+" "+cmd+"\n"); err != nil {
		p.mu.Lock()
		delete(p.calls, tag)
		p.mu.Unlock()
		c.ch <- answer{text: "err probe stdin: " + err.Error(), at: time.Now()}
	}
	return c
}

// wait returns the call's answer, or an error when none came within d or
// the probe exited.
func (c *pcall) wait(d time.Duration) (string, error) {
	if c.got != nil {
		return c.got.text, nil
	}
	select {
	case a := <-c.ch:
		c.got = &a
		return a.text, nil
	case <-time.After(d):
		return "", fmt.Errorf("probe: no answer to %q within %v", c.cmd, d)
	}
}

// answered reports whether the answer is in, without blocking.
func (c *pcall) answered() bool {
	if c.got != nil {
		return true
	}
	select {
	case a := <-c.ch:
		c.got = &a
		return true
	default:
		return false
	}
}

// at returns when the answer was read (zero before it is in).
func (c *pcall) at() time.Time {
	if c.got == nil {
		return time.Time{}
	}
	return c.got.at
}

// do sends cmd and expects an answer within 30 s.
func (p *probe) do(cmd string) string {
	GinkgoHelper()
	out, err := p.send(cmd).wait(30 * time.Second)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// ok sends cmd and expects the answer "ok".
func (p *probe) ok(cmd string) {
	GinkgoHelper()
	Expect(p.do(cmd)).To(Equal("ok"), cmd)
}

// newTid returns a probe thread name never used before, so that a thread
// still blocked by an earlier spec never serves a later one.
func (p *probe) newTid() string { return "t" + strconv.FormatUint(p.tids.Add(1), 10) }

// field returns the Redis hash field of a probe thread: "<uuid>:<java thread id>".
func (p *probe) field(tid string) string {
	GinkgoHelper()
	return p.id + ":" + p.do("jtid "+tid)
}

// close asks the probe to quit and kills it if it does not within 10 s.
func (p *probe) close() error {
	p.wmu.Lock()
	_, _ = io.WriteString(p.stdin, "quit\n")
	_ = p.stdin.Close()
	p.wmu.Unlock()
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return p.kill()
	}
}

// kill ends the process at once and waits for it.
func (p *probe) kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.exited
	return nil
}

// warmUpProbe runs every kind of lock once, so that class loading and the
// JIT of the first calls do not count in the first spec's wake-up times.
func warmUpProbe(p *probe) {
	GinkgoHelper()
	for _, kind := range []string{"", "fair", "read", "write", "fenced", "spin"} {
		tid := p.newTid()
		name := "warm-up:" + kind
		for range 3 {
			Expect(p.do(kind + "lock " + name + " " + tid)).To(Or(Equal("ok"), HavePrefix("token ")))
			p.ok(kind + "unlock " + name + " " + tid)
			Expect(p.do(kind + "trylock " + name + " " + tid + " 10 1000")).To(Or(Equal("ok"), HavePrefix("token ")))
			p.ok(kind + "unlock " + name + " " + tid)
		}
	}
}

// tailBuffer keeps the last max bytes written to it (the probe's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
