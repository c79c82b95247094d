package main

import (
	"os"
	"testing"
)

// Run is run for the specs (package main_test): rlockctl in the specs' own
// process, on buffers.
var Run = run

// AsRlockctl names the environment variable that, set to 1, makes the test
// binary rlockctl itself (main): the specs that need rlockctl in a process
// of its own (a command run under a lock, signals, its pid, an environment
// of its own) start the test binary so, instead of building the command.
const AsRlockctl = "GOREDISSON_TEST_AS_RLOCKCTL"

func TestMain(m *testing.M) {
	if os.Getenv(AsRlockctl) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}
