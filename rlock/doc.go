// Package rlock is Redisson's lock family and synchronizers in Go, on
// Redisson's keys, fields, channels and messages, so that Java services on
// Redisson and Go services on rlock exclude each other and wake each
// other's waiters.
//
// A Client (NewClient) serves one Redis deployment (a *redis.Client, a
// Sentinel failover client or a *redis.ClusterClient) with one client UUID,
// one shared pub/sub subscription and one watchdog; make one per process
// and Close it at the end. Locks are handles made by name and cheap to make;
// a lock is held by an owner: the context's owner (package ctxowner) or
// else the calling goroutine, as Redisson's owner is the thread.
//
// Redisson's getters and their constructors here:
//
//	getLock(name)                     Client.NewLock                 *Lock
//	getFairLock(name)                 Client.NewFairLock             *Lock
//	getSpinLock(name)                 Client.NewSpinLock             *Lock
//	getNonReentrantLock(name)         Client.NewNonReentrantLock     *Lock
//	getNonReentrantFairLock(name)     Client.NewNonReentrantFairLock *Lock
//	getMultiLock(group, values...)    Client.NewFasterMultiLock      *Lock
//	getReadWriteLock(name)            Client.NewReadWriteLock        ReadLock, WriteLock: *Lock
//	getFencedLock(name)               Client.NewFencedLock           *FencedLock
//	getMultiLock(locks...)            NewMultiLock                   *MultiLock
//	new RedissonRedLock(locks...)     NewRedLock                     *RedLock
//	getSemaphore(name)                Client.NewSemaphore            *Semaphore
//	getPermitExpirableSemaphore(name) Client.NewPermitExpirableSemaphore
//	getCountDownLatch(name)           Client.NewCountDownLatch       *CountDownLatch
//
// Every lock satisfies Locker, whose methods follow Redisson's RLock: Lock
// and LockLease wait until held (lease <= 0: a watchdog lease renewed while
// held; > 0: a fixed one), TryLock waits up to its wait (<= 0: one attempt),
// Unlock gives back one hold (ErrNotHeld when the owner holds none).
// LostContext tells a holder that its hold was lost, Do runs a function
// under a lock, and Extend moves a fixed lease. Waits end with ctx, and
// return the Redis error when Redis fails past the retry budget (WithRetry).
// Errors wrap the package's sentinels (ErrNotHeld, ErrLockLost, ...) in an
// *Error naming the operation and the lock.
//
// Read on: the Client and Option docs for the settings, Locker for the
// contract every lock keeps, and the repository's docs/ for the Redis
// layout (docs/layout.md), what a lease can and cannot promise
// (docs/guarantees.md), Redis Cluster and Sentinel (docs/cluster.md) and
// the differences from Redisson (docs/redisson.md).
package rlock
