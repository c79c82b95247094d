package rlock

// FairLock is the fair kind of Lock, kept as a name so that code written
// against revision 2 of the API compiles. NewFairLock documents how a fair
// lock behaves.
type FairLock = Lock

// NewFairLock returns the fair lock of the given name [getFairLock]: a
// reentrant lock that waiters acquire in the order they asked for it
// (Redisson's RedissonFairLock). It has the RLock hash plus Redisson's waiter
// queue redisson_lock_queue:{name} and timeouts redisson_lock_timeout:{name};
// an unlock wakes only the waiter at the head of the queue, on its own
// channel redisson_lock__channel:{name}:<field>. Java and Go waiters share
// one queue, in arrival order.
//
// The queue's timeouts follow Redisson's arithmetic. A waiter's
// threadWaitTime is its TryLock wait, or the Client's fair lock wait timeout
// for Lock (WithFairLockWaitTimeout, default 5 minutes): a waiter keeps its
// place for that long past its turn, then it is purged. A goredisson waiter
// also brings its own timeout up to the chain with every attempt, at least
// every third of its threadWaitTime, so it is never purged while it lives,
// provided every client pulls the queue in by the same threadWaitTime
// (Redisson's default and goredisson's are both 5 minutes). A waiter that
// gives up (its wait ran out, its ctx ended) leaves the queue at once. A
// single attempt (TryLock with wait <= 0) never joins the queue: it takes the
// lock only when nobody is queued. Unlock with no hold wakes the head waiter
// all the same when nobody holds the lock, as Redisson's does; ForceUnlock
// keeps the queue.
func (c *Client) NewFairLock(name string) *Lock {
	return newLock(c, name, kindFair)
}
