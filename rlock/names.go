package rlock

import "strings"

// Channel and key names follow Redisson so that both exclude each other.

const (
	// UnlockMessage is published on a lock's channel when it is released.
	UnlockMessage = "0"
	// ReadUnlockMessage is published when a read lock is released; it wakes
	// every waiter of the channel.
	ReadUnlockMessage = "1"

	channelPrefix   = "redisson_lock__channel"
	latchPrefix     = "redisson_unlock_latch"
	tokenPrefix     = "redisson_lock_token"
	rwChannelPrefix = "redisson_rwlock"
	queuePrefix     = "redisson_lock_queue"
	timeoutPrefix   = "redisson_lock_timeout"
	// cancelPrefix names the markers of cancelled acquire attempts. It is
	// goredisson's own: Redisson has no such key.
	cancelPrefix = "goredisson_acquire_cancel"
)

// prefixName returns prefix:{name}, or prefix:name when name already holds a
// hash tag, so that the result shares the lock's Redis Cluster slot.
func prefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// suffixName returns {name}:suffix, or name:suffix when name already holds a
// hash tag.
func suffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// ChannelName returns the pub/sub channel on which unlocks of the named lock
// are announced (Redisson's redisson_lock__channel).
func ChannelName(name string) string { return prefixName(channelPrefix, name) }

// RWChannelName returns the pub/sub channel of the named read-write lock
// (Redisson's redisson_rwlock:{name}).
func RWChannelName(name string) string { return prefixName(rwChannelPrefix, name) }

// readTimeoutPrefix returns the prefix of a reader's per-hold timeout keys:
// suffixName(name, field) + ":rwlock_timeout"; hold level n is prefix:n.
func readTimeoutPrefix(name, field string) string {
	return suffixName(name, field) + ":rwlock_timeout"
}

// QueueKey returns the key of a fair lock's waiter queue
// (redisson_lock_queue:{name}), a list of waiter fields in arrival order.
func QueueKey(name string) string { return prefixName(queuePrefix, name) }

// TimeoutKey returns the key of a fair lock's waiter timeouts
// (redisson_lock_timeout:{name}), a sorted set of waiter fields scored by the
// wall-clock millisecond until which each counts as alive.
func TimeoutKey(name string) string { return prefixName(timeoutPrefix, name) }

// FairChannelName returns the channel on which the fair-lock waiter with
// the given field is woken: redisson_lock__channel:{name}:<field>.
func FairChannelName(name, field string) string { return ChannelName(name) + ":" + field }

// hasHashTag reports whether key has a Redis Cluster hash tag: a '{'
// followed, after at least one character, by a '}'.
func hasHashTag(key string) bool {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return false
	}
	j := strings.IndexByte(key[i+1:], '}')
	return j > 0
}

// slotSafe reports whether every key derived from the lock name (the
// prefixName and suffixName forms Redisson uses) hashes to the name's own
// Redis Cluster slot. It holds for names with a hash tag and for names
// without braces; a name with a stray '{' or '}' (say "a}b" or "x{") does
// not: Redisson derives the same keys, which then land in other slots.
func slotSafe(name string) bool {
	return hasHashTag(name) || !strings.ContainsAny(name, "{}")
}
