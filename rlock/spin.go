package rlock

// SpinLock is the spin kind of Lock, kept as a name so that code written
// against revision 2 of the API compiles. NewSpinLock documents how a spin
// lock behaves.
type SpinLock = Lock

// NewSpinLock returns the spin lock of the given name [getSpinLock]: a
// reentrant lock with the RLock layout whose waiters retry with exponential
// backoff and full jitter on the Client's schedule (WithSpinBackoff; default
// 1 ms doubling up to 128 ms) instead of subscribing to unlock messages
// (Redisson's RedissonSpinLock): for deployments where pub/sub is
// unavailable or unwanted. As Redisson's, its unlock publishes nothing and
// its ForceUnlock is a plain DEL. It excludes Lock and FencedLock holders of
// the same name.
func (c *Client) NewSpinLock(name string) *Lock {
	return newLock(c, name, kindSpin)
}
