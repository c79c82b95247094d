package inspect

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/layout"
)

// The readers of the layouts of Redisson's family (docs/layout.md), one
// each. read calls them in turn with what its round trips read: first the
// reader of the key's own layout (a lock's hash: classifyHash, which hands
// a read-write lock's and a faster multilock's hash to their own; a
// synchronizer's counter: classifyString), then those of the keys beside
// it (a fair lock's queue and a fenced lock's token:
// classifyFairOrFenced; a permit semaphore's permits: readPermits), and
// last tell, once the subscribers are counted, for a counter.

// holderField reports whether f reads as "<client id>:<owner id>".
func holderField(f string) bool {
	i := strings.IndexByte(f, ':')
	return i > 0 && i < len(f)-1
}

// holdCount parses a hold count: a positive integer.
func holdCount(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	return n, err == nil && n > 0
}

// notALock marks the key foreign, saying why.
func (info *Info) notALock(format string, args ...any) {
	info.Kind, info.Mode, info.Holders = KindForeign, "", nil
	info.Reason = "not a lock: " + fmt.Sprintf(format, args...)
}

// classifyHash sets the kind, mode and holders of a hash: a read-write lock
// (a "mode" field), a faster multilock's group, or a lock whose every field
// is "<client id>:<owner id>" with a positive hold count; anything else is
// not a lock.
func (info *Info) classifyHash(fields map[string]string) {
	keys := make([]string, 0, len(fields))
	for f := range fields {
		keys = append(keys, f)
	}
	sort.Strings(keys)
	if mode, ok := fields["mode"]; ok {
		info.classifyReadWrite(mode, fields, keys)
		return
	}
	for _, f := range keys {
		if fasterField(f) {
			info.classifyFaster(fields, keys)
			return
		}
	}
	info.Kind = KindReentrant
	info.readHolders(fields, keys)
}

// classifyReadWrite reads a read-write lock's hash: its mode, "read" or
// "write", and beside it holder fields with their hold counts.
func (info *Info) classifyReadWrite(mode string, fields map[string]string, keys []string) {
	if mode != "read" && mode != "write" {
		info.notALock("a hash whose field \"mode\" is %q, not read or write", mode)
		return
	}
	info.Kind, info.Mode = KindReadWrite, mode
	info.readHolders(fields, keys)
}

// readHolders reads a lock's holder fields, every one of keys but a
// read-write lock's "mode": "<client id>:<owner id>" with a positive hold
// count, or the key is not a lock.
func (info *Info) readHolders(fields map[string]string, keys []string) {
	for _, f := range keys {
		if f == "mode" && info.Kind == KindReadWrite {
			continue
		}
		n, ok := holdCount(fields[f])
		switch {
		case !holderField(f):
			info.notALock("a hash whose field %q is not <client id>:<owner id>", f)
			return
		case !ok:
			info.notALock("a hash whose field %q holds %q, not a hold count", f, fields[f])
			return
		}
		info.Holders = append(info.Holders, Holder{Field: f, Count: n})
	}
}

// fasterField reports whether f is one of a faster multilock's
// bookkeeping fields.
func fasterField(f string) bool {
	return strings.HasSuffix(f, ":expire_time") || strings.HasSuffix(f, ":lock_count")
}

// classifyFaster reads a faster multilock's group hash: a value field
// holds its holder's field, with <value>:<holder>:expire_time and
// <value>:<holder>:lock_count beside it. A holder's Count is the number of
// values it holds.
func (info *Info) classifyFaster(fields map[string]string, keys []string) {
	info.Kind = KindFasterMulti
	values := map[string]int{}
	for _, f := range keys {
		v := fields[f]
		if fasterField(f) {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				info.notALock("a hash whose field %q holds %q, not a number", f, v)
				return
			}
			continue
		}
		if !holderField(v) {
			info.notALock("a hash whose field %q holds %q, not a holder field <client id>:<owner id>", f, v)
			return
		}
		values[v]++
	}
	for h, n := range values {
		info.Holders = append(info.Holders, Holder{Field: h, Count: n})
	}
	sort.Slice(info.Holders, func(a, b int) bool { return info.Holders[a].Field < info.Holders[b].Field })
}

// classifyFairOrFenced reads the keys beside a reentrant lock's hash (or
// beside no key): a fair lock's queue of waiters or its timeouts (timeouts
// is how many timeouts keys exist) make it fair, even while nobody holds
// it; a fencing token makes a held one fenced.
func (info *Info) classifyFairOrFenced(timeouts int64) {
	if info.Kind != KindReentrant && info.Kind != KindNone {
		return
	}
	switch {
	case len(info.Queue) > 0 || timeouts > 0:
		info.Kind = KindFair
	case info.Token > 0 && info.Kind == KindReentrant:
		info.Kind = KindFenced
	}
}

// classifyAuxiliary marks an auxiliary key (a token, queue, timeouts,
// permits or registration key) that exists as not a lock: it is read
// through its lock's name.
func (info *Info) classifyAuxiliary() {
	if layout.Auxiliary(info.Name) && info.Kind != KindNone {
		info.Kind = KindForeign
		info.Holders = nil
		info.Reason = "not a lock: an auxiliary key of a lock or synchronizer (docs/layout.md): ask for the lock's own name"
	}
}

// classifyString reads a string: an integer is a synchronizer's counter
// (which one, tell decides), anything else is not a lock.
func (info *Info) classifyString(get *redis.StringCmd) {
	if get != nil {
		if n, err := strconv.ParseInt(get.Val(), 10, 64); err == nil {
			info.Counter = n
			info.Kind = KindSemaphoreOrLatch
			if info.Taken > 0 {
				info.Kind = KindPermitSemaphore
			}
			return
		}
	}
	info.Kind = KindForeign
	info.Reason = "not a lock: a string that is not an integer counter (a SETNX or redsync lock, or another value)"
}

// neverMs is the permit expiry score Redisson writes for "never".
const neverMs = 922337203685477

// readPermits reads a permit semaphore's permits taken, with the leases
// left at nowMs (the server's time), from perms (nil: none taken).
func (info *Info) readPermits(perms *redis.ZSliceCmd, nowMs int64) {
	if perms == nil {
		return
	}
	for _, z := range perms.Val() {
		p := Permit{ID: hex.EncodeToString([]byte(fmt.Sprint(z.Member))), Lease: NoExpiry}
		if z.Score < neverMs {
			p.Lease = time.Duration(int64(z.Score)-nowMs) * time.Millisecond
		}
		info.Permits = append(info.Permits, p)
	}
}

// tell decides what a counter is, as far as the data allows: Redisson's
// latch never has a TTL; waiters show on their type's channel.
func (info *Info) tell() {
	if info.Kind != KindSemaphoreOrLatch {
		return
	}
	switch {
	case info.TTL > 0:
		info.Kind, info.Reason = KindSemaphore, "a counter with a TTL (Redisson's latch has none)"
	case info.semSubs > 0 && info.latchSubs == 0:
		info.Kind, info.Reason = KindSemaphore, "waiters on its semaphore channel"
	case info.latchSubs > 0 && info.semSubs == 0:
		info.Kind, info.Reason = KindLatch, "waiters on its latch channel"
	default:
		info.Reason = "an integer counter: a Semaphore, a CountDownLatch and a PermitExpirableSemaphore with no permit taken look the same in Redis"
	}
	if info.Kind == KindSemaphore {
		info.Reason += "; a PermitExpirableSemaphore with no permit taken looks the same"
	}
}
