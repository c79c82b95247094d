package rlock

// ReadWriteLock is Redisson's RReadWriteLock [getReadWriteLock]: many
// readers or one writer, both sides reentrant per owner, in one hash with a
// "mode" field ("read" or "write"). The write owner may also take the read
// lock (a downgrade: after its last write unlock it keeps reading); a reader
// cannot upgrade (its write attempt waits like anyone else's). Each read
// hold has its own timeout key, so one stuck reader's lease expires on its
// own while others keep reading. Waiters of both sides sleep on
// redisson_rwlock:{name}: a read unlock that frees the lock publishes "0"
// (wakes one), a write unlock "1" (wakes all, so every waiting reader goes
// in at once).
type ReadWriteLock struct {
	c    *Client
	name string
}

// NewReadWriteLock returns the read-write lock of the given name
// [getReadWriteLock].
func (c *Client) NewReadWriteLock(name string) *ReadWriteLock {
	return &ReadWriteLock{c: c, name: name}
}

// ReadLock returns the shared side [readLock()]: IsLocked reports whether
// anyone reads (the writer's own read holds included), and re-entry renews
// the reader's hold.
func (rw *ReadWriteLock) ReadLock() *Lock { return rw.side(kindRead) }

// WriteLock returns the exclusive side [writeLock()]: a re-entry extends the
// lease by the new one (Redisson's write re-entry), and the last write
// unlock of an owner that still reads leaves the lock in read mode without
// a message.
func (rw *ReadWriteLock) WriteLock() *Lock { return rw.side(kindWrite) }

func (rw *ReadWriteLock) side(k kind) *Lock {
	if rw == nil {
		return newLock(nil, "", k)
	}
	return newLock(rw.c, rw.name, k)
}
