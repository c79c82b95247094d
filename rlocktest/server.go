// Package rlocktest helps users' Ginkgo/Gomega suites test code that uses
// goredisson: it starts and stops throwaway redis-server processes on free
// loopback ports (Start, StartForSpec), and offers Gomega matchers whose
// failure messages show the state in Redis:
//
//   - on a lock: BeLocked (anyone holds it), BeHeldBy(ctx) (ctx's owner
//     holds it), HaveTotalHoldCount(n) (the holds of all holders together,
//     not the caller's own count), HaveTTLWithin(d) (the remaining lease);
//   - on a Semaphore or PermitExpirableSemaphore: HaveAvailablePermits(n);
//     on a PermitExpirableSemaphore: HaveAcquiredPermits(n);
//   - on a CountDownLatch: HaveCount(n).
//
// It needs a redis-server binary on PATH (Debian: apt-get install
// redis-server), or its path in the REDIS_SERVER environment variable.
package rlocktest

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// Server is a throwaway redis-server process with persistence off, in its
// own temporary directory.
type Server struct {
	s *redistest.Server
}

// Start launches a redis-server on a free loopback port and waits until it
// answers PING. Extra redis-server arguments may be given, e.g.
// "--maxmemory", "10mb". Close it when done.
func Start(args ...string) (*Server, error) {
	s, err := redistest.Start(redistest.WithArgs(args...))
	if err != nil {
		return nil, err
	}
	return &Server{s: s}, nil
}

// StartForSpec starts a server from a Ginkgo node (BeforeEach, BeforeAll,
// BeforeSuite or an It), fails the spec when it cannot, and stops it when
// the node's scope ends (DeferCleanup).
func StartForSpec(args ...string) *Server {
	ginkgo.GinkgoHelper()
	s, err := Start(args...)
	if err != nil {
		ginkgo.Fail("rlocktest: starting redis-server: " + err.Error())
	}
	ginkgo.DeferCleanup(s.Close)
	return s
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.s.Addr }

// Pid returns the server's process id, 0 when it is not running.
func (s *Server) Pid() int { return s.s.Pid() }

// Client returns a new go-redis client for the server; close it when done.
func (s *Server) Client() *redis.Client { return s.s.Client() }

// FlushAll deletes every key, for a clean slate between specs.
func (s *Server) FlushAll(ctx context.Context) error {
	c := s.s.Client()
	defer c.Close()
	return c.FlushAll(ctx).Err()
}

// Kill stops the server with SIGKILL, as a crash would.
func (s *Server) Kill() error { return s.s.Kill() }

// Pause stops the server with SIGSTOP: connections stay open, nothing is
// answered, as a hung server or a long GC pause of its host.
func (s *Server) Pause() error { return s.s.Pause() }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.s.Resume() }

// Restart stops the server and starts it again on the same port, empty:
// persistence is off, so every key is lost.
func (s *Server) Restart() error { return s.s.Restart() }

// Close stops the server and removes its directory. Closing twice is
// harmless.
func (s *Server) Close() error { return s.s.Close() }
