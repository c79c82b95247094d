// Package cluster tells which Redis Cluster master serves a key, for the
// commands goredisson sends itself instead of through go-redis's routing:
// raw commands (whose MOVED and ASK replies go-redis never sees) and
// sharded subscriptions.
//
// It asks go-redis's slot map first (ClusterClient.MasterForKey) and keeps
// what MOVED replies taught it (the slot's new owner) until go-redis's map
// agrees, so that a command is not sent to the old owner over and over
// while go-redis reloads its map.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Nodes maps keys to the master that serves them. It is safe for concurrent
// use. The zero value is not usable: call New.
type Nodes struct {
	cc *redis.ClusterClient

	mu      sync.Mutex
	hints   map[int]string           // slot -> owner address, from MOVED replies
	clients map[string]*redis.Client // address -> go-redis's client for that node

	reloadMu   sync.Mutex
	lastReload time.Time
}

// New returns the Nodes of cc.
func New(cc *redis.ClusterClient) *Nodes {
	return &Nodes{cc: cc, hints: make(map[int]string), clients: make(map[string]*redis.Client)}
}

// Addr returns the address of a go-redis node client.
func Addr(c *redis.Client) string { return c.Options().Addr }

// Master returns the client of the master serving key's slot, and its
// address: the owner a MOVED reply named, until go-redis's slot map agrees,
// else the one go-redis's map names.
func (n *Nodes) Master(ctx context.Context, key string) (*redis.Client, string, error) {
	slot := Slot(key)
	c, err := n.cc.MasterForKey(ctx, key)
	n.mu.Lock()
	hint, hinted := n.hints[slot]
	if err == nil {
		addr := Addr(c)
		n.clients[addr] = c
		if hinted && hint == addr {
			delete(n.hints, slot) // go-redis caught up
			hinted = false
		}
	}
	var hc *redis.Client
	if hinted {
		hc = n.clients[hint]
	}
	n.mu.Unlock()
	if hinted && hc == nil {
		hc, _ = n.Node(ctx, hint)
	}
	if hc != nil {
		return hc, hint, nil
	}
	if err != nil {
		return nil, "", err
	}
	return c, Addr(c), nil
}

// Moved records a MOVED reply: slot is served by addr from now on. It asks
// go-redis to reload its slot map.
func (n *Nodes) Moved(slot int, addr string) {
	n.mu.Lock()
	n.hints[slot] = addr
	n.mu.Unlock()
	n.cc.ReloadState(context.Background())
}

// Forget drops what is known about addr (a node that cannot be reached or
// whose client was closed): hints that point at it, and its client. It asks
// go-redis to reload its slot map.
func (n *Nodes) Forget(addr string) {
	n.mu.Lock()
	for slot, a := range n.hints {
		if a == addr {
			delete(n.hints, slot)
		}
	}
	delete(n.clients, addr)
	n.mu.Unlock()
	n.cc.ReloadState(context.Background())
}

// Node returns go-redis's client for the node at addr. A node it does not
// know yet is looked for in a fresh copy of the slot map (masters and
// replicas).
func (n *Nodes) Node(ctx context.Context, addr string) (*redis.Client, error) {
	n.mu.Lock()
	c := n.clients[addr]
	n.mu.Unlock()
	if c != nil {
		return c, nil
	}
	if err := n.Reload(ctx); err != nil {
		return nil, err
	}
	n.mu.Lock()
	c = n.clients[addr]
	n.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("cluster: node %s is not in the cluster's slot map", addr)
	}
	return c, nil
}

// minReload is the least time between two reloads of the slot map that
// Reload makes itself; a caller that comes sooner shares the last one.
const minReload = 50 * time.Millisecond

// Reload reloads go-redis's slot map now (at most once per minReload) and
// learns every node's client from it.
func (n *Nodes) Reload(ctx context.Context) error {
	n.reloadMu.Lock()
	defer n.reloadMu.Unlock()
	if time.Since(n.lastReload) < minReload {
		return nil
	}
	found := make(map[string]*redis.Client)
	var mu sync.Mutex
	err := n.cc.ForEachShard(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		found[Addr(c)] = c
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	n.lastReload = time.Now()
	n.mu.Lock()
	for a, c := range found {
		n.clients[a] = c
	}
	n.mu.Unlock()
	return nil
}

// Redirect is a MOVED or ASK reply: the command was not run; slot is
// served (MOVED), or for this one command (ASK), by Addr.
type Redirect struct {
	Ask  bool
	Slot int
	Addr string
}

// ParseRedirect reads a MOVED or ASK error reply ("MOVED 3999
// 127.0.0.1:6381").
func ParseRedirect(msg string) (Redirect, bool) {
	kind, rest, ok := strings.Cut(msg, " ")
	if !ok || (kind != "MOVED" && kind != "ASK") {
		return Redirect{}, false
	}
	slotText, addr, ok := strings.Cut(rest, " ")
	if !ok || addr == "" {
		return Redirect{}, false
	}
	slot, err := strconv.Atoi(slotText)
	if err != nil || slot < 0 || slot >= 16384 {
		return Redirect{}, false
	}
	if strings.HasPrefix(addr, ":") {
		// An empty host means the node that sent the reply (Redis 7's
		// cluster-preferred-endpoint-type unknown-endpoint).
		return Redirect{}, false
	}
	return Redirect{Ask: kind == "ASK", Slot: slot, Addr: addr}, true
}

// ErrNoKey is returned for a command that has no key to route by.
var ErrNoKey = errors.New("cluster: command has no key")

// Slot returns the Redis Cluster hash slot of a key or shard channel name:
// CRC16 (XMODEM) of its hash tag (the text between the first "{" and the
// next "}", when not empty) or else of the whole name, modulo 16384, as the
// Redis Cluster specification defines it.
func Slot(name string) int {
	if i := strings.IndexByte(name, '{'); i >= 0 {
		if j := strings.IndexByte(name[i+1:], '}'); j > 0 {
			name = name[i+1 : i+1+j]
		}
	}
	return int(crc16(name) % 16384)
}

// crc16 is CRC-16/XMODEM: polynomial 0x1021, initial value 0, no
// reflection.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
