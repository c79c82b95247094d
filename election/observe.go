package election

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Observe returns a channel of leader values: the current leader's, then
// each new term's, a re-election of the same value too (ObserveTerms tells
// them apart); it closes when ctx ends. A time without a leader sends
// nothing. A nil ctx is treated as context.Background.
func (e *Election) Observe(ctx context.Context) <-chan string {
	if ctx == nil {
		ctx = context.Background()
	}
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
// (their Rev shows the gap). The Redis user needs the channel
// (docs/layout.md, ACL users): when Redis refuses the subscription,
// ObserveTerms logs it once and reads the leader every WithPollInterval
// instead (500 ms by default), which misses the terms that begin and end
// between two reads. A nil ctx is treated as context.Background.
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
	o := observer{ch: ch}
	ps := e.rdb.Subscribe(ctx, e.channel)
	defer ps.Close()
	// Closed when ctx ends: that ends a Receive waiting on a hung server.
	defer context.AfterFunc(ctx, func() { _ = ps.Close() })()
	if !e.subscribed(ctx, ps, &o) {
		return
	}
	in := ps.ChannelWithSubscriptions()
	for {
		var m any
		select {
		case <-ctx.Done():
			return
		case m = <-in:
		}
		if m == nil {
			return // closed
		}
		if t, ok := e.termOf(ctx, m); ok && !o.report(ctx, t) {
			return
		}
	}
}

// subscribed reads the subscription's first reply, which says whether
// Redis took it: an ACL user without the channel gets NOPERM, which
// go-redis's channel would swallow (it reads on, and nothing ever comes);
// then it logs the refusal and polls until ctx ends. Once subscribed (or
// on a connection error: go-redis subscribes again, and its channel says
// so) it reports the current term. false: observe is over.
func (e *Election) subscribed(ctx context.Context, ps *redis.PubSub, o *observer) bool {
	first, err := ps.Receive(ctx)
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil && strings.HasPrefix(err.Error(), "NOPERM"):
		_ = ps.Close()
		e.log.Warn("goredisson: Redis refused the subscription to the election's channel: Observe and ObserveTerms read the leader every poll interval instead, and miss a term that begins and ends between two reads; grant the channel (docs/layout.md, ACL users)",
			"lock", e.l.Name(), "channel", e.channel, "poll interval", e.poll, "err", err)
		e.pollTerms(ctx, o)
		return false
	}
	if _, ok := first.(*redis.Subscription); ok || err != nil {
		if t, err := e.LeaderTerm(ctx); err == nil && !o.report(ctx, t) {
			return false
		}
	}
	return true
}

// termOf returns the term a subscription's message or confirmation tells:
// a leader record published, or, after a (re)subscription, when messages
// may have been lost, the current term read anew.
func (e *Election) termOf(ctx context.Context, m any) (Term, bool) {
	switch m := m.(type) {
	case *redis.Subscription:
		cur, err := e.LeaderTerm(ctx)
		return cur, err == nil
	case *redis.Message:
		if r, ok := parseRecord(m.Payload); ok && r.state == stateLeader {
			e.saw(r)
			return r.public(), true
		}
	}
	return Term{}, false
}

// pollTerms reads the leader every poll interval until ctx ends and
// reports its terms: Observe without a subscription.
func (e *Election) pollTerms(ctx context.Context, o *observer) {
	t := time.NewTicker(e.poll)
	defer t.Stop()
	for {
		if cur, err := e.LeaderTerm(ctx); err == nil && !o.report(ctx, cur) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
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
