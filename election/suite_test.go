package election_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/internal/testkit/suite"
	"github.com/goredisson/goredisson/rlock"
)

// election's behaviour, against real redis-server processes (one per
// suite process) and leaders in helper OS processes that are stopped with
// SIGSTOP.

// redisAddr is the address of the server of the package's examples (the
// specs have their suite's own).
var redisAddr string

func TestMain(m *testing.M) {
	spectest.RunHelper(helpers)
	srv, err := redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "election tests need redis-server:", err)
		os.Exit(1)
	}
	redisAddr = srv.Addr
	code := m.Run()
	_ = srv.Close()
	os.Exit(code)
}

func TestElection(t *testing.T) {
	suite.RunParallel(t, "election", 2)
}

var _ = BeforeSuite(spectest.StartServer)

var helpers = map[string]spectest.HelperFunc{
	// leader campaigns on the lock HELPER_LOCK with the value HELPER_VALUE,
	// prints "leader <unix ns>" once it leads and "lost <unix ns> <cause>"
	// when its leadership context ends, then stays until killed.
	"leader": func(_ context.Context, c *rlock.Client) error {
		rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("HELPER_REDIS")})
		var opts []election.Option
		if ms, err := strconv.Atoi(os.Getenv("HELPER_WATCHDOG_MS")); err == nil {
			// a first election waits this candidate's own lease
			opts = append(opts, election.WithMaxLease(time.Duration(ms)*time.Millisecond))
		}
		e, err := election.New(rdb, c.NewLock(os.Getenv("HELPER_LOCK")), opts...)
		if err != nil {
			return err
		}
		lead, err := e.Campaign(context.Background(), os.Getenv("HELPER_VALUE"))
		if err != nil {
			return err
		}
		fmt.Println("leader", time.Now().UnixNano())
		<-lead.Done()
		fmt.Println("lost", time.Now().UnixNano(), context.Cause(lead))
		select {}
	},
	// shutdown is docs/election.md's example as a program: it campaigns
	// on HELPER_LOCK with HELPER_VALUE until SIGTERM, prints "campaign
	// <error>" if Campaign fails, else "leader <unix ns>", runs (waits on
	// its leadership context) until SIGTERM or a loss, resigning at
	// SIGTERM, prints "stopped <unix ns> <cause>" and exits.
	"shutdown": func(ctx context.Context, c *rlock.Client) error {
		rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("HELPER_REDIS")})
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		ms, err := strconv.Atoi(os.Getenv("HELPER_WATCHDOG_MS"))
		if err != nil {
			return err
		}
		// Every candidate of the spec runs on this timeout or a shorter one.
		e, err := election.New(rdb, c.NewLock(os.Getenv("HELPER_LOCK")), election.WithMaxLease(time.Duration(ms)*time.Millisecond))
		if err != nil {
			return err
		}
		lead, err := e.Campaign(ctx, os.Getenv("HELPER_VALUE"))
		if err != nil {
			fmt.Println("campaign", err)
			return nil
		}
		fmt.Println("leader", time.Now().UnixNano())
		resign := func() { _ = e.Resign(context.Background()) }
		defer resign()
		defer context.AfterFunc(ctx, resign)()
		<-lead.Done() // the jobs
		fmt.Println("stopped", time.Now().UnixNano(), context.Cause(lead))
		return nil
	},
}
