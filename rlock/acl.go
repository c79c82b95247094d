package rlock

// ACL users (docs/layout.md, "ACL users"): a Redis user that may not
// publish or subscribe on the lock channels still locks and unlocks; its
// releases take effect and return nil, its waiters are not woken by
// unlocks and sleep to the TTL they saw. The Client says so once, by a
// warning, the first time Redis refuses one of its publishes (here) or
// subscriptions (package pubsub).

// publishRefused logs, once per Client, that a script's publish was
// refused; what is "<channel>: <Redis error>".
func (c *Client) publishRefused(what string) {
	if !c.pubRefused.CompareAndSwap(false, true) {
		return
	}
	c.logger().Warn("goredisson: the Redis user may not publish on the lock channels, releases take effect but wake no waiter (they wait up to the lock's TTL); grant the channels docs/layout.md lists (ACL users)",
		"refused", what)
}
