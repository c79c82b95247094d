// Package scenario plays the coupon flash sale of rlockctl's demo against
// real Redis, once without a lock and once with goredisson, and reports what
// happened. (The programs under examples/ write their scenarios out in full,
// as a user would; this package is the demo's.)
package scenario
