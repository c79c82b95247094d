// Command elector runs three instances ("pods") of a job scheduler that must
// run on one instance at a time, with package election: each pod campaigns,
// the leader runs jobs while its leadership context lives, and then either
// resigns (a rolling restart: the next pod leads at once) or crashes
// without resigning (its Client closes: the next pod leads once the crashed
// pod's lease has run out; a killed process would add one lease more, see
// docs/election.md). It prints each term and exits 1 if two
// pods ever ran jobs at the same time.
//
//	go run ./examples/elector [--redis ADDR] [--lease 1s]
//
// Without --redis it starts a throwaway redis-server (it must be on PATH, or
// named by REDIS_SERVER) and stops it at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

const lockName = "elector:jobs"

func main() {
	addr := flag.String("redis", "", "Redis address (default: start a throwaway redis-server)")
	lease := flag.Duration("lease", time.Second, "the pods' watchdog lease")
	flag.Parse()
	if err := run(*addr, *lease); err != nil {
		fmt.Fprintln(os.Stderr, "elector:", err)
		os.Exit(1)
	}
}

func run(addr string, lease time.Duration) error {
	if addr == "" {
		srv, err := rlocktest.Start()
		if err != nil {
			return err
		}
		defer srv.Close()
		addr = srv.Addr()
	}
	ctx := context.Background()
	if err := ping(ctx, addr); err != nil {
		return err
	}
	var (
		running  atomic.Int32 // pods running a job now
		overlaps atomic.Int32 // jobs that found another pod's job running
		terms    atomic.Int32
		mu       sync.Mutex
		lines    []string
		wg       sync.WaitGroup
		errs     = make(chan error, 3) // a pod's failure
	)
	start := time.Now()
	for i := 1; i <= 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("pod-%d", i)
			if err := func() error {
				rdb := redis.NewClient(&redis.Options{Addr: addr})
				defer rdb.Close()
				client, err := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(lease))
				if err != nil {
					return err
				}
				defer client.Close() // a second Close, after a crash, returns nil
				// Every pod runs on lease: a first election waits that, not 30 s.
				e, err := election.New(rdb, client.NewLock(lockName), election.WithMaxLease(lease))
				if err != nil {
					return err
				}
				lead, err := e.Campaign(ctx, name) // blocks until this pod leads
				if err != nil {
					return err
				}
				term := terms.Add(1)
				jobs := 0
				for range 3 { // run jobs while leading
					if lead.Err() != nil {
						break
					}
					if running.Add(1) > 1 {
						overlaps.Add(1)
					}
					time.Sleep(100 * time.Millisecond)
					running.Add(-1)
					jobs++
				}
				how := "resigned"
				if term == 2 {
					how = "crashed without resigning"
					_ = client.Close() // its lease runs out in Redis
				} else if err := e.Resign(ctx); err != nil {
					return err
				}
				mu.Lock()
				lines = append(lines, fmt.Sprintf("term %d: %s led from %.1fs, ran %d jobs, %s",
					term, name, time.Since(start).Seconds(), jobs, how))
				mu.Unlock()
				return nil
			}(); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	cleanup := redis.NewClient(&redis.Options{Addr: addr})
	defer cleanup.Close()
	_ = cleanup.Del(ctx, lockName+":leader").Err()
	fmt.Println("terms:", terms.Load())
	fmt.Println("at most one leader at a time:", overlaps.Load() == 0)
	if overlaps.Load() != 0 {
		return fmt.Errorf("%d jobs ran beside another pod's", overlaps.Load())
	}
	return nil
}

// ping checks that Redis answers at addr.
func ping(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s is unreachable: %w", addr, err)
	}
	return nil
}
