package layout

import "testing"

// The names Redisson derives, spelled out literally (from RedissonLock,
// RedissonFairLock, RedissonReadLock, RedissonFencedLock): goredisson must
// derive exactly these for Java and Go clients to meet.
func TestRedissonNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Channel("order:42"), "redisson_lock__channel:{order:42}"},
		{Channel("{user}:1"), "redisson_lock__channel:{user}:1"},
		{RWChannel("catalog"), "redisson_rwlock:{catalog}"},
		{FairChannel("q", "uuid:7"), "redisson_lock__channel:{q}:uuid:7"},
		{Queue("q"), "redisson_lock_queue:{q}"},
		{Timeouts("q"), "redisson_lock_timeout:{q}"},
		{Token("f"), "redisson_lock_token:{f}"},
		{ReadTimeoutPrefix("rw", "uuid:7"), "{rw}:uuid:7:rwlock_timeout"},
		{ReadTimeoutPrefix("{rw}:x", "uuid:7"), "{rw}:x:uuid:7:rwlock_timeout"},
		{ReadKeyPrefix("rw"), "{rw}"},
		{ReadKeyPrefix("{rw}:x"), "{rw}:x"},
		{Cancel("order:42"), "goredisson_cancel:{order:42}"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestSlotSafe(t *testing.T) {
	for name, want := range map[string]bool{"order:42": true, "{user}:1": true, "a}b": false, "x{": false, "{}x": false, "a{b}c": true} {
		if got := SlotSafe(name); got != want {
			t.Errorf("SlotSafe(%q) = %v, want %v", name, got, want)
		}
	}
}
