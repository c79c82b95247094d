package rlock

// FairLock is the fair kind of Lock, kept as a name so that code written
// against revision 2 of the API compiles. NewFairLock documents how a fair
// lock behaves.
type FairLock = Lock

// NewFairLock returns the fair lock of the given name [getFairLock]: waiters
// acquire it in the order they asked, in Redisson's queue
// (redisson_lock_queue:{name}, timeouts redisson_lock_timeout:{name}) shared
// with Java waiters; an unlock wakes only the head, on its own channel
// redisson_lock__channel:{name}:<field>. A waiter keeps its place for its
// threadWaitTime past its turn (its TryLock wait, or WithFairLockWaitTimeout
// for Lock), as Redisson's arithmetic has it; a live goredisson waiter keeps
// its place however long the holders ahead of it hold; a waiter that gives
// up leaves the queue at once. TryLock with wait <= 0 never queues.
// Details: docs/locks.md.
func (c *Client) NewFairLock(name string) *Lock {
	return newLock(c, name, kindFair)
}

// NewNonReentrantFairLock returns the non-reentrant fair lock of the given
// name [getNonReentrantFairLock] (Redisson 4.4.0): a fair lock (NewFairLock)
// whose holder taking it again gets ErrReentry and changes nothing.
func (c *Client) NewNonReentrantFairLock(name string) *Lock {
	return newLock(c, name, kindNonReentrantFair)
}
