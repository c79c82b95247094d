package rlock

import "github.com/goredisson/goredisson/internal/engine"

// FairLock is Lock, the type NewFairLock returns (an alias).
type FairLock = Lock

// NewFairLock returns the fair lock of the given name [getFairLock].
func (c *Client) NewFairLock(name string) *Lock {
	return newLock(c, name, engine.KindFair)
}

// NewNonReentrantFairLock is NewFairLock without re-entry
// [getNonReentrantFairLock].
func (c *Client) NewNonReentrantFairLock(name string) *Lock {
	return newLock(c, name, engine.KindNonReentrantFair)
}
