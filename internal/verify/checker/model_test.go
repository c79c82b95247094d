package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// electRunFor is an election's model with campaigns c0.1 (candidate 0, a
// 1 s watchdog) and c1.2 (candidate 1, 6 s), for the record checks.
func electRunFor() *electRun {
	q := Sequence{Kind: electionKind, Watchdog: time.Second, WDs: []time.Duration{time.Second, 6 * time.Second}, Procs: []bool{true, true}}
	r := &electRun{q: q, journal: journal{cfg: &Config{Out: io.Discard}}, stats: &Result{Ops: map[string]int{}}, camps: map[string]*campaign{}}
	for i, v := range []string{"c0.1", "c1.2"} {
		cp := &campaign{value: v, c: i}
		r.camps[v] = cp
		r.order = append(r.order, cp)
		r.cands = append(r.cands, &candidate{c: i, wd: q.wd(i)})
	}
	return r
}

func runRecords(recs ...string) *electRun {
	r := electRunFor()
	for i, raw := range recs {
		rec, ok := parseRecord(raw)
		if !ok {
			panic("bad record in test: " + raw)
		}
		r.log = append(r.log, recEvent{rec: rec, at: time.Unix(int64(i), 0)})
	}
	r.processLog()
	return r
}

func TestRecordChecks(t *testing.T) {
	good := []string{
		"P e1 0 6000 ctx:election:a\nc0.1", // a first election waits WithMaxLease (6 s)
		"L e1 1 1000 ctx:election:a\nc0.1", // term 1, lease 1 s
		"P e1 1 1000 ctx:election:b\nc1.2", // a takeover waits the leader's lease
		"L e1 2 6000 ctx:election:b\nc1.2", // term 2
		"R e1 2 0 ctx:election:b\nc1.2",    // resigned: keeps the term
		"P e1 2 0 ctx:election:a\nc0.1",    // after a resignation: no wait
		"L e1 3 1000 ctx:election:a\nc0.1", // term 3
		"P e2 0 6000 ctx:election:b\nc1.2", // Redis lost the key: a new epoch waits WithMaxLease
		"P e2 0 6000 ctx:election:a\nc0.1", // a candidate replacing a pending one inherits its wait
		"L e2 1 1000 ctx:election:a\nc0.1", // term 1 of the new epoch
		"E e2 1 0 ctx:election:a\nc0.1",    // a told end
		"P e2 1 0 ctx:election:b\nc1.2",    // after it: no wait
		"L e2 2 6000 ctx:election:b\nc1.2", //
		"P e2 2 6000 ctx:election:b\nc1.2", // the same candidate again, after its crash: wait its lease
		"L e2 3 6000 ctx:election:b\nc1.2", // a re-election is a new term
	}
	if r := runRecords(good...); len(r.violations) > 0 {
		t.Fatalf("a good history failed: %+v", r.violations)
	}
	bad := []struct {
		name string
		recs []string
		kind string
	}{
		{"a takeover waits its own lease, not the leader's", []string{"P e1 0 6000 ctx:election:b\nc1.2", "L e1 1 6000 ctx:election:b\nc1.2", "P e1 1 1000 ctx:election:a\nc0.1"}, "short-wait"},
		{"a first election waits less than WithMaxLease", []string{"L e0 4 1000 ctx:election:a\nc0.1", "P e1 0 1000 ctx:election:a\nc0.1"}, "short-wait"},
		{"a wait after a resignation", []string{"P e1 0 6000 ctx:election:a\nc0.1", "L e1 1 1000 ctx:election:a\nc0.1", "R e1 1 0 ctx:election:a\nc0.1", "P e1 1 1000 ctx:election:b\nc1.2"}, "short-wait"},
		{"a term skipped", []string{"P e1 0 6000 ctx:election:a\nc0.1", "L e1 2 1000 ctx:election:a\nc0.1"}, "term"},
		{"a term repeated", []string{"P e1 0 6000 ctx:election:a\nc0.1", "L e1 1 1000 ctx:election:a\nc0.1", "P e1 1 1000 ctx:election:b\nc1.2", "L e1 1 6000 ctx:election:b\nc1.2"}, "term"},
		{"a mark moves the term", []string{"P e1 0 6000 ctx:election:a\nc0.1", "L e1 1 1000 ctx:election:a\nc0.1", "P e1 2 1000 ctx:election:b\nc1.2"}, "term"},
		{"an epoch begun by a leader record", []string{"P e1 0 6000 ctx:election:a\nc0.1", "L e2 1 1000 ctx:election:a\nc0.1"}, "term"},
		{"the value of no campaign", []string{"P e1 0 6000 ctx:election:a\nc9.9"}, "record"},
	}
	for _, b := range bad {
		r := runRecords(b.recs...)
		if len(r.violations) == 0 || r.violations[0].Kind != b.kind {
			t.Errorf("%s: want a %s violation, got %+v", b.name, b.kind, r.violations)
		}
	}
}

func TestObservedTerms(t *testing.T) {
	r := electRunFor()
	for _, cp := range r.order {
		cp.led, cp.epoch = true, "e1"
	}
	r.camps["c0.1"].term, r.camps["c1.2"].term = 1, 2
	cd := r.cands[0]
	cd.terms = []termSeen{{Value: "c0.1", Rev: 1, Epoch: "e1", At: 1e9}, {Value: "c1.2", Rev: 2, Epoch: "e1", At: 2e9}}
	r.checkObserved(cd)
	if len(r.violations) > 0 {
		t.Fatalf("terms in order failed: %+v", r.violations)
	}
	for name, terms := range map[string][]termSeen{
		"a duplicate":       {{Value: "c1.2", Rev: 2, Epoch: "e1", At: 1e9}, {Value: "c1.2", Rev: 2, Epoch: "e1", At: 2e9}},
		"out of order":      {{Value: "c1.2", Rev: 2, Epoch: "e1", At: 1e9}, {Value: "c0.1", Rev: 1, Epoch: "e1", At: 2e9}},
		"a gap":             {{Value: "c0.1", Rev: 1, Epoch: "e1", At: 1e9}, {Value: "c0.1", Rev: 1, Epoch: "e1", At: 1e9}},
		"a term never held": {{Value: "c0.1", Rev: 7, Epoch: "e1", At: 1e9}},
	} {
		r := electRunFor()
		r.camps["c0.1"].led, r.camps["c0.1"].term, r.camps["c0.1"].epoch = true, 1, "e1"
		r.camps["c1.2"].led, r.camps["c1.2"].term, r.camps["c1.2"].epoch = true, 2, "e1"
		if name == "a gap" {
			r.camps["c1.2"].term = 3
			terms[1] = termSeen{Value: "c1.2", Rev: 3, Epoch: "e1", At: 2e9}
		}
		cd := r.cands[0]
		cd.terms = terms
		r.checkObserved(cd)
		if len(r.violations) == 0 || r.violations[0].Kind != "observe" {
			t.Errorf("%s: want an observe violation, got %+v", name, r.violations)
		}
	}
	// A gap across a restart is allowed.
	r = electRunFor()
	r.camps["c0.1"].led, r.camps["c0.1"].term, r.camps["c0.1"].epoch = true, 1, "e1"
	r.camps["c1.2"].led, r.camps["c1.2"].term, r.camps["c1.2"].epoch = true, 3, "e1"
	r.restarts = []time.Time{time.Unix(1, 5e8)}
	cd = r.cands[0]
	cd.terms = []termSeen{{Value: "c0.1", Rev: 1, Epoch: "e1", At: 1e9}, {Value: "c1.2", Rev: 3, Epoch: "e1", At: 2e9}}
	r.checkObserved(cd)
	if len(r.violations) > 0 {
		t.Fatalf("a gap across a restart failed: %+v", r.violations)
	}
}

// TestOverlap: a live look at a term after a later term began is two
// leaders; a look before it is not.
func TestOverlap(t *testing.T) {
	r := electRunFor()
	a, b := r.camps["c0.1"], r.camps["c1.2"]
	a.info = campInfo{Value: "c0.1", Ret: 1e9, LastLive: 3e9}
	b.info = campInfo{Value: "c1.2", Ret: 2e9}
	r.checkOverlaps()
	if len(r.violations) != 1 || r.violations[0].Kind != "two-leaders" {
		t.Fatalf("want two leaders, got %+v", r.violations)
	}
	r = electRunFor()
	a, b = r.camps["c0.1"], r.camps["c1.2"]
	a.info = campInfo{Value: "c0.1", Ret: 1e9, LastLive: 19e8, FirstEnd: 19e8 + 1}
	b.info = campInfo{Value: "c1.2", Ret: 2e9}
	r.checkOverlaps()
	if len(r.violations) > 0 {
		t.Fatalf("a term that ended before the next began failed: %+v", r.violations)
	}
}

// TestLooker: the looker records live looks until the context ends, then
// the end and its cause.
func TestLooker(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	var s lookerSlot
	s.arm([]context.Context{ctx, nil})
	time.Sleep(5 * time.Millisecond)
	cancel(errors.New("gone"))
	cancelled := time.Now()
	looks := s.disarm()
	if len(looks) != 2 || !looks[0].Watched || looks[1].Watched {
		t.Fatalf("looks: %+v", looks)
	}
	lk := looks[0]
	// A look is stamped before it is made, so a live look is never stamped
	// after the end (an ended one may be, before it).
	if lk.Live == 0 || lk.LastLive == 0 || !at(lk.LastLive).Before(cancelled) {
		t.Fatalf("live looks: %+v", lk)
	}
	if lk.FirstEnd == 0 || !strings.Contains(lk.Cause, "gone") {
		t.Fatalf("the end: %+v", lk)
	}
	if s.disarm() != nil {
		t.Fatal("a second disarm returned looks")
	}
}

func TestParseRecordWithServer(t *testing.T) {
	rec, ok := parseRecord("L e1 3 2000 ctx:election:a 0123456789abcdef0123456789abcdef01234567\nc0.1")
	if !ok || rec.state != 'L' || rec.term != 3 || rec.lease != 2*time.Second || rec.server != "0123456789abcdef0123456789abcdef01234567" || rec.value != "c0.1" {
		t.Fatalf("parsed %+v, %v", rec, ok)
	}
	if _, ok := parseRecord("L e1 3 2000 ctx:election:a srv extra\nc0.1"); ok {
		t.Fatal("a header of 7 fields parsed")
	}
}
