package main

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// --- redis/rueidis/rueidislock

// rueidisMutex holds a rueidislock lock as the context WithContext returns;
// releasing is cancelling it (the cancel func returns once the keys are
// deleted).
type rueidisMutex struct {
	ctx     context.Context
	l       rueidislock.Locker
	key     string
	release context.CancelFunc
}

func (m *rueidisMutex) lock() error {
	_, cancel, err := m.l.WithContext(m.ctx, m.key)
	if err != nil {
		return err
	}
	m.release = cancel
	return nil
}

func (m *rueidisMutex) unlock() error {
	if m.release == nil {
		return errors.New("rueidislock: unlock of a lock not held")
	}
	m.release()
	m.release = nil
	return nil
}

// openRueidislock opens one rueidislock Locker, on a rueidis client of its
// own (rueidislock has no go-redis adapter), whose commands are counted
// into e.cnt by countingClient.
func openRueidislock(tuned bool) func(e env) (newMutexFunc, func(), error) {
	return func(e env) (newMutexFunc, func(), error) {
		seeds := e.addrs
		if len(seeds) == 0 {
			seeds = []string{e.addr}
		}
		opt := rueidislock.LockerOption{
			ClientOption: rueidis.ClientOption{InitAddress: seeds},
			ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
				c, err := rueidis.NewClient(o)
				if err != nil || e.cnt == nil {
					return c, err
				}
				return countingClient{Client: c, cnt: e.cnt}, nil
			},
		}
		if e.lease > 0 {
			opt.KeyValidity = e.lease
		}
		if tuned {
			// One Redis: one key, and no invalidations for the
			// connection's own writes (its README's advice). With one
			// key there is no next key to try, so TryNextAfter is only
			// the timeout of each acquiring call: its 20 ms default
			// fails calls that Redis did execute on a loaded machine,
			// and with NoLoopTracking such a caller was then never woken
			// again in our runs (a hung WithContext even on a key of its
			// own, in (b)).
			opt.KeyMajority = 1
			opt.NoLoopTracking = true
			opt.TryNextAfter = time.Second
		}
		l, err := rueidislock.NewLocker(opt)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, key string) mutex { return &rueidisMutex{ctx: ctx, l: l, key: key} }, l.Close, nil
	}
}

// countingClient counts the commands a rueidis client sends, as the go-redis
// hook does for the other libraries: a command counts 1 (a script call
// too, however many commands it runs), a DoMulti of n commands counts n.
// Connection set-up (HELLO, CLIENT TRACKING) does not pass through these
// methods, so it is not counted, as the go-redis hook skips it too.
// rueidislock calls only Do (its scripts' EVALSHA, and EVAL after NOSCRIPT);
// the client-side-caching invalidations it waits on are pushes from Redis,
// not commands. (Un)subscribe commands, had it any, would be counted from
// INFO commandstats, as for every library.
type countingClient struct {
	rueidis.Client
	cnt *counter
}

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.cnt.cmds.Add(1)
	if c.cnt.names != nil {
		c.cnt.named([]byte(cmd.Commands()[0]))
	}
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.cnt.cmds.Add(int64(len(multi)))
	for _, cmd := range multi {
		if c.cnt.names != nil {
			c.cnt.named([]byte(cmd.Commands()[0]))
		}
	}
	return c.Client.DoMulti(ctx, multi...)
}
