package rlock

import (
	"testing"

	"github.com/goredisson/goredisson/pubsub"
)

// FuzzSlotSafe: for every name slotSafe accepts, all the keys derived from
// it hash to its own cluster slot, so no script call can fail with
// CROSSSLOT. (A refused name may still land in one slot by a CRC16
// collision: the fuzzer found "\x17}A7aZb", kept in testdata.)
//
//	go test -run '^$' -fuzz FuzzSlotSafe -fuzztime 30s ./rlock
func FuzzSlotSafe(f *testing.F) {
	for _, s := range []string{"order:42", "{user}:1", "a}b", "x{", "}{", "{}x", "{a}{b}", "a{b}c", "", "ü{ß}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return // refused by every operation before any key is derived
		}
		derived := []string{prefixName(latchPrefix, name) + ":req", prefixName(cancelPrefix, name) + ":1", QueueKey(name), TimeoutKey(name),
			TokenKey(name), ChannelName(name), FairChannelName(name, "c:1"), readTimeoutPrefix(name, "c:1") + ":1"}
		if !slotSafe(name) {
			return
		}
		for _, k := range derived {
			if pubsub.Slot(k) != pubsub.Slot(name) {
				t.Fatalf("slotSafe(%q) but %q is in slot %d, the name in %d", name, k, pubsub.Slot(k), pubsub.Slot(name))
			}
		}
	})
}
