package rlock

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/engine"
)

// Client makes and serves locks; it is safe for concurrent use. Close it.
type Client struct {
	e *engine.Core
}

// NewClient returns a Client for a *redis.Client, failover or cluster client.
func NewClient(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	switch rdb.(type) {
	case nil:
		return nil, opErr("newclient", "", fmt.Errorf("%w: nil redis client", ErrInvalidArgument))
	case *redis.Ring:
		return nil, opErr("newclient", "", fmt.Errorf("%w: redis.Ring is not supported: it moves keys to another shard when one is marked down, and a lock must not move; use a Client per server with Redlock, or a Redis Cluster", ErrInvalidArgument))
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, opErr("newclient", "", err)
	}
	return &Client{e: engine.New(rdb, o.Config)}, nil
}

// core returns the Client's engine (nil for a nil Client).
func (c *Client) core() *engine.Core {
	if c == nil {
		return nil
	}
	return c.e
}

// ID returns the client UUID, the first half of every hash field it writes.
func (c *Client) ID() string { return c.e.ID() }

// Close stops the watchdog and subscriptions within 1 s (then ErrClosed).
func (c *Client) Close() error {
	if c == nil {
		return opErr("close", "", fmt.Errorf("%w: nil client", ErrInvalidArgument))
	}
	return opErr("close", "", c.e.Close())
}
