package transport

import (
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/cluster"
)

// Cluster redirections. Once its batcher has sent an op, Sender.after
// decides whether the reply is its outcome or the op goes on: MOVED and
// ASK to the node named (sendTo), TRYAGAIN and CLUSTERDOWN (and a node
// whose client go-redis closed) again after a pause, within
// redirectBudget.

// Bounds of following redirections: a MOVED or ASK is followed at once, a
// TRYAGAIN or CLUSTERDOWN (and a MOVED that points where the command was
// sent, or a node whose client went away) after a pause that starts at
// redirectPause and doubles up to maxRedirectPause. After redirectBudget
// since the op was first sent, the last reply is the op's outcome.
const (
	redirectPause    = 5 * time.Millisecond
	maxRedirectPause = 100 * time.Millisecond
	redirectBudget   = 10 * time.Second
	// immediateHops is how many redirections in a row are followed without
	// a pause.
	immediateHops = 4
)

// after decides what becomes of an op its batcher has sent: on a Redis
// Cluster a redirection sends it on (the command did not run); otherwise
// its outcome is final and done is closed.
func (s *Sender) after(o *Op, from *batcher) {
	o.asking = false
	if o.unpublished != "" {
		s.cfg.PublishRefused(o.unpublished)
	}
	if !o.probed && o.KeyRefused() {
		// Name the keys the user may not access, off the flusher. An op
		// sent inline has no done channel yet (its caller's exec reads
		// done after submit returns): give it one before going async.
		o.probed = true
		if o.done == nil {
			o.done = make(chan struct{})
		}
		go func() {
			s.cfg.NameRefusedKeys(o)
			s.after(o, from)
		}()
		return
	}
	if s.nodes == nil || s.followedEnough(o) {
		o.markDone()
		return
	}
	var pause time.Duration
	var again bool
	if o.Err != nil {
		pause, again = s.afterError(o, from)
	} else {
		pause, again = s.afterReply(o, from)
	}
	if !again {
		o.markDone()
		return
	}
	s.resubmit(o, pause)
}

// followedEnough reports whether o may not be sent on again: its ctx ended
// (but for a clean-up) or the redirect budget since it was first sent is
// spent.
func (s *Sender) followedEnough(o *Op) bool {
	return (o.Ctx.Err() != nil && !s.cfg.IsCleanup(o.Ctx)) || time.Since(o.first) > redirectBudget
}

// resubmit sends o on after pause (at once when 0), counting one more
// redirection.
func (s *Sender) resubmit(o *Op, pause time.Duration) {
	o.redirects++
	if pause == 0 {
		s.submit(o)
		return
	}
	time.AfterFunc(pause, func() { s.submit(o) })
}

// afterError decides on an op that got no reply: it is sent again (again)
// only when go-redis closed its client for the node (the node left the slot
// map); a node that could not be reached is forgotten, so that go-redis
// looks again, and the error is the op's outcome.
func (s *Sender) afterError(o *Op, from *batcher) (pause time.Duration, again bool) {
	if errors.Is(o.Err, redis.ErrClosed) && from.addr != "" {
		s.nodes.Forget(from.addr)
		s.unroute(-1, from)
		o.target = ""
		return o.nextPause(true), true
	}
	if from.addr != "" && unreachable(o.Err) {
		s.nodes.Forget(from.addr) // down, or gone: have go-redis look again
		s.unroute(-1, from)
	}
	return 0, false
}

// afterReply decides on an op that got a reply: a MOVED or ASK sends it on
// to the node named, a TRYAGAIN or CLUSTERDOWN (a multi-key command during
// a slot's migration, the cluster settling after a failover) sends it again
// after a pause; any other reply is its outcome.
func (s *Sender) afterReply(o *Op, from *batcher) (pause time.Duration, again bool) {
	e, ok := o.V.(ReplyError)
	if !ok {
		return 0, false
	}
	if r, ok := cluster.ParseRedirect(string(e)); ok {
		if !r.Ask {
			s.nodes.Moved(r.Slot, r.Addr)
			s.unroute(r.Slot, from)
		}
		o.target = r.Addr
		o.asking = r.Ask
		return o.nextPause(r.Addr == from.addr), true
	}
	if !HasPrefix(string(e), "TRYAGAIN") && !HasPrefix(string(e), "CLUSTERDOWN") {
		return 0, false
	}
	o.target = ""
	return o.nextPause(true), true
}

// nextPause returns the pause before an op is sent on: none for the first
// immediateHops redirections in a row (unless wait is set), then growing.
func (o *Op) nextPause(wait bool) time.Duration {
	if !wait && o.redirects < immediateHops {
		return 0
	}
	p := redirectPause << min(o.redirects, 5)
	return min(p, maxRedirectPause)
}

// sendTo sends o to the node a redirection named (o.target), waiting for
// go-redis's slot map to learn that node when it does not know it yet
// (waitForNode); an op whose node cannot be found is done, not sent.
func (s *Sender) sendTo(o *Op) {
	addr := o.target
	rdb, err := s.nodes.Node(o.Ctx, addr)
	switch {
	case err == nil:
		s.batcherFor(rdb, addr).add(o)
	case !s.waitForNode(o):
		o.endNotSent(err)
	}
}

// waitForNode sends o again after a pause when the node a redirection
// named is not in go-redis's slot map yet (a reload answered by a node that
// has not heard of it), within the redirect budget and while its ctx lives:
// nothing was sent, and the map learns the node soon. It reports whether o
// was rescheduled.
func (s *Sender) waitForNode(o *Op) bool {
	if s.followedEnough(o) || s.cfg.Closed() {
		return false
	}
	s.resubmit(o, o.nextPause(true))
	return true
}
