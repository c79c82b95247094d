package pubsub

import (
	"slices"
	"testing"
)

// A channel's live Subs are a linked list (channel.subs, Sub.prev/next):
// taking one out from its head, middle or tail must leave the others, in
// order, with refs counting them, or a wake would miss a waiter.
func TestSubList(t *testing.T) {
	live := func(ch *channel) []*Sub {
		var out []*Sub
		for s := ch.subs; s != nil; s = s.next {
			if s.next != nil && s.next.prev != s {
				t.Fatalf("broken back link after %p", s)
			}
			out = append(out, s)
		}
		if ch.subs != nil && ch.subs.prev != nil {
			t.Fatal("the head has a prev")
		}
		return out
	}
	for _, drop := range []int{0, 1, 2, 3} { // the newest (head), middle, middle, oldest (tail)
		h := &Hub{}
		ch := &channel{}
		var subs []*Sub // oldest first; the list is newest first
		for range 4 {
			subs = append(subs, h.addSub(ch, Role{}))
		}
		ch.unlink(subs[3-drop])
		want := slices.Clone(subs)
		want = slices.Delete(want, 3-drop, 4-drop)
		slices.Reverse(want)
		if got := live(ch); !slices.Equal(got, want) || ch.refs != 3 {
			t.Fatalf("drop %d: live %v refs %d, want %v refs 3", drop, got, ch.refs, want)
		}
		for _, s := range want {
			ch.unlink(s)
		}
		if ch.subs != nil || ch.refs != 0 {
			t.Fatalf("drop %d: %v left, refs %d", drop, live(ch), ch.refs)
		}
	}
}
