package election

import (
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	r := record{state: stateLeader, epoch: "ep", term: 7, lease: 1500 * time.Millisecond,
		holder: "ctx:election:x", server: "0123456789abcdef0123fedcba9876543210fedc", value: "pod\nwith a newline"}
	r.raw = r.String()
	got, ok := parseRecord(r.raw)
	if !ok || got != r {
		t.Fatalf("parseRecord(%q) = %+v, %v; want %+v", r.raw, got, ok, r)
	}
	p := r.with(statePending, 7, 0)
	if p.raw != "P ep 7 0 ctx:election:x 0123456789abcdef0123fedcba9876543210fedc\npod\nwith a newline" {
		t.Fatalf("with: %q", p.raw)
	}
	if h := p.head(); h != "P ep 7 0 ctx:election:x" {
		t.Fatalf("head: %q", h)
	}
	// The format before the server field: parsed, with no server (no
	// server's own record).
	old, ok := parseRecord("L ep 1 30000 ctx:election:x\nv")
	if !ok || old.server != "" || old.lease != 30*time.Second || old.raw != "L ep 1 30000 ctx:election:x\nv" {
		t.Fatalf("parseRecord of the format without a server: %+v, %v", old, ok)
	}
}

func TestParseRecordRefusesOtherFormats(t *testing.T) {
	for _, raw := range []string{
		"",                                   // an older goredisson's Resign mark
		"1b4e-uuid\npod-7",                   // an older goredisson's leader
		"\x011b4e-uuid\npod-7",               // an older goredisson's pending mark
		"L ep 1 30000 ctx:election:x s",      // no value line
		"X ep 1 30000 ctx:election:x s\nv",   // unknown state
		"L ep -1 30000 ctx:election:x s\nv",  // negative term
		"L ep 1 3e4 ctx:election:x s\nv",     // not an integer
		"L  1 30000 ctx:election:x s\nv",     // empty epoch
		"L ep 1 30000 ctx:election:x \nv",    // empty server
		"L ep 1 30000 ctx:election:x s t\nv", // a field too many
	} {
		if r, ok := parseRecord(raw); ok {
			t.Errorf("parseRecord(%q) = %+v, want refused", raw, r)
		}
	}
}
