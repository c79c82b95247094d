// Package scenario holds the situations goredisson's users come from (see
// the seeds in the design notes): a coupon flash sale, stock deduction, a
// hot cache key expiring under load, and the ladder of naive SETNX locks.
// Each is played against real Redis, once without a lock (or with a naive
// one) and once with goredisson, and returns what happened, so that the
// rlockctl demo, the programs under examples/ and the specs share one
// implementation.
package scenario
