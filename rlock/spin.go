package rlock

import "github.com/goredisson/goredisson/internal/engine"

// SpinLock is Lock, the type NewSpinLock returns (an alias).
type SpinLock = Lock

// NewSpinLock returns the spin lock of the given name [getSpinLock].
func (c *Client) NewSpinLock(name string) *Lock {
	return newLock(c, name, engine.KindSpin)
}
