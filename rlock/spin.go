package rlock

// SpinLock is the spin kind of Lock, kept as a name so that code written
// against revision 2 of the API compiles. NewSpinLock documents how a spin
// lock behaves.
type SpinLock = Lock

// NewSpinLock returns the spin lock of the given name [getSpinLock]: the
// RLock layout, whose waiters retry with backoff (WithSpinBackoff) instead of
// waiting for messages; its unlock publishes nothing and its ForceUnlock is a
// plain DEL, as Redisson's.
func (c *Client) NewSpinLock(name string) *Lock {
	return newLock(c, name, kindSpin)
}
