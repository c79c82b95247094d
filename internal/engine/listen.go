package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
)

// Redisson's object listeners [addListener(ObjectListener)] on locks and
// synchronizers: keyevent notifications of the object's key being deleted
// or expiring (rlock's Listen methods; docs/api.md).

// keyeventChannels are the keyevent channels of the Client's database
// (Redisson subscribes to every database's, __keyevent@*:del, which a key
// of the same name in another database fires); DB 0 on a Cluster.
func (c *Core) keyeventChannels() (del, expired string) {
	db := 0
	if rc, ok := c.rdb.(*redis.Client); ok {
		db = rc.Options().DB
	}
	return fmt.Sprintf("__keyevent@%d__:del", db), fmt.Sprintf("__keyevent@%d__:expired", db)
}

// Listen subscribes, on its own connection to the node of name, to
// Redisson's keyevent patterns, and calls fn on one goroutine with the
// events of name (expired: it expired; else it was deleted) until ctx
// ends, stop is called or the Client closes. It returns once the
// subscription is confirmed; stop waits until fn has returned and the
// goroutine ended, unless fn itself calls it.
func (c *Core) Listen(ctx context.Context, name string, fn func(expired bool)) (stop func(), err error) {
	node := redis.UniversalClient(c.rdb)
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		// Keyevent notifications are published by the node that has the key.
		n, err := cc.MasterForKey(ctx, name)
		if err != nil {
			return nil, err
		}
		node = n
	}
	if err := checkNotify(ctx, node); err != nil {
		return nil, err
	}
	del, expired := c.keyeventChannels()
	sub := node.Subscribe(ctx, del, expired)
	for range 2 {
		if _, err := sub.Receive(ctx); err != nil {
			_ = sub.Close()
			return nil, err
		}
	}
	msgs := sub.Channel()
	quit, done := make(chan struct{}), make(chan struct{})
	gid := make(chan string, 1) // the delivering goroutine's number
	go func() {
		defer close(done)
		gid <- ctxowner.Of(context.Background())
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case <-quit:
				return
			case <-c.done:
				return
			case m, ok := <-msgs:
				if !ok {
					return
				}
				if m.Payload == name {
					fn(strings.HasSuffix(m.Channel, ":expired"))
				}
			}
		}
	}()
	var once sync.Once
	self := <-gid
	return func() {
		once.Do(func() { close(quit) })
		if ctxowner.Of(context.Background()) != self { // from fn it cannot wait for fn
			<-done
		}
	}, nil
}

// checkNotify fails with errors.ErrUnsupported when the server's
// notify-keyspace-events leaves out keyevent notifications of DEL or of
// expiry; a server that refuses CONFIG GET is not checked.
func checkNotify(ctx context.Context, node redis.UniversalClient) error {
	got, err := node.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return nil
	}
	v, ok := got["notify-keyspace-events"]
	if !ok {
		return nil
	}
	all := strings.Contains(v, "A")
	if strings.Contains(v, "E") && (all || strings.Contains(v, "g")) && (all || strings.Contains(v, "x")) {
		return nil
	}
	return fmt.Errorf("%w: Redis's notify-keyspace-events is %q; deleted and expired events need E, g and x (CONFIG SET notify-keyspace-events Egx)", errors.ErrUnsupported, v)
}
