package rlock

import (
	"context"
	"strings"
	"time"
)

// ACL users (docs/layout.md, "ACL users"): a Redis user that may not
// publish or subscribe on the lock channels still locks and unlocks; its
// releases take effect and return nil, its waiters are not woken by
// unlocks: those whose subscription was refused poll every second. The
// Client says so once, by a warning, the first time Redis refuses one of
// its publishes (here) or subscriptions (package pubsub). A key refusal
// names the keys the user may not access (nameRefusedKeys).

// publishRefused logs, once per Client, that a script's publish was
// refused; what is "<channel>: <Redis error>".
func (c *Client) publishRefused(what string) {
	if !c.pubRefused.CompareAndSwap(false, true) {
		return
	}
	c.logger().Warn("goredisson: the Redis user may not publish on the lock channels, releases take effect but wake no waiter (a waiter that may not subscribe polls every second); grant the channels docs/layout.md lists (ACL users)",
		"refused", what)
}

// keyRefused reports whether the op came back refused by an ACL for one of
// its keys: at the call ("NOPERM ... keys", Valkey "NOPERM ... a key"), or
// inside a script (Redis "... can't access at least one of the keys",
// Valkey "ACL failure in script: ... a key"). Neither says which key.
func (o *op) keyRefused() bool {
	e, ok := o.v.(replyError)
	if o.err != nil || !ok {
		return false
	}
	msg := string(e)
	return (hasPrefix(msg, "NOPERM") && strings.Contains(msg, "key")) ||
		strings.Contains(msg, "can't access at least one of the keys") ||
		(strings.Contains(msg, "ACL failure in script") && strings.Contains(msg, "key"))
}

// keys returns the keys the op names: a script's declared keys, a plain
// command's first argument.
func (o *op) keys() []string {
	var out []string
	if o.s != nil {
		if len(o.line) > 3 {
			if n, ok := o.line[2].(int); ok {
				for _, k := range o.line[3:min(3+n, len(o.line))] {
					if s, ok := k.(string); ok {
						out = append(out, s)
					}
				}
			}
		}
		return out
	}
	if k, ok := o.routeKey(); ok {
		out = append(out, k)
	}
	return out
}

// nameRefusedKeys adds to a key refusal the keys this user may not access,
// found by an EXISTS of each (a read the user's key patterns decide), so
// that the error names the missing ACL key pattern.
func (c *Client) nameRefusedKeys(o *op) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var denied []string
	for _, k := range o.keys() {
		err := c.rdb.Exists(ctx, k).Err()
		if err != nil && hasPrefix(err.Error(), "NOPERM") && strings.Contains(err.Error(), "key") {
			denied = append(denied, k)
		}
	}
	what := "a key the script derives from its keys"
	if len(denied) > 0 {
		what = "key " + strings.Join(denied, ", ")
	}
	o.v = replyError(string(o.v.(replyError)) + " [the Redis user may not access " + what +
		"; docs/layout.md lists the ACL key patterns and channels each type needs]")
}
