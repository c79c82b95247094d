// Package rlock is Redisson's locks and synchronizers in Go, on Redisson's
// keys and messages: Java services on Redisson and Go services on rlock
// exclude and wake each other. Make one Client (NewClient) per Redis
// deployment and process; Close it at the end. A lock is a cheap handle by
// name, held by the context's owner (package ctxowner), else the calling
// goroutine.
//
// Redisson's getXxx(name) is Client.NewXxx(name) for Lock, FairLock,
// SpinLock, NonReentrantLock, NonReentrantFairLock, ReadWriteLock,
// FencedLock, Semaphore, PermitExpirableSemaphore and CountDownLatch;
// getMultiLock(group, values) is Client.NewFasterMultiLock, and
// getMultiLock(locks) and new RedissonRedLock(locks) are NewMultiLock and
// NewRedLock. Details: docs/api.md.
package rlock
