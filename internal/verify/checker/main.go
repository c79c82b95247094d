// Command checker is a model-based checker of goredisson's exclusive
// single-key locks (Lock, FencedLock, FairLock, SpinLock and the write side
// of a ReadWriteLock), kept permits (PermitExpirableSemaphore.AcquireKept)
// and leader elections (package election): it runs seeded random sequences
// of calls, Redis revocations (ForceUnlock, FLUSHALL, a restart), Redis
// stalls that lose single attempts' replies, and pauses, stops and kills of
// client processes against a real redis-server, through 2-3 goredisson
// Clients (some in processes of their own, each on a watchdog timeout of
// its own in some sequences) with two owners each, or 2-3 candidates, and
// checks after every step, against a reference model, that at most one
// owner is inside (one leader leads), that hold counts agree, that every
// call returns what the model allows (HoldCount never reports a hold its
// owner was told it did not get), that no LostContext (leadership context)
// looks live after another owner holds the lock (a later term began), even
// at a paused holder's first look after it resumes, and that a successor
// waits out its predecessor's lease. A failure prints its seed and a
// shortened sequence that reproduces it. See docs/checker.md.
//
//	go run ./internal/verify/checker -d 10m
//	go test -race -run TestChecker ./internal/verify/checker -checker 1m -v   (what CI runs)
//	go test -run TestChecker ./internal/verify/checker -v -checker.seed 42
//	go test -run TestChecker ./internal/verify/checker -v -checker.replay 'Lock wd=2s clients=ip; c0o0 locklease 1.5s; ...'
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if agentMode() {
		os.Exit(agentMain())
	}
	var (
		cfg  Config
		ops  string
		seed int64
	)
	flag.DurationVar(&cfg.Duration, "d", time.Minute, "generate sequences for this long")
	flag.IntVar(&cfg.Sequences, "n", 0, "run this many sequences instead (0: for -d)")
	flag.Int64Var(&seed, "seed", 0, "seed of the first sequence (0: from the clock); with -n 1, rerun that sequence")
	flag.StringVar(&cfg.Replay, "replay", "", "replay this sequence (as printed on a failure)")
	flag.StringVar(&ops, "ops", "all", `ops to generate: "all", a list ("trylock,unlock,sleep") or ops to leave out ("-extend,-restart")`)
	flag.BoolVar(&cfg.LeaseCheck, "lease", true, "also check the lock key's expiry against what the holds need")
	flag.IntVar(&cfg.ShrinkRuns, "shrink", 40, "replays spent shortening a failing sequence (0: none)")
	flag.DurationVar(&cfg.ShrinkTime, "shrink-time", 10*time.Minute, "time spent shortening a failing sequence")
	flag.IntVar(&cfg.StopAfter, "stop", 0, "stop after this many failing sequences (0: run on)")
	flag.BoolVar(&cfg.Verbose, "v", false, "print every step")
	flag.StringVar(&cfg.Fence, "fence", "auto", `the Clients' lost-call fence: "auto" (CLIENT KILL where it can, rlock.FenceAuto) or "floor" (rlock.FenceFloor)`)
	fams := flag.String("families", "all", `families of sequences, in turn by seed: "all" or a list of locks, stalls, kept, election`)
	flag.Parse()
	var err error
	if cfg.Ops, err = parseOps(ops); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if cfg.Fence, err = parseFence(cfg.Fence); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if cfg.Families, err = parseFamilies(*fams); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg.Seed = seed
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano() % 1e12
	}
	cfg.Out = os.Stdout
	res, err := Run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checker:", err)
		os.Exit(1)
	}
	if len(res.Failures) > 0 {
		os.Exit(1)
	}
}
