package engine

import (
	"context"
	"strconv"
	"testing"
)

// TestLedgerGivesBackABurstsRoom: a shard whose holds were mostly forgotten
// after a burst gets a new map (a Go map keeps the room it grew to: ~65 B per
// waiter of 10,000, docs/benchmarks.md), and keeps the holds still counted.
func TestLedgerGivesBackABurstsRoom(t *testing.T) {
	l := newLedger()
	ctx := context.Background()
	const n = 4000
	keys := make([]holdKey, n)
	holds := make([]*hold, n)
	for i := range keys {
		keys[i] = holdKey{"lock:" + strconv.Itoa(i), "owner"}
		h, err := l.enter(ctx, keys[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		holds[i] = h
	}
	kept := keys[7]
	l.update(kept, func() { holds[7].count = 1 })
	peak := 0
	for i := range l.shards {
		peak = max(peak, l.shards[i].peak)
	}
	if peak < 64 {
		t.Fatalf("peak %d: the burst should fill shards past 64", peak)
	}
	for i, k := range keys {
		l.exit(k, holds[i])
	}
	for i := range l.shards {
		s := &l.shards[i]
		if s.peak >= 64 || len(s.m) > 1 {
			t.Errorf("shard %d: peak %d, %d holds after the burst; want a new map", i, s.peak, len(s.m))
		}
	}
	if got := l.count(kept); got != 1 {
		t.Fatalf("the kept hold counts %d after the shrink, want 1", got)
	}
	h, err := l.enter(ctx, kept, nil)
	if err != nil || h != holds[7] {
		t.Fatalf("enter after the shrink: %v, same hold %v", err, h == holds[7])
	}
	l.exit(kept, h)
}
