// Package layout names the Redis keys and pub/sub channels of Redisson's lock
// layout, which goredisson shares so that Java and Go clients of one lock see
// the same state. It holds no state and does no I/O.
//
// Redisson derives every auxiliary key of a lock from the lock's name so that
// it lands in the name's Redis Cluster slot: PrefixName puts the name in
// braces (a hash tag) unless it already has one.
package layout

import (
	"strconv"
	"strings"
)

// Messages published on a lock's channel (Redisson's LockPubSub).
const (
	// UnlockMessage wakes one waiter of the channel.
	UnlockMessage = "0"
	// ReadUnlockMessage wakes every waiter of the channel. Redisson publishes
	// it when a read-write lock's write side is released.
	ReadUnlockMessage = "1"
)

// Prefixes of Redisson's auxiliary keys and channels, and goredisson's own.
const (
	channelPrefix   = "redisson_lock__channel"
	rwChannelPrefix = "redisson_rwlock"
	tokenPrefix     = "redisson_lock_token"
	queuePrefix     = "redisson_lock_queue"
	timeoutPrefix   = "redisson_lock_timeout"
	// cancelPrefix is goredisson's own (Redisson has no such key): a hash of
	// holder field -> the highest attempt number of that holder whose
	// outcome was lost and which must do nothing if it still arrives.
	cancelPrefix = "goredisson_cancel"
)

// PrefixName returns prefix:{name}, or prefix:name when name already holds a
// '{', so that the result shares the lock's Redis Cluster slot (Redisson's
// prefixName).
func PrefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// SuffixName returns {name}:suffix, or name:suffix when name already holds a
// '{' (Redisson's suffixName).
func SuffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// Channel is the unlock channel of a Lock, SpinLock, FencedLock or FairLock:
// redisson_lock__channel:{name}.
func Channel(name string) string { return PrefixName(channelPrefix, name) }

// RWChannel is the channel of a read-write lock: redisson_rwlock:{name}.
func RWChannel(name string) string { return PrefixName(rwChannelPrefix, name) }

// IsRWChannel reports whether channel is a read-write lock's channel.
func IsRWChannel(channel string) bool { return strings.HasPrefix(channel, rwChannelPrefix+":") }

// IsLockChannel reports whether channel is the unlock channel of a lock
// (Channel, FairChannel; a FasterMultiLock's group), whose unlock message
// frees something one waiter can take.
func IsLockChannel(channel string) bool { return strings.HasPrefix(channel, channelPrefix+":") }

// FairChannel is the channel on which the fair-lock waiter with the given
// holder field is woken: redisson_lock__channel:{name}:<field>.
func FairChannel(name, field string) string { return Channel(name) + ":" + field }

// Queue is a fair lock's waiter queue, a list of holder fields in arrival
// order: redisson_lock_queue:{name}.
func Queue(name string) string { return PrefixName(queuePrefix, name) }

// Timeouts is a fair lock's waiter timeouts, a sorted set of holder fields
// scored by the millisecond until which each waiter keeps its place:
// redisson_lock_timeout:{name}.
func Timeouts(name string) string { return PrefixName(timeoutPrefix, name) }

// Token is a fenced lock's token counter: redisson_lock_token:{name}.
func Token(name string) string { return PrefixName(tokenPrefix, name) }

// Cancel is goredisson's cancel floor of a lock: goredisson_cancel:{name}.
func Cancel(name string) string { return PrefixName(cancelPrefix, name) }

// ReadKeyPrefix is what the read-lock scripts put before
// ":<field>:rwlock_timeout:<n>" to name a reader's timeout keys: {name}, or
// name when it already holds a '{' (Redisson's getKeyPrefix).
func ReadKeyPrefix(name string) string {
	if strings.Contains(name, "{") {
		return name
	}
	return "{" + name + "}"
}

// ReadTimeoutPrefix is the prefix of one reader's timeout keys: hold level n
// has the key ReadTimeoutPrefix(name, field) + ":" + n.
func ReadTimeoutPrefix(name, field string) string {
	return SuffixName(name, field) + ":rwlock_timeout"
}

// HasHashTag reports whether key has a Redis Cluster hash tag: a '{'
// followed, after at least one character, by a '}'.
func HasHashTag(key string) bool {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return false
	}
	return strings.IndexByte(key[i+1:], '}') > 0
}

// SlotSafe reports whether every key derived from the lock name hashes to
// the name's own Redis Cluster slot. It holds for names with a hash tag and
// for names without braces; a name with a stray '{' or '}' (say "a}b" or
// "x{") does not: Redisson derives the same keys, which then land in other
// slots.
func SlotSafe(name string) bool {
	return HasHashTag(name) || !strings.ContainsAny(name, "{}")
}

// Channels and messages of Redisson's synchronizers.
const (
	semaphorePrefix = "redisson_sc"
	latchPrefix     = "redisson_countdownlatch__channel__"
	// LatchZeroMessage opens a count-down latch: every waiter goes on.
	LatchZeroMessage = "0"
	// LatchNewCountMessage announces a count set anew.
	LatchNewCountMessage = "1"
)

// SemaphoreChannel is the channel of a Semaphore and of a
// PermitExpirableSemaphore: redisson_sc:{name}. Its messages are the number
// of permits available (or added).
func SemaphoreChannel(name string) string { return PrefixName(semaphorePrefix, name) }

// LatchChannel is the channel of a CountDownLatch. Redisson puts the name in
// braces whatever it holds: redisson_countdownlatch__channel__{name}.
func LatchChannel(name string) string { return latchPrefix + "{" + name + "}" }

// PermitTimeouts is a PermitExpirableSemaphore's sorted set of permit ids
// scored by their expiry: {name}:timeout.
func PermitTimeouts(name string) string { return SuffixName(name, "timeout") }

// Wakes tells how many waiters of a channel a message wakes, as Redisson's
// pub/sub services do: a semaphore's message, a number of permits, wakes
// that many; a latch's "0" wakes all, and so does its "1" (Redisson's
// waiters ignore it, but Redisson's delete publishes it: a waiter that
// looks at the count again sees the deleted latch open); a read-write lock's
// "1" wakes all; any other lock message wakes one. (It returns -1 for all,
// which is pubsub.WakeAll.)
func Wakes(channel, payload string) int {
	switch {
	case strings.HasPrefix(channel, latchPrefix):
		// "0" opens the latch; "1" (a count set, or the latch deleted,
		// which opens it too) makes every waiter look at the count again.
		return -1
	case strings.HasPrefix(channel, semaphorePrefix+":"):
		n, err := strconv.Atoi(payload)
		if err != nil || n < 0 {
			return 1 // not a count: a hint to try again
		}
		return n
	case payload == ReadUnlockMessage:
		return -1
	}
	return 1
}
