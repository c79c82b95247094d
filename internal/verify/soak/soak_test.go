package main

import (
	"flag"
	"os"
	"testing"
	"time"
)

var soakFor = flag.Duration("soak", 0, "run TestSoak for this long (0 skips it)")

// TestSoak runs the soak for -soak (CI: 1m) and fails on any violation.
func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("soak: run with -soak 1m (or go run ./internal/verify/soak -d 10m)")
	}
	res, err := Run(Config{Duration: *soakFor, Workers: 48, Names: 48, Seed: time.Now().UnixNano()}, os.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if res.Violations != 0 {
		t.Fatalf("%d violations", res.Violations)
	}
	if res.Acquisitions == 0 {
		t.Fatal("no acquisitions")
	}
	total := 0
	for _, n := range res.Faults {
		total += n
	}
	if total == 0 {
		t.Fatal("no faults injected")
	}
}
