package main

import (
	"flag"
	"os"
	"testing"
	"time"
)

var (
	checkFor   = flag.Duration("checker", 0, "run TestChecker for this long (0 skips it, unless -checker.seed or -checker.replay is set)")
	checkSeed  = flag.Int64("checker.seed", 0, "seed of the first sequence; alone (without -checker), rerun just that sequence")
	checkRepl  = flag.String("checker.replay", "", "replay this sequence (as a failure prints it)")
	checkOps   = flag.String("checker.ops", "all", `ops to generate: "all", a list, or ops to leave out ("-extend,-restart")`)
	checkLease = flag.Bool("checker.lease", true, "also check the lock key's expiry against what the holds need")
	checkShr   = flag.Int("checker.shrink", 40, "replays spent shortening a failing sequence")
	checkStop  = flag.Int("checker.stop", 0, "stop after this many failing sequences (0: run on)")
	checkFam   = flag.String("checker.families", "all", `families of sequences, in turn by seed: "all" or a list of locks, stalls, kept, election`)
	checkVerb  = flag.Bool("checker.v", false, "print every step")
	checkFence = flag.String("checker.fence", "auto", `the Clients' lost-call fence: "auto" (rlock.FenceAuto) or "floor" (rlock.FenceFloor)`)
)

func TestMain(m *testing.M) {
	if agentMode() {
		os.Exit(agentMain())
	}
	os.Exit(m.Run())
}

// TestChecker runs the model-based checker for -checker (CI: 1m), or one
// sequence (-checker.seed, -checker.replay), and fails on any violation.
func TestChecker(t *testing.T) {
	if *checkFor <= 0 && *checkSeed == 0 && *checkRepl == "" {
		t.Skip("checker: run with -checker 1m (or go run ./internal/verify/checker -d 10m)")
	}
	ops, err := parseOps(*checkOps)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := parseFamilies(*checkFam)
	if err != nil {
		t.Fatal(err)
	}
	fence, err := parseFence(*checkFence)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Fence: fence, Duration: *checkFor, Seed: *checkSeed, Replay: *checkRepl, Ops: ops, LeaseCheck: *checkLease,
		ShrinkRuns: *checkShr, ShrinkTime: 10 * time.Minute, StopAfter: *checkStop, Verbose: *checkVerb, Out: os.Stdout, Families: fams}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano() % 1e12
	} else if *checkFor <= 0 {
		cfg.Sequences = 1
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Failures); n > 0 {
		t.Fatalf("%d violations (each printed above with its seed and a shortened sequence)", n)
	}
	if res.Steps == 0 {
		t.Fatal("no steps ran")
	}
}

func TestSequenceText(t *testing.T) {
	for _, text := range []string{
		"WriteLock wd=6s clients=ipp; c1o0 locklease 1.5s; c0o1 lock; c2o1 trylock wd; c2o0 trylock 12s; c0 force; flushall; restart; c1 pause 2.3s; sleep 1.2s; c0o0 extend 1s; c0o0 holdcount; c1o1 unlock",
		"Lock wd=2s,6s clients=ip rt=1s; c0o1 lost 12s; c0o1 isheld; stall 1.5s; c1 stop; c0o0 trylock wd; c1 cont",
		"Kept wd=2s clients=pi; c0o0 trylock wd; c0 stop; sleep 2.5s; c1o1 lock; c0 cont; c1o1 unlock",
		"Election wd=1s,6s,2s clients=ppp max=6s; c0 campaign; c1 campaign; renewal; c0 force; c2 leader; c1 stop; sleep 3s; c1 cont; c0 cancel; c1 resign; c2 kill; c0 close",
	} {
		q, err := ParseSequence(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.String(); got != text {
			t.Fatalf("round trip:\n got %s\nwant %s", got, text)
		}
	}
	for _, bad := range []string{
		"Lock wd=2s clients=ip; c2o0 lock",     // no Client 2
		"Lock wd=2s clients=ip; c0o2 lock",     // no owner 2
		"Lock wd=2s clients=ip; c0o0 trylock",  // no lease
		"Lock wd=2s clients=ip; c0o0 jump",     // no such op
		"Lock wd=2s clients=ix",                // bad Client
		"ReadLock wd=2s clients=ip",            // not a modelled kind
		"Lock wd=10ms clients=ip",              // watchdog too short
		"Lock wd=2s clients=ip; sleep -1s",     // bad duration
		"Lock wd=2s clients=ip; c0o0 lock 2s",  // lock takes no lease
		"Lock wd=2s clients=ip; c0 pause",      // pause needs a duration
		"Lock wd=2s clients=ip; c0 campaign",   // an election's step
		"Election wd=2s clients=pp; c0o0 lock", // an election has no owners
		"Election wd=2s clients=pp; stall 1s",  // no stalls in elections
		"Lock wd=2s,6s clients=ipp",            // a timeout per Client
		"Lock wd=2s clients=ip rt=0s",          // bad read timeout
		"Lock wd=2s clients=ip; c0o0 stop",     // stop is a Client's
	} {
		if _, err := ParseSequence(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseOps(t *testing.T) {
	all, err := parseOps("all")
	if err != nil || len(all) != len(opNames) || all.String() != "all" {
		t.Fatalf("all: %v %v", all, err)
	}
	no, err := parseOps("-extend,-restart")
	if err != nil || no["extend"] || no["restart"] || !no["trylock"] || no.String() != "-extend,-restart" {
		t.Fatalf("-extend,-restart: %v %v", no, err)
	}
	only, err := parseOps("trylock,unlock")
	if err != nil || !only["trylock"] || only["lock"] {
		t.Fatalf("trylock,unlock: %v %v", only, err)
	}
	for _, bad := range []string{"trylock,-unlock", "jump", "unlock,sleep"} {
		if _, err := parseOps(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
