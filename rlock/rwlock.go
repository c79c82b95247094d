package rlock

import "github.com/goredisson/goredisson/internal/engine"

// ReadWriteLock is many readers or one writer, reentrant [getReadWriteLock].
type ReadWriteLock struct {
	c    *Client
	name string
}

// NewReadWriteLock returns the read-write lock of a name [getReadWriteLock].
func (c *Client) NewReadWriteLock(name string) *ReadWriteLock {
	return &ReadWriteLock{c: c, name: name}
}

// ReadLock returns the shared side [readLock()].
func (rw *ReadWriteLock) ReadLock() *Lock { return rw.side(engine.KindRead) }

// WriteLock returns the exclusive side [writeLock()].
func (rw *ReadWriteLock) WriteLock() *Lock { return rw.side(engine.KindWrite) }

func (rw *ReadWriteLock) side(k engine.Kind) *Lock {
	if rw == nil {
		return newLock(nil, "", k)
	}
	return newLock(rw.c, rw.name, k)
}
