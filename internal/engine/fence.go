package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/transport"
)

// Fencing a lost call (docs/internals.md, "Fencing a lost call"). An
// acquire or release that goes out on a lane connection whose server-side
// id the Client knows (inline.Fence) reads no cancel floor: should its
// reply be lost, its connection is closed on the server (CLIENT KILL ID
// <id> ADDR <addr> SKIPME yes) before the settle runs, so that the call
// cannot run after the settle; every other call reads the floor and is
// settled by it alone.

// fence closes, on the node serving key, the connection the lost call went
// out on reading no cancel floor. Either count the server answers (1: it
// closed it; 0: no such connection, gone already) means the server runs
// nothing more that came on it. A kill that did not run, or whose reply
// was lost, is sent again while until lasts (see sendAgain); past it the
// settle fails and is kept, as one that cannot reach Redis is, and its
// next run fences first again. A kill the server refuses (an error reply:
// the ACL no longer allows CLIENT KILL, a proxy came between) makes every
// later call of the Client read the floor (Sender.FenceRefused); the lost
// call itself is then settled only once it is older than cancelTTL, the
// bound on how long a call can sit in a socket buffer or a hung server
// that the cancel floor's own life already assumes.
func (c *Core) fence(ctx context.Context, lost *transport.Op, key string, until time.Time) error {
	var pause time.Duration
	for {
		o := transport.KillOp(ctx, key, lost.Fenced())
		if err := c.exec(ctx, o); err != nil {
			return err
		}
		if o.Outcome() != transport.Replied {
			if c.sendAgain(ctx, o, until, &pause) {
				continue
			}
			return fmt.Errorf("fence: %w", o.ReplyErr())
		}
		err := o.ReplyErr()
		if err == nil {
			return nil
		}
		if c.send.Fencing() {
			c.send.FenceRefused()
			c.Logger().Warn("goredisson: Redis refused to close the connection of a call whose reply was lost (CLIENT KILL); from now on every acquire and release reads the cancel floor",
				"err", err)
		}
		if age := time.Since(lost.FirstSent()); age > cancelTTL {
			return nil
		}
		return fmt.Errorf("fence refused (the lost call is settled once it is %v old): %w", cancelTTL, err)
	}
}
