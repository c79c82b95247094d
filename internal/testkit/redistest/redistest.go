// Package redistest starts throwaway redis-server processes on free loopback
// ports for tests and benchmarks, and stops them by pid.
//
// Each Server runs in its own temporary directory with persistence off, so a
// restart loses every key, as a crashed cache node would. The redis-server
// binary is looked up on PATH (override with the REDIS_SERVER environment
// variable).
package redistest

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process started by Start.
type Server struct {
	// Addr is the server's host:port on the loopback interface.
	Addr string
	// Port is the server's TCP port.
	Port int

	bin      string
	dir      string
	extra    []string
	sentinel string // sentinel.conf text: run as a Sentinel
	tls      bool   // TLS only (WithTLS)
	roots    *x509.CertPool

	mu  sync.Mutex
	cmd *exec.Cmd
	out bytes.Buffer
	// tomb holds the port of a server Kill or Stop ended until it starts
	// again or closes: holdPort's descriptor plus one (0: none).
	tomb int
}

// Option changes how Start runs the server.
type Option func(*Server)

// WithArgs adds command-line arguments, e.g. "--cluster-enabled", "yes".
func WithArgs(args ...string) Option {
	return func(s *Server) { s.extra = append(s.extra, args...) }
}

// WithSentinelMonitor runs the process as a Redis Sentinel (redis-server
// --sentinel) monitoring the primary at primaryAddr under name, with the
// given quorum, and quick failure detection for tests.
func WithSentinelMonitor(name, primaryAddr string, quorum int) Option {
	return func(s *Server) {
		host, port, _ := net.SplitHostPort(primaryAddr)
		s.sentinel = fmt.Sprintf("sentinel monitor %s %s %s %d\n"+
			"sentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 5000\n"+
			"sentinel parallel-syncs %s 1\n", name, host, port, quorum, name, name, name)
	}
}

// WithPort runs the server on a fixed port instead of a free one.
func WithPort(port int) Option {
	return func(s *Server) { s.Port = port }
}

// Binary returns the path of the redis-server executable, or an error saying
// how to install it.
func Binary() (string, error) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redistest: redis-server not found on PATH; install it with: apt-get install -y redis-server redis-tools (Debian/Ubuntu, as root), or set REDIS_SERVER=/path/to/redis-server (%w)", err)
	}
	return p, nil
}

// Start launches a redis-server on a free loopback port and waits until it
// answers PING.
func Start(opts ...Option) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	for _, o := range opts {
		o(s)
	}
	fixed := s.Port != 0
	for attempt := 0; ; attempt++ {
		if !fixed {
			if s.Port, err = FreePort(); err != nil {
				return nil, err
			}
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
		if err = s.start(); err == nil {
			return s, nil
		}
		if fixed || attempt == 4 {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	common := []string{
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--loglevel", "warning",
	}
	var args []string
	if s.sentinel != "" {
		// A Sentinel rewrites its config file; a restart keeps what it
		// learnt.
		conf := filepath.Join(s.dir, "sentinel.conf")
		if _, err := os.Stat(conf); err != nil {
			if err := os.WriteFile(conf, []byte(s.sentinel), 0o600); err != nil {
				return err
			}
		}
		args = append([]string{conf, "--sentinel"}, common...)
	} else {
		args = append(common, "--save", "", "--appendonly", "no")
	}
	if s.tls {
		t, err := s.tlsArgs()
		if err != nil {
			return err
		}
		args = append(args, t...) // its --port 0 overrides the first
	}
	args = append(args, s.extra...)
	cmd := exec.Command(s.bin, args...)
	s.mu.Lock()
	s.out.Reset()
	cmd.Stdout = &s.out
	cmd.Stderr = &s.out
	s.mu.Unlock()
	// Own process group: a Ctrl-C of the test run does not reach the server
	// before the test's cleanup stops it.
	cmd.SysProcAttr = ChildAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", s.bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()

	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond, TLSConfig: s.TLSConfig()})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			s.mu.Lock()
			out := s.out.String()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("redistest: redis-server on port %d exited (%v): %s", s.Port, err, out)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			// Hand the exit notification to Stop.
			go func() { s.reap(cmd, <-exited) }()
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("redistest: redis-server on port %d did not answer PING: %w", s.Port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reap records that cmd has exited.
func (s *Server) reap(cmd *exec.Cmd, _ error) {
	s.mu.Lock()
	if s.cmd == cmd {
		s.cmd = nil
	}
	s.mu.Unlock()
}

// Pid returns the server's process id, or 0 when it is not running.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Client returns a new go-redis client for the server; the caller closes it.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, TLSConfig: s.TLSConfig()})
}

// Kill sends SIGKILL to the server and waits until it has exited.
func (s *Server) Kill() error { return s.signal(syscall.SIGKILL) }

// Stop sends SIGTERM to the server and waits until it has exited
// (SIGKILL after 5 s).
func (s *Server) Stop() error { return s.signal(syscall.SIGTERM) }

// Pause stops the server's process with SIGSTOP; Resume continues it.
func (s *Server) Pause() error {
	pid := s.Pid()
	if pid == 0 {
		return errors.New("redistest: server not running")
	}
	return syscall.Kill(pid, syscall.SIGSTOP)
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() error {
	pid := s.Pid()
	if pid == 0 {
		return errors.New("redistest: server not running")
	}
	return syscall.Kill(pid, syscall.SIGCONT)
}

func (s *Server) signal(sig syscall.Signal) error {
	pid := s.Pid()
	if pid == 0 {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGCONT) // a paused server cannot act on SIGTERM
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("redistest: signal pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Pid() != 0 {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(5 * time.Second)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.mu.Lock()
	if s.tomb == 0 {
		s.tomb = holdPort(s.Port) + 1
	}
	s.mu.Unlock()
	return nil
}

// releaseTomb frees the port held since the server stopped.
func (s *Server) releaseTomb() {
	s.mu.Lock()
	fd := s.tomb - 1
	s.tomb = 0
	s.mu.Unlock()
	releasePort(fd)
}

// Restart stops the server and starts it again on the same port. Every key
// is lost: persistence is off.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start()
}

// Start starts a stopped server again on its port.
func (s *Server) Start() error {
	if s.Pid() != 0 {
		return errors.New("redistest: server already running")
	}
	s.releaseTomb()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond) // the port may linger briefly
	}
	return err
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	err := s.Stop()
	s.releaseTomb()
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

// Dir returns the server's working directory.
func (s *Server) Dir() string { return filepath.Clean(s.dir) }
