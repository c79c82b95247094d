// Command naivelocks replays the seeds' ladder of naive Redis locks next to
// goredisson on the same scenario: a holder that crashes (SETNX + DEL,
// SETNX then EXPIRE), a holder that outlasts its TTL and deletes the next
// owner's lock (SET NX PX + DEL), and a release whose check and delete are
// two commands (GET, then DEL). Each line says what went wrong and what
// goredisson did instead. Exits 1 if goredisson failed a scenario.
//
//	go run ./examples/naivelocks [--redis ADDR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/goredisson/goredisson/internal/embedded"
	"github.com/goredisson/goredisson/internal/scenario"
)

func main() {
	addr := flag.String("redis", "", "Redis address (default: start a private one)")
	ttl := flag.Duration("ttl", 300*time.Millisecond, "lease of the locks in the scenarios")
	flag.Parse()
	if err := run(*addr, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "naivelocks:", err)
		os.Exit(1)
	}
}

func run(addr string, ttl time.Duration) error {
	ctx := context.Background()
	r, err := embedded.Open(ctx, addr)
	if err != nil {
		return err
	}
	defer r.Close()
	outcomes, err := scenario.Ladder(ctx, r.Addr, ttl)
	if err != nil {
		return err
	}
	failed := false
	for _, o := range outcomes {
		fmt.Printf("%-21s %-35s %s\n", o.Scenario, o.Lock, o.Verdict)
		if strings.HasPrefix(o.Lock, scenario.Goredisson) && !o.OK {
			failed = true
		}
	}
	if failed {
		return fmt.Errorf("goredisson failed a scenario")
	}
	return nil
}
