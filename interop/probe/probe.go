package probe

import (
	"bufio"
	"context"
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

	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// ClassPathEnv names the environment variable Start reads the class path
// from when Config.ClassPath is empty: the Redisson jar and its
// dependencies, joined with the platform's list separator (':' on Linux),
// as `javac -cp` takes them.
const ClassPathEnv = "GOREDISSON_REDISSON_CLASSPATH"

// VersionEnv names the environment variable Start reads
// Config.RedissonVersion from when it is empty: for a class path whose jar
// has no manifest naming its release (a build from source).
const VersionEnv = "GOREDISSON_REDISSON_VERSION"

// Config is how the probe's RedissonClient is set up: as close to the
// porter's Java service as the options go.
type Config struct {
	// Addrs are the Redis addresses ("host:port", or a redis:// or
	// rediss:// URI): one for useSingleServer, several (seed nodes) for
	// useClusterServers. Required.
	Addrs []string
	// Cluster makes a single address a Cluster seed node.
	Cluster bool
	// ClassPath is the Redisson jar and its dependencies; empty:
	// $GOREDISSON_REDISSON_CLASSPATH.
	ClassPath string
	// RedissonVersion is the release on the class path ("4.7.0"). Start
	// fails when the jar's manifest names another; RlockOptions passes it
	// to rlock.WithRedissonVersion. Empty: $GOREDISSON_REDISSON_VERSION,
	// else the jar's manifest's, if any.
	RedissonVersion string
	// NamePrefix, when set, gives the client a NameMapper that maps a name
	// n to NamePrefix+n (and unmaps it back); RlockOptions passes the same
	// pair to rlock.WithNameMapper.
	NamePrefix string
	// ShardedSubscription is a Cluster's shardedSubscriptionMode ("auto",
	// "on" or "off"; Redisson 3.29 and later); empty: Redisson's default.
	// RlockOptions passes "on" and "off" to rlock.WithShardedPubSub.
	ShardedSubscription string
	// WatchdogTimeout is the client's lockWatchdogTimeout; 0: Redisson's
	// 30 s.
	WatchdogTimeout time.Duration
	// CacheDir keeps the compiled probe, one directory per source and
	// class path; empty: goredisson-probe in os.UserCacheDir (or the
	// temporary directory).
	CacheDir string
	// JavaHome holds bin/java and bin/javac; empty: $JAVA_HOME, else the
	// PATH's.
	JavaHome string
	// JVMArgs are extra java arguments ("-Xmx256m", system properties).
	JVMArgs []string
	// Stderr, if set, gets the JVM's standard error (Redisson's log);
	// the last 16 KiB of it are kept for errors either way.
	Stderr io.Writer
}

// Probe is a running JVM with one RedissonClient, made by Start. Its
// methods may be called from any goroutine.
type Probe struct {
	cfg     Config
	id      string
	version string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *tail

	wmu  sync.Mutex // one request line at a time
	seq  atomic.Uint64
	mu   sync.Mutex
	wait map[string]chan reply

	exited  chan struct{} // closed once the JVM has exited and been waited for
	exitErr error         // why, once exited is closed
	closed  atomic.Bool
	once    sync.Once
}

type reply struct {
	ok   bool
	text string
}

// Start compiles the probe (once per source and class path: later starts
// reuse the cached classes), runs it, and returns once its RedissonClient
// has connected, or ctx ends. Without a class path it returns
// ErrNotConfigured. Close it when done.
func Start(ctx context.Context, cfg Config) (*Probe, error) {
	if cfg.ClassPath == "" {
		cfg.ClassPath = os.Getenv(ClassPathEnv)
	}
	if strings.TrimSpace(cfg.ClassPath) == "" {
		return nil, ErrNotConfigured
	}
	if cfg.RedissonVersion == "" {
		cfg.RedissonVersion = os.Getenv(VersionEnv)
	}
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("probe: Config.Addrs is empty")
	}
	switch strings.ToLower(cfg.ShardedSubscription) {
	case "", "auto", "on", "off":
	default:
		return nil, fmt.Errorf("probe: ShardedSubscription %q is not auto, on or off", cfg.ShardedSubscription)
	}
	if cfg.ShardedSubscription != "" && !cfg.Cluster && len(cfg.Addrs) < 2 {
		return nil, errors.New("probe: ShardedSubscription is a Cluster setting")
	}
	classes, err := compile(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p := &Probe{cfg: cfg, wait: map[string]chan reply{}, stderr: &tail{max: 16 << 10}, exited: make(chan struct{})}
	if err := p.run(ctx, classes); err != nil {
		return nil, err
	}
	if v := cfg.RedissonVersion; v != "" && p.version != "unknown" && !sameRelease(v, p.version) {
		_ = p.Close()
		return nil, fmt.Errorf("probe: Config.RedissonVersion is %s but the class path holds Redisson %s", v, p.version)
	}
	return p, nil
}

// sameRelease compares "4.7.0" with "redisson-4.7.0" or "4.7.0-SNAPSHOT".
func sameRelease(want, got string) bool {
	norm := func(v string) string {
		v = strings.TrimPrefix(v, "redisson-")
		v, _, _ = strings.Cut(v, "-")
		return v
	}
	w, g := norm(want), norm(got)
	return w == g || strings.HasPrefix(g, w+".")
}

// run starts the JVM and reads its "ready" line.
func (p *Probe) run(ctx context.Context, classes string) error {
	java, err := javaTool(p.cfg, "java")
	if err != nil {
		return err
	}
	args := append([]string{"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"}, p.cfg.JVMArgs...)
	args = append(args, "-cp", classes+string(os.PathListSeparator)+p.cfg.ClassPath, "RedissonProbe",
		"--addr", strings.Join(p.cfg.Addrs, ","))
	if p.cfg.Cluster {
		args = append(args, "--cluster")
	}
	if p.cfg.NamePrefix != "" {
		args = append(args, "--prefix", escape(p.cfg.NamePrefix))
	}
	if p.cfg.ShardedSubscription != "" {
		args = append(args, "--sharded", strings.ToLower(p.cfg.ShardedSubscription))
	}
	if p.cfg.WatchdogTimeout > 0 {
		args = append(args, "--watchdog", strconv.FormatInt(p.cfg.WatchdogTimeout.Milliseconds(), 10))
	}
	p.cmd = exec.Command(java, args...)
	p.cmd.SysProcAttr = redistest.ChildAttr() // the JVM dies with the test process
	var w io.Writer = p.stderr
	if p.cfg.Stderr != nil {
		w = io.MultiWriter(p.stderr, p.cfg.Stderr)
	}
	p.cmd.Stderr = w
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("probe: start %s: %w", java, err)
	}
	ready := make(chan string, 1)
	go p.read(stdout, ready)
	select {
	case line := <-ready:
		f := strings.Fields(line)
		p.id, p.version = f[0], strings.Join(f[1:], " ")
		return nil
	case <-p.exited:
		if strings.Contains(p.stderr.String(), "RedissonProbe$Unsupported") {
			// a Config setting the release lacks (ShardedSubscription before 3.29)
			return fmt.Errorf("probe: %w: %s", errors.ErrUnsupported, lastLine(p.stderr.String(), "RedissonProbe$Unsupported"))
		}
		return fmt.Errorf("probe: the JVM exited before its client connected (%v): %s", p.exitErr, p.stderr)
	case <-ctx.Done():
		_ = p.kill()
		return fmt.Errorf("probe: no connected client before the context ended (%w): %s", context.Cause(ctx), p.stderr)
	}
}

// lastLine returns the last line of text that contains s.
func lastLine(text, s string) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return strings.TrimSpace(lines[i])
		}
	}
	return text
}

// read dispatches the JVM's stdout lines until it ends, then waits for the
// process and fails every call still waiting. Lines that are neither the
// ready line nor an answer (a logger writing to stdout) are skipped.
func (p *Probe) read(stdout io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "ready "); ok && len(strings.Fields(rest)) >= 2 {
			select {
			case ready <- rest:
			default:
			}
			continue
		}
		seq, rest, _ := strings.Cut(line, " ")
		status, text, _ := strings.Cut(rest, " ")
		if _, err := strconv.ParseUint(seq, 10, 64); err != nil || (status != "ok" && status != "err") {
			continue
		}
		p.mu.Lock()
		ch := p.wait[seq]
		delete(p.wait, seq)
		p.mu.Unlock()
		if ch != nil {
			ch <- reply{ok: status == "ok", text: text}
		}
	}
	p.exitErr = p.cmd.Wait()
	if p.exitErr == nil {
		p.exitErr = errors.New("exit status 0")
	}
	close(p.exited)
}

// ID returns the Redisson client's id: the UUID of its lock hash fields
// ("<id>:<thread id>").
func (p *Probe) ID() string { return p.id }

// Version returns the Redisson release on the class path, as its jar's
// manifest names it ("4.7.0"), or "unknown".
func (p *Probe) Version() string { return p.version }

// Config returns the configuration the probe runs with (ClassPath filled
// in from the environment when it was empty).
func (p *Probe) Config() Config { return p.cfg }

// RlockOptions returns the goredisson options that configure a Client as
// the probe's Redisson is: rlock.WithRedissonVersion (Config's release, or
// the jar's), rlock.WithNameMapper for NamePrefix, rlock.WithShardedPubSub
// for ShardedSubscription "on" or "off".
func (p *Probe) RlockOptions() []rlock.Option {
	var opts []rlock.Option
	v := p.cfg.RedissonVersion
	if v == "" && p.version != "unknown" {
		v = p.version
	}
	if v != "" {
		opts = append(opts, rlock.WithRedissonVersion(strings.TrimPrefix(v, "redisson-")))
	}
	if prefix := p.cfg.NamePrefix; prefix != "" {
		opts = append(opts, rlock.WithNameMapper(
			func(n string) string { return prefix + n },
			func(n string) string { return strings.TrimPrefix(n, prefix) }))
	}
	switch strings.ToLower(p.cfg.ShardedSubscription) {
	case "on":
		opts = append(opts, rlock.WithShardedPubSub(true))
	case "off":
		opts = append(opts, rlock.WithShardedPubSub(false))
	}
	return opts
}

// Close shuts the client down and ends the JVM (killed after 10 s). It is
// idempotent; calls still waiting return ErrClosed.
func (p *Probe) Close() error {
	if p == nil || p.cmd == nil {
		return nil // not started
	}
	p.once.Do(func() {
		p.closed.Store(true)
		p.wmu.Lock()
		_, _ = io.WriteString(p.stdin, "0 - quit\n")
		_ = p.stdin.Close()
		p.wmu.Unlock()
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.kill()
		}
	})
	return nil
}

func (p *Probe) kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.exited
	return nil
}

// call sends one request on thread (the owner's encoded name, or "-") and
// waits for its answer. When ctx ends first, the request is cancelled in
// the JVM (its thread interrupted, or the request dropped if it has not
// started) and call returns ctx's error.
func (p *Probe) call(ctx context.Context, thread, op, verb string, args ...string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("probe: %s: %w", op, context.Cause(ctx))
	}
	seq := strconv.FormatUint(p.seq.Add(1), 10)
	ch := make(chan reply, 1)
	p.mu.Lock()
	p.wait[seq] = ch
	p.mu.Unlock()
	words := append([]string{seq, thread, verb}, args...)
	if err := p.send(strings.Join(words, " ")); err != nil {
		p.forget(seq)
		return "", fmt.Errorf("probe: %s: %w", op, err)
	}
	select {
	case r := <-ch:
		if !r.ok {
			e := &JavaError{Op: op, Chain: parseJavaError(r.text)}
			if name, ok := strings.CutPrefix(thread, "t."); ok {
				e.Thread = unescape(name)
			}
			return "", e
		}
		return r.text, nil
	case <-ctx.Done():
		p.forget(seq)
		_ = p.send("0 - cancel " + seq)
		return "", fmt.Errorf("probe: %s: %w", op, context.Cause(ctx))
	case <-p.exited:
		return "", fmt.Errorf("probe: %s: %w (the JVM exited: %v): %s", op, ErrClosed, p.exitErr, p.stderr)
	}
}

func (p *Probe) forget(seq string) {
	p.mu.Lock()
	delete(p.wait, seq)
	p.mu.Unlock()
}

func (p *Probe) send(line string) error {
	if p.closed.Load() {
		return ErrClosed
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return nil
}

// escape percent-encodes the characters the line protocol splits on (and
// '%' itself), so that a word may hold any character.
func escape(s string) string {
	if !strings.ContainsAny(s, "% ,\t\r\n") && s != "" {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%', ' ', ',', '\t', '\r', '\n':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescape undoes escape.
func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
