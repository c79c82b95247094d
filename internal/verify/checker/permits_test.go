package main

import (
	"flag"
	"os"
	"testing"
	"time"
)

var (
	permitsFor    = flag.Duration("permits", 0, "run TestPermits for this long (0 skips it, unless -permits.seed is set)")
	permitsSeed   = flag.Int64("permits.seed", 0, "seed of the first round; alone (without -permits), rerun just that round")
	permitsRounds = flag.Int("permits.rounds", 0, "run this many rounds (instead of -permits)")
	permitsKind   = flag.String("permits.kind", "both", "both, Semaphore or PermitExpirableSemaphore")
	permitsActive = flag.Duration("permits.active", 0, "how long a round's calls and faults run (0: 6-9 s, from the seed)")
	permitsVerb   = flag.Bool("permits.v", false, "print every call and fault")
)

// TestPermits runs the permit-conservation property check (docs/checker.md,
// "Permits") for -permits (CI: 1m), or the round of -permits.seed, and
// fails on any violation.
func TestPermits(t *testing.T) {
	if *permitsFor <= 0 && *permitsSeed == 0 && *permitsRounds == 0 {
		t.Skip("permits: run with -permits 1m (or -permits.seed N to rerun a round)")
	}
	cfg := PermitsConfig{Duration: *permitsFor, Rounds: *permitsRounds, Seed: *permitsSeed, Kind: *permitsKind,
		Active: *permitsActive, Verbose: *permitsVerb, Out: os.Stdout}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano() % 1e9
	} else if *permitsFor <= 0 && cfg.Rounds == 0 {
		cfg.Rounds = 1
	}
	res, err := RunPermits(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Failures); n > 0 {
		t.Fatalf("%d rounds broke permit conservation (each printed above with its seed)", n)
	}
	if res.Calls == 0 || res.Checks == 0 {
		t.Fatalf("nothing ran: %d calls, %d checks", res.Calls, res.Checks)
	}
}
