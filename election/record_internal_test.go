package election

import (
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	r := record{state: stateLeader, epoch: "ep", term: 7, lease: 1500 * time.Millisecond,
		holder: "ctx:election:x", value: "pod\nwith a newline"}
	r.raw = r.String()
	got, ok := parseRecord(r.raw)
	if !ok || got != r {
		t.Fatalf("parseRecord(%q) = %+v, %v; want %+v", r.raw, got, ok, r)
	}
	p := r.with(statePending, 7, 0)
	if p.raw != "P ep 7 0 ctx:election:x\npod\nwith a newline" {
		t.Fatalf("with: %q", p.raw)
	}
}

func TestParseRecordRefusesOtherFormats(t *testing.T) {
	for _, raw := range []string{
		"",                                // an older goredisson's Resign mark
		"1b4e-uuid\npod-7",                // an older goredisson's leader
		"\x011b4e-uuid\npod-7",            // an older goredisson's pending mark
		"L ep 1 30000 ctx:election:x",     // no value line
		"X ep 1 30000 ctx:election:x\nv",  // unknown state
		"L ep -1 30000 ctx:election:x\nv", // negative term
		"L ep 1 3e4 ctx:election:x\nv",    // not an integer
		"L  1 30000 ctx:election:x\nv",    // empty epoch
	} {
		if r, ok := parseRecord(raw); ok {
			t.Errorf("parseRecord(%q) = %+v, want refused", raw, r)
		}
	}
}
