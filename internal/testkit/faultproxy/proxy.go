// Package faultproxy is a TCP relay for fault-injection tests: clients
// connect to the proxy instead of Redis, and the test adds latency, loses
// responses, resets connections or cuts the clients off (a partition).
//
// A response that is lost, or a request that a partition swallows, leaves
// its connection unusable (the byte stream has a hole), so such connections
// are reset when the fault ends, as a real connection whose segments never
// arrive would eventually be. The client then sees a timeout on the lost
// call and a fresh connection afterwards.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy relays connections from Addr to an upstream address.
type Proxy struct {
	// Addr is the proxy's loopback host:port: point the client here.
	Addr string

	upstream string
	ln       net.Listener

	mu          sync.Mutex
	latency     time.Duration
	drop        bool // server -> client bytes are discarded
	partitioned bool // nothing passes; new connections hang
	links       map[*link]struct{}
	stats       Stats
	wg          sync.WaitGroup
	closed      bool
}

// Stats counts what the proxy did.
type Stats struct {
	Accepted     int // client connections accepted
	Resets       int // connections reset (ResetConnections, ends of faults)
	DroppedBytes int // response bytes discarded
}

type link struct {
	client, server net.Conn // server is nil for a connection accepted while partitioned
	poisoned       bool     // bytes were lost: reset when the fault ends
}

// Start listens on a free loopback port and relays to upstream.
func Start(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), upstream: upstream, ln: ln, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			return
		}
		p.stats.Accepted++
		partitioned := p.partitioned
		l := &link{client: c, poisoned: partitioned}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		if partitioned {
			p.wg.Add(1)
			go p.pipe(l, c, nil, false) // swallow what the client sends
			continue
		}
		s, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
		if err != nil {
			p.drop1(l)
			continue
		}
		p.mu.Lock()
		if _, live := p.links[l]; !live {
			// Reset or closed while dialing: the client end is gone.
			p.mu.Unlock()
			_ = s.Close()
			continue
		}
		l.server = s
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(l, c, s, false)
		go p.pipe(l, s, c, true)
	}
}

// pipe copies from src to dst (dst nil: discard), applying the faults.
func (p *Proxy) pipe(l *link, src, dst net.Conn, response bool) {
	defer p.wg.Done()
	defer p.drop1(l)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			latency, lose := p.latency, p.partitioned || (response && p.drop) || dst == nil
			if lose {
				l.poisoned = true
				if response {
					p.stats.DroppedBytes += n
				}
			}
			p.mu.Unlock()
			if latency > 0 {
				time.Sleep(latency)
			}
			if !lose {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// drop1 closes both ends of a link and forgets it.
func (p *Proxy) drop1(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	server := l.server // set by accept under mu, maybe while a reset drops the link
	p.mu.Unlock()
	_ = l.client.Close()
	if server != nil {
		_ = server.Close()
	}
}

// reset closes the links selected by which with a TCP RST.
func (p *Proxy) reset(which func(*link) bool) {
	p.mu.Lock()
	var victims []*link
	for l := range p.links {
		if which(l) {
			victims = append(victims, l)
		}
	}
	p.stats.Resets += len(victims)
	p.mu.Unlock()
	for _, l := range victims {
		if tc, ok := l.client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST instead of FIN
		}
		p.drop1(l)
	}
}

// SetLatency delays every chunk of bytes, in both directions, by d.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// DropResponses makes the proxy discard what Redis answers while on: the
// commands run, their replies never arrive. Turning it off resets the
// connections that lost replies.
func (p *Proxy) DropResponses(on bool) {
	p.mu.Lock()
	p.drop = on
	p.mu.Unlock()
	if !on {
		p.reset(func(l *link) bool { return l.poisoned })
	}
}

// Partition cuts the clients off while on: nothing passes either way and
// new connections are accepted but never answered. Turning it off resets
// every connection that lost bytes, and new connections work again.
func (p *Proxy) Partition(on bool) {
	p.mu.Lock()
	p.partitioned = on
	p.mu.Unlock()
	if !on {
		p.reset(func(l *link) bool { return l.poisoned })
	}
}

// ResetConnections resets every connection through the proxy now.
func (p *Proxy) ResetConnections() { p.reset(func(*link) bool { return true }) }

// Stats returns what the proxy has done so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops listening, closes every connection and waits for the relay
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errors.New("faultproxy: already closed")
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.reset(func(*link) bool { return true })
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}
