package rlock

// FairLock is the fair kind of Lock, kept as a name so that code written
// against revision 2 of the API compiles. NewFairLock documents how a fair
// lock behaves.
type FairLock = Lock

// NewFairLock returns the fair lock of the given name [getFairLock]:
// waiters acquire it in arrival order, in Redisson's queue shared with Java
// waiters, and an unlock wakes only the head. A waiter keeps its place for
// its threadWaitTime past its turn (its TryLock wait, or
// WithFairLockWaitTimeout), as in Redisson, but a live goredisson waiter
// never loses it; TryLock with wait <= 0 never queues (docs/locks.md).
func (c *Client) NewFairLock(name string) *Lock {
	return newLock(c, name, kindFair)
}

// NewNonReentrantFairLock returns a fair lock whose holder taking it again
// gets ErrReentry [getNonReentrantFairLock].
func (c *Client) NewNonReentrantFairLock(name string) *Lock {
	return newLock(c, name, kindNonReentrantFair)
}
