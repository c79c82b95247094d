package rlock

// ReadWriteLock is Redisson's RReadWriteLock [getReadWriteLock]: many
// readers or one writer, both reentrant, in one hash; the writer may also
// read (a downgrade), a reader cannot upgrade. Waiters sleep on
// redisson_rwlock:{name}: a read unlock that frees the lock wakes one, a
// write unlock every reader and one writer of each Client (docs/locks.md).
type ReadWriteLock struct {
	c    *Client
	name string
}

// NewReadWriteLock returns the read-write lock of the given name
// [getReadWriteLock].
func (c *Client) NewReadWriteLock(name string) *ReadWriteLock {
	return &ReadWriteLock{c: c, name: name}
}

// ReadLock returns the shared side [readLock()].
func (rw *ReadWriteLock) ReadLock() *Lock { return rw.side(kindRead) }

// WriteLock returns the exclusive side [writeLock()]; a re-entry extends its
// lease by the new one, as Redisson's.
func (rw *ReadWriteLock) WriteLock() *Lock { return rw.side(kindWrite) }

func (rw *ReadWriteLock) side(k kind) *Lock {
	if rw == nil {
		return newLock(nil, "", k)
	}
	return newLock(rw.c, rw.name, k)
}
