package layout

import (
	"testing"

	"github.com/goredisson/goredisson/pubsub"
)

// FuzzSlotSafe: for every name SlotSafe accepts, all the keys derived from
// it hash to its own cluster slot, so no script call can fail with
// CROSSSLOT. (A refused name may still land in one slot by a CRC16
// collision: the fuzzer found "\x17}A7aZb", kept in testdata.)
//
//	go test -run '^$' -fuzz FuzzSlotSafe -fuzztime 30s ./internal/layout
func FuzzSlotSafe(f *testing.F) {
	for _, s := range []string{"order:42", "{user}:1", "a}b", "x{", "}{", "{}x", "{a}{b}", "a{b}c", "", "ü{ß}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return // refused by every operation before any key is derived
		}
		derived := []string{Cancel(name), Queue(name), Timeouts(name), Token(name), Channel(name), RWChannel(name),
			FairChannel(name, "c:1"), ReadTimeoutPrefix(name, "c:1") + ":1", ReadKeyPrefix(name) + ":c:1:rwlock_timeout:1",
			PrefixName("redisson_unlock_latch", name) + ":req"}
		if !SlotSafe(name) {
			return
		}
		for _, k := range derived {
			if pubsub.Slot(k) != pubsub.Slot(name) {
				t.Fatalf("SlotSafe(%q) but %q is in slot %d, the name in %d", name, k, pubsub.Slot(k), pubsub.Slot(name))
			}
		}
	})
}
