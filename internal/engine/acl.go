package engine

import (
	"context"
	"strings"
	"time"

	"github.com/goredisson/goredisson/internal/transport"
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
func (c *Core) publishRefused(what string) {
	if !c.pubRefused.CompareAndSwap(false, true) {
		return
	}
	c.Logger().Warn("goredisson: the Redis user may not publish on the lock channels, releases take effect but wake no waiter (a waiter that may not subscribe polls every second); grant the channels docs/layout.md lists (ACL users)",
		"refused", what)
}

// nameRefusedKeys adds to a key refusal the keys this user may not access,
// found by an EXISTS of each (a read the user's key patterns decide), so
// that the error names the missing ACL key pattern.
func (c *Core) nameRefusedKeys(o *transport.Op) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var denied []string
	for _, k := range o.Keys() {
		err := c.rdb.Exists(ctx, k).Err()
		if err != nil && transport.HasPrefix(err.Error(), "NOPERM") && strings.Contains(err.Error(), "key") {
			denied = append(denied, k)
		}
	}
	what := "a key the script derives from its keys"
	if len(denied) > 0 {
		what = "key " + strings.Join(denied, ", ")
	}
	o.V = transport.ReplyError(string(o.V.(transport.ReplyError)) + " [the Redis user may not access " + what +
		"; docs/layout.md lists the ACL key patterns and channels each type needs]")
}
