package transport

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/inline"
)

// The inline lane on Sentinel.
//
// go-redis follows a new primary on the user's pool only: its failover
// client hears +switch-master from one Sentinel (and sees where each of
// its dials goes) and then drops that pool's connections to the old
// primary. A lane of ours must follow at least as promptly, or it would
// take locks on the old primary while the pool (and every other Client)
// takes them on the new one. So a sentinelWatch learns the Sentinels (from
// their hello messages on the primary), subscribes to +switch-master on
// every one, and asks them for the primary every watchPoll (a message
// missed while a subscription reconnected is caught so). The lane is made
// for the address the Sentinels name (it dials as the user's client does
// and refuses a connection that reaches another server); on a switch it
// is swapped (the call in flight ends, then the old lane is shut), and
// while no Sentinel answers there is none: calls go through the flusher.

// watchPoll is how often the watch asks the Sentinels for the primary;
// maxDiscoverPause bounds the pause between failed discoveries (each
// waits up to 5 s for a hello).
const (
	watchPoll        = time.Second
	maxDiscoverPause = 30 * time.Second
	// refuseFor is how long no lane is made again for an address whose
	// lane's dial reached another server (unless a switch names it).
	refuseFor = 30 * time.Second
)

// sentinelWatch follows the primary of a Sentinel client (see above).
type sentinelWatch struct {
	s    *Sender
	user *redis.Client
	ctx  context.Context
	stop context.CancelFunc
	poke chan struct{} // ask the Sentinels now

	mu        sync.Mutex
	name      string
	sentinels []*redis.SentinelClient
	subs      []*redis.PubSub
	seq       uint64 // switches heard: an answer asked for before one is stale
	closed    bool
}

func newSentinelWatch(s *Sender, user *redis.Client) *sentinelWatch {
	ctx, stop := context.WithCancel(context.Background())
	w := &sentinelWatch{s: s, user: user, ctx: ctx, stop: stop, poke: make(chan struct{}, 1)}
	go w.run()
	return w
}

// close ends the watch (Sender.Shut).
func (w *sentinelWatch) close() {
	w.stop()
	w.mu.Lock()
	w.closed = true
	subs, sentinels := w.subs, w.sentinels
	w.subs, w.sentinels = nil, nil
	w.mu.Unlock()
	for _, p := range subs {
		_ = p.Close()
	}
	for _, c := range sentinels {
		_ = c.Close()
	}
}

// moved reports whether the lane's call found the primary moved: its dial
// reached another server (nothing was sent; the caller sends o through
// the flusher), after which, or after a READONLY reply (the server is a
// replica now; the reply is o's outcome, as on the flusher), the lane is
// dropped and the Sentinels asked again.
func (w *sentinelWatch) moved(o *Op, lane *inline.Lane) bool {
	dialed := errors.Is(o.Err, inline.ErrMoved)
	e, ok := o.V.(ReplyError)
	if !dialed && !(ok && readOnly(string(e))) {
		return false
	}
	w.s.dropLane(lane, dialed)
	select {
	case w.poke <- struct{}{}:
	default:
	}
	return dialed
}

// readOnly reports whether e is Redis's READONLY error, as the reply or,
// before Redis 7, inside a script's error ("ERR Error running script ...
// -READONLY You can't write against a read only replica."; "slave"
// before Redis 5). Redis's whole phrase is matched, not a user's words.
func readOnly(e string) bool {
	return HasPrefix(e, "READONLY") ||
		strings.Contains(e, "-READONLY You can't write against a read only ")
}

// run learns the Sentinels, subscribes to them, and keeps the lane on the
// primary they name until close.
func (w *sentinelWatch) run() {
	defer w.s.setPrimary("")
	for pause := watchPoll; !w.discover(); pause = min(2*pause, maxDiscoverPause) {
		if !w.sleep(pause) {
			return
		}
	}
	switched := make(chan string, 8)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	for _, sc := range w.sentinels {
		p := sc.Subscribe(w.ctx, "+switch-master")
		w.subs = append(w.subs, p)
		go w.listen(p.Channel(), switched) // closed by close's p.Close
	}
	w.mu.Unlock()
	t := time.NewTicker(watchPoll)
	defer t.Stop()
	for {
		w.ask()
		select {
		case <-w.ctx.Done():
			return
		case addr := <-switched:
			w.mu.Lock()
			w.seq++
			w.mu.Unlock()
			w.s.switched(addr)
		case <-w.poke:
		case <-t.C:
		}
	}
}

// listen passes on the new primary of each +switch-master for the name.
func (w *sentinelWatch) listen(ch <-chan *redis.Message, switched chan<- string) {
	for m := range ch {
		f := strings.Fields(m.Payload) // <name> <old ip> <old port> <new ip> <new port>
		if len(f) != 5 || f[0] != w.name {
			continue
		}
		select {
		case switched <- net.JoinHostPort(f[3], f[4]):
		case <-w.ctx.Done():
			return
		}
	}
}

// ask asks the Sentinels in turn for the primary and makes the lane's
// address the first answer (none when no Sentinel answers), unless a
// switch was heard meanwhile.
func (w *sentinelWatch) ask() {
	w.mu.Lock()
	seq, sentinels := w.seq, w.sentinels
	w.mu.Unlock()
	addr := ""
	for _, sc := range sentinels {
		ctx, cancel := context.WithTimeout(w.ctx, watchPoll/2)
		a, err := sc.GetMasterAddrByName(ctx, w.name).Result()
		cancel()
		if err == nil && len(a) == 2 {
			addr = net.JoinHostPort(a[0], a[1])
			break
		}
	}
	w.mu.Lock()
	fresh := seq == w.seq
	w.mu.Unlock()
	if fresh && w.ctx.Err() == nil {
		w.s.setPrimary(addr)
	}
}

// discover learns the primary's name and the Sentinels from one of their
// hello messages on the primary (each Sentinel sends one every 2 s) and
// the Sentinels that one knows.
func (w *sentinelWatch) discover() bool {
	ctx, cancel := context.WithTimeout(w.ctx, 5*time.Second)
	defer cancel()
	p := w.user.Subscribe(ctx, "__sentinel__:hello")
	defer p.Close()
	m, err := p.ReceiveMessage(ctx)
	if err != nil {
		return false
	}
	// <ip>,<port>,<runid>,<epoch>,<name>,<primary ip>,<primary port>,<epoch>
	f := strings.Split(m.Payload, ",")
	if len(f) != 8 {
		return false
	}
	addrs := []string{net.JoinHostPort(f[0], f[1])}
	first := w.sentinel(addrs[0])
	others, err := first.Sentinels(ctx, f[4]).Result()
	_ = first.Close()
	if err != nil {
		return false
	}
	for _, o := range others {
		if o["ip"] != "" && o["port"] != "" {
			addrs = append(addrs, net.JoinHostPort(o["ip"], o["port"]))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return true
	}
	w.name = f[4]
	for _, a := range addrs {
		w.sentinels = append(w.sentinels, w.sentinel(a))
	}
	return true
}

// sentinel returns a client for the Sentinel at addr, with the user's TLS
// and timeouts (go-redis's failover client uses its own Sentinel
// credentials, which its options do not show: a Sentinel that wants them
// refuses, and there is no lane).
func (w *sentinelWatch) sentinel(addr string) *redis.SentinelClient {
	uo := w.user.Options()
	return redis.NewSentinelClient(&redis.Options{
		Addr: addr, TLSConfig: uo.TLSConfig, DialTimeout: uo.DialTimeout,
		ReadTimeout: uo.ReadTimeout, WriteTimeout: uo.WriteTimeout, PoolSize: 2,
	})
}

// sleep waits d or until close; it reports false on close.
func (w *sentinelWatch) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// setPrimary makes one's lane a lane to addr ("": none), unless it is so
// already or the Sender is shut.
func (s *Sender) setPrimary(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut || (addr == s.primary && (addr == "" || s.one.hasLane())) {
		return
	}
	if addr == s.refused && time.Since(s.refusedAt) < refuseFor {
		// A lane made for addr reached another server (a dialer through
		// a tunnel or proxy, Sentinels announcing a name, or go-redis's
		// failover client not yet knowing of the switch): none, until
		// the Sentinels name another primary, a switch names it, or
		// refuseFor has passed.
		if s.primary != "" {
			s.primary = ""
			s.one.swapLane(nil, nil)
		}
		return
	}
	s.refused = ""
	s.primary = addr
	var l *inline.Lane
	var more []*inline.Lane
	if addr != "" {
		user := s.one.rdb.(*redis.Client)
		l, more = newLanes(func() *inline.Lane {
			l := inline.NewSentinel(user, addr)
			l.ProbeFence(s.cfg.Fence)
			return l
		})
	}
	s.one.swapLane(l, more)
}

// switched is told of a +switch-master naming addr: a refusal ends (the
// watch may hear a switch before go-redis's failover client, whose dialer
// the lane uses, knows of it; every Sentinel publishes one).
func (s *Sender) switched(addr string) {
	s.mu.Lock()
	s.refused = ""
	s.mu.Unlock()
	s.setPrimary(addr)
}

// dropLane drops lane if it is still one's (the next ask makes another;
// none for the same primary when moved: its dial reached another server).
func (s *Sender) dropLane(lane *inline.Lane, moved bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.one.laneIs(lane) {
		if moved {
			s.refused, s.refusedAt = s.primary, time.Now()
		}
		s.primary = ""
		s.one.swapLane(nil, nil)
	}
}

func (b *batcher) hasLane() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lane != nil
}

// laneIs reports whether l is one of the batcher's lanes.
func (b *batcher) laneIs(l *inline.Lane) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return l != nil && (b.lane == l || slices.Contains(b.more, l))
}

// primaryAddr returns the address one's lane dials on Sentinel (tests).
func (s *Sender) primaryAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.primary
}
