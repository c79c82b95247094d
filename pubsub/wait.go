package pubsub

import (
	"context"
	"errors"
	"time"
)

// Sub.Wait: take a kept wake or permit, or block until woken, the
// deadline, ctx or Close.

// takeToken reports whether the token just taken from the wake channel is
// a wake (not an alarm), and records it as held. Under Hub.mu.
func (s *Sub) takeToken() bool {
	if !s.pending {
		return false
	}
	s.pending, s.woken = false, true
	return true
}

// dequeue removes s from the blocked queue.
func (ch *channel) dequeue(s *Sub) {
	for i, q := range ch.queue {
		if q == s {
			ch.queue = append(ch.queue[:i], ch.queue[i+1:]...)
			return
		}
	}
}

// Wait blocks until the Sub is woken (true), timeout passes (false; a
// negative timeout never passes), ctx is done (ctx's error) or the Hub is
// closed (ErrClosed). A wake that arrived since the last Wait returns at once.
//
// A wake returned by Wait is held by the Sub until Used is called; if the
// Sub is closed before that, the wake is handed on (see Close). A wake that
// arrives while ctx is already done is not taken: it stays for Close to hand
// on.
func (s *Sub) Wait(ctx context.Context, timeout time.Duration) (bool, error) {
	// The steps are small functions so that a parked waiter's stack stays
	// shallow (the runtime then shrinks it: see docs/benchmarks.md).
	err := s.enqueue(ctx, timeout)
	switch {
	case err == errWoken:
		return true, nil
	case err != nil:
		return false, err
	}
	// The timeout and Close ring the wake channel (Hub.ring): two
	// channels, not four (a timer's and the Hub's done), per parked Wait.
	select {
	case <-s.wake: // a wake, or an alarm: unblock tells
	case <-ctx.Done():
		err = ctx.Err()
	}
	return s.unblock(err)
}

// errWoken is enqueue's answer for a Sub that has a wake already.
var errWoken = errors.New("pubsub: woken")

// enqueue queues the Sub among the channel's blocked waiters, its alarm set
// for timeout (refusedPoll at most on a refused channel), and returns nil;
// or errWoken (a wake or permit taken), ctx's error or ErrClosed.
func (s *Sub) enqueue(ctx context.Context, timeout time.Duration) error {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-s.wake:
		if s.takeToken() {
			return errWoken
		}
		// a late alarm of an earlier Wait: drop it
	default:
	}
	if s.ch.permits > 0 {
		s.ch.permits--
		s.woken = true
		return errWoken
	}
	if h.closed {
		return ErrClosed
	}
	s.ch.queue = append(s.ch.queue, s)
	if s.ch.refused && (timeout < 0 || timeout > refusedPoll) {
		timeout = refusedPoll
	}
	s.waiting = true
	h.block(s, timeout)
	return nil
}

// unblock ends a Wait that blocked and returns its result: woken, or err
// (ctx's; nil: an alarm, the timeout or the Hub's Close). A Sub that was
// not woken leaves its channel's blocked waiters.
func (s *Sub) unblock(err error) (bool, error) {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unqueue(s) // the Hub's timer rings it no more
	s.waiting = false
	if err == nil {
		if s.takeToken() {
			return true, nil
		}
		if h.closed {
			err = ErrClosed
		}
	}
	s.ch.dequeue(s)
	return false, err
}
