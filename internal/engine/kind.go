package engine

// Kind is a lock type's layout on Redis: which scripts take and give back
// its holds and how its waiters wait. Everything that differs between the
// lock types is decided by its predicates here, from the handle's kind
// (the Lua calls of each kind are in calls.go).
type Kind uint8

// The kinds: each lock type of rlock is one.
const (
	KindLock             Kind = iota // Lock: RLock hash, waiters on redisson_lock__channel
	KindSpin                         // SpinLock: RLock hash, no messages, backoff
	KindFenced                       // FencedLock: RLock hash + token counter
	KindFair                         // FairLock: RLock hash + queue; each waiter on its own channel
	KindRead                         // the read side of a ReadWriteLock
	KindWrite                        // the write side of a ReadWriteLock
	KindNonReentrant                 // Lock from NewNonReentrantLock: RLock hash, re-entry refused
	KindNonReentrantFair             // Lock from NewNonReentrantFairLock: FairLock layout, re-entry refused
	KindFasterMulti                  // Lock from NewFasterMultiLock: many values in one group hash
)

// spins reports whether waiters retry with backoff instead of waiting for
// messages (SpinLock).
func (k Kind) spins() bool { return k == KindSpin }

// fairQueue reports whether waiters queue in Redis (FairLock): a waiter's
// threadWaitTime is its wait, a waiter that gives up leaves the queue, and
// a queued waiter's attempts refresh its place.
func (k Kind) fairQueue() bool { return k == KindFair || k == KindNonReentrantFair }

// reentrant reports whether the owner that holds the lock may take it
// again (a second hold), rather than be refused with ErrReentry.
func (k Kind) reentrant() bool {
	return k != KindNonReentrant && k != KindNonReentrantFair
}

// extendsOnReentry reports whether a re-entry extends the lease by the new
// one instead of setting it (a write lock, as Redisson's), which is also the
// side that may be downgraded to the owner's read holds.
func (k Kind) extendsOnReentry() bool { return k == KindWrite }

// String names a lock kind in events.
func (k Kind) String() string {
	switch k {
	case KindSpin:
		return "spinlock"
	case KindFenced:
		return "fencedlock"
	case KindFair:
		return "fairlock"
	case KindRead:
		return "readlock"
	case KindWrite:
		return "writelock"
	case KindNonReentrant:
		return "nonreentrantlock"
	case KindNonReentrantFair:
		return "nonreentrantfairlock"
	case KindFasterMulti:
		return "fastermultilock"
	}
	return "lock"
}

// extendable reports whether Extend can set the kind's lease: not a
// FasterMultiLock's, whose values each carry their own expiry.
func (k Kind) extendable() bool { return k != KindFasterMulti }

// extendMode tells extend.lua how the kind keeps a holder's lease: "read"
// for the read side (timeout keys per hold), "" for the lock key alone.
func (k Kind) extendMode() string {
	if k == KindRead {
		return "read"
	}
	return ""
}

// renewKind selects the renewal script of a watchdog lease.
type renewKind uint8

const (
	renewHash   renewKind = iota // renew.lua: the hash, while the field holds it
	renewRead                    // read_renew.lua: the hash and the reader's timeout keys
	renewFaster                  // faster_renew.lua: a faster multilock's values in its group hash
	renewPermit                  // permits.lua 'update': a kept permit's lease (see KeptPermit)
)

// renewKind is the renewal script of the kind's watchdog leases.
func (k Kind) renewKind() renewKind {
	switch k {
	case KindRead:
		return renewRead
	case KindFasterMulti:
		return renewFaster
	}
	return renewHash
}

// queues reports whether a new waiter of this kind queues behind the
// Client's waiters already on the lock instead of racing them (see
// waitSpec.queue): for the exclusive locks and a read-write lock's writers,
// woken one per unlock in a Client, and a faster multilock's waiters, woken
// one per value set (they queue behind waiters on the same values only, see
// pubsub.Sub.QueueBehind). Not for its readers (a reader must not wait
// behind a writer of its own Client that Redisson would let it pass), nor
// for a fair lock, whose queue is in Redis.
func (k Kind) queues() bool {
	return k == KindLock || k == KindNonReentrant || k == KindFenced || k == KindWrite || k == KindFasterMulti
}

// Inspectable reports whether package inspect can read a lock off its
// key: not a faster multilock, whose values share a group hash with other
// value sets and are not hold counts.
func (k Kind) Inspectable() bool { return k != KindFasterMulti }

// wakesPerClass reports whether a message on a lock's channel wakes a
// waiter of the Client per class on it (see Core.wakes and
// attempt.waitClass): for a faster multilock, whose waiters on one group
// channel may wait for different values.
func (k Kind) wakesPerClass() bool { return k == KindFasterMulti }
