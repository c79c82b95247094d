package pubsub_test

import (
	"testing"

	"github.com/goredisson/goredisson/pubsub"
)

func TestSlot(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	cases := map[string]int{
		"123456789":     0x31C3 % 16384, // the CRC16/XMODEM check value
		"somekey":       11058,
		"foo{hash_tag}": 2515,
		"hash_tag":      2515,
		"foo{}{bar}":    pubsub.Slot("foo{}{bar}"),
		"":              0,
	}
	for name, want := range cases {
		if got := pubsub.Slot(name); got != want {
			t.Errorf("Slot(%q) = %d, want %d", name, got, want)
		}
	}
	if pubsub.Slot("{user1000}.following") != pubsub.Slot("{user1000}.followers") {
		t.Error("names with the same hash tag must share a slot")
	}
	if pubsub.Slot("foo{}{bar}") == pubsub.Slot("bar") {
		t.Error("an empty first hash tag means the whole name is hashed")
	}
}
