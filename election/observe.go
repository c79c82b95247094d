package election

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Observe returns a channel of leader values: the current leader's, then
// each new term's, a re-election of the same value too (ObserveTerms tells
// them apart); it closes when ctx ends. A time without a leader sends
// nothing.
func (e *Election) Observe(ctx context.Context) <-chan string {
	terms := e.ObserveTerms(ctx)
	ch := make(chan string)
	go func() {
		defer close(ch)
		for t := range terms {
			select {
			case ch <- t.Value:
			case <-ctx.Done():
				for range terms {
				}
				return
			}
		}
	}()
	return ch
}

// ObserveTerms returns a channel of terms: the current one, then each new
// one, in order, as etcd's Observe reports each new leader with its
// revision; it closes when ctx ends. It is told by a message the
// candidates publish on the election's channel
// ("goredisson_election__channel:<leader key>") in the script that writes
// the record, and reads the current term whenever its subscription is
// made or made again (after a dropped connection, a Redis restart), so a
// term that began while it was not subscribed is reported once it is
// subscribed again; only terms that began and ended meanwhile go unseen
// (their Rev shows the gap). A nil ctx is treated as context.Background.
func (e *Election) ObserveTerms(ctx context.Context) <-chan Term {
	if ctx == nil {
		ctx = context.Background()
	}
	ch := make(chan Term)
	go e.observe(ctx, ch)
	return ch
}

// observe subscribes to the election's channel with go-redis's own
// subscription (see docs/election.md for why not the Client's): its
// channel delivers, in order, the subscription's confirmations (after each
// reconnection too) and the messages.
func (e *Election) observe(ctx context.Context, ch chan<- Term) {
	defer close(ch)
	ps := e.rdb.Subscribe(ctx, e.channel)
	defer ps.Close()
	in := ps.ChannelWithSubscriptions()
	o := observer{ch: ch}
	for {
		var m any
		select {
		case <-ctx.Done():
			return
		case m = <-in:
		}
		var t Term
		var ok bool
		switch m := m.(type) {
		case *redis.Subscription: // (re)subscribed: messages may have been lost
			cur, err := e.LeaderTerm(ctx)
			t, ok = cur, err == nil
		case *redis.Message:
			if r, rok := parseRecord(m.Payload); rok && r.state == stateLeader {
				e.saw(r)
				t, ok = r.public(), true
			}
		case nil:
			return // closed
		}
		if ok && !o.report(ctx, t) {
			return
		}
	}
}

// observer reports terms newer than the last one it reported.
type observer struct {
	ch   chan<- Term
	last Term
	any  bool
}

// report sends t if it is a newer term; false when ctx ended.
func (o *observer) report(ctx context.Context, t Term) bool {
	if o.any && t.Epoch == o.last.Epoch && t.Rev <= o.last.Rev {
		return true // reported already (a message read again after a subscription)
	}
	select {
	case o.ch <- t:
		o.last, o.any = t, true
		return true
	case <-ctx.Done():
		return false
	}
}
