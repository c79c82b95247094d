// Package rlock is Redisson's lock family and synchronizers in Go, on
// Redisson's keys, fields, channels and messages: Java services on Redisson
// and Go services on rlock exclude each other and wake each other's waiters.
//
// Make one Client (NewClient) per Redis deployment and process, and Close
// it at the end. Locks are cheap handles made by name and held by an owner:
// the context's (package ctxowner), else the calling goroutine. Every lock
// is a Locker (Redisson's RLock).
//
// Redisson's getXxx(name) is Client.NewXxx(name) for Lock, FairLock,
// SpinLock, NonReentrantLock, NonReentrantFairLock, ReadWriteLock,
// FencedLock, Semaphore, PermitExpirableSemaphore and CountDownLatch;
// getMultiLock(group, values) is Client.NewFasterMultiLock, and
// getMultiLock(locks) and new RedissonRedLock(locks) are NewMultiLock and
// NewRedLock. docs/api.md has the details; docs/ has the rest.
package rlock
