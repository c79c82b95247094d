package rlock

// BlockedWaiters returns how many waiters of c block on channel now, for
// the package's external benchmarks.
func BlockedWaiters(c *Client, channel string) int { return c.e.Waiters(channel) }
