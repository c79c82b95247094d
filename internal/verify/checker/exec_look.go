package main

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// The looker is code of the holder that looks at its loss signal, as a
// holder's loop that checks ctx.Err() before each write does: armed just
// before the checker stops the process (SIGSTOP), it looks at each watched
// context's Err over and over, yielding between looks, until the checker
// disarms it after the process runs again. The first looks after the
// process resumes race whatever else the Go scheduler runs first (the
// watchdog's timers, the goroutine that cancels a LostContext): each look
// is recorded with the time taken just before it, so that a live look is
// proof that the context was live at that moment.

// lookInfo is what the looker saw of one context.
type lookInfo struct {
	// Watched: a context was looked at (an owner with a live
	// LostContext when armed, or a leading candidate).
	Watched bool `json:"w,omitempty"`
	// LastLive is the time taken before the last look that saw the
	// context live (0: none); Live counts those looks.
	LastLive int64 `json:"ll,omitempty"`
	Live     int   `json:"nl,omitempty"`
	// FirstEnd is the time taken before the first look that saw it ended,
	// and Cause that look's context.Cause.
	FirstEnd int64  `json:"fe,omitempty"`
	Cause    string `json:"cause,omitempty"`
	// Gap is the longest time between two looks (the pause, seen from
	// the process); Resumed the time of the first look after it.
	Gap     int64 `json:"gap,omitempty"`
	Resumed int64 `json:"res,omitempty"`
	// First is the time of the first look.
	First int64 `json:"first,omitempty"`
}

// lookerSlot holds the armed looker, if any.
type lookerSlot struct {
	mu  sync.Mutex
	cur *looker
}

// looker is one goroutine per P (GOMAXPROCS) looking at the same
// contexts, so that when the process resumes each P goes on with a look
// before the scheduler runs anything else.
type looker struct {
	workers []*lookWorker
	quit    chan struct{}
}

type lookWorker struct {
	ctxs    []context.Context // nil entries are not looked at
	looks   []lookInfo
	done    chan struct{}
	started chan struct{} // closed after the first round of looks
}

// lookTargets are the contexts the looker watches: every owner's live
// LostContext, or the candidate's leadership context.
func (e *executor) lookTargets() []context.Context {
	if e.el != nil {
		return []context.Context{e.el.leadCtx()}
	}
	out := make([]context.Context, len(e.owners))
	for i, o := range e.owners {
		o.mu.Lock()
		if o.w != nil && o.w.info().State == "live" {
			out[i] = o.w.lctx
		}
		o.mu.Unlock()
	}
	return out
}

// arm starts a looker on ctxs (replacing one still armed) and returns
// once each of its goroutines is looking.
func (s *lookerSlot) arm(ctxs []context.Context) {
	s.disarm()
	l := &looker{quit: make(chan struct{})}
	for range runtime.GOMAXPROCS(0) {
		w := &lookWorker{ctxs: ctxs, looks: make([]lookInfo, len(ctxs)), done: make(chan struct{}), started: make(chan struct{})}
		for i, c := range ctxs {
			w.looks[i].Watched = c != nil
		}
		l.workers = append(l.workers, w)
		go w.run(l.quit)
	}
	s.mu.Lock()
	s.cur = l
	s.mu.Unlock()
	// The looker is looking when the checker stops the process: it runs
	// on when the process resumes, as a holder's loop would.
	for _, w := range l.workers {
		<-w.started
	}
}

// disarm stops the looker and returns what it saw (nil: none armed).
func (s *lookerSlot) disarm() []lookInfo {
	s.mu.Lock()
	l := s.cur
	s.cur = nil
	s.mu.Unlock()
	if l == nil {
		return nil
	}
	// The disarm comes once the process runs again: let the looker look a
	// moment more, over the first milliseconds after the resume.
	time.Sleep(5 * time.Millisecond)
	close(l.quit)
	out := make([]lookInfo, len(l.workers[0].looks))
	for _, w := range l.workers {
		<-w.done
		for i, lk := range w.looks {
			out[i] = mergeLooks(out[i], lk)
		}
	}
	return out
}

// mergeLooks merges what two of the looker's goroutines saw of a context.
func mergeLooks(a, b lookInfo) lookInfo {
	a.Watched = a.Watched || b.Watched
	a.Live += b.Live
	a.LastLive = max(a.LastLive, b.LastLive)
	if b.FirstEnd != 0 && (a.FirstEnd == 0 || b.FirstEnd < a.FirstEnd) {
		a.FirstEnd, a.Cause = b.FirstEnd, b.Cause
	}
	if b.Gap > a.Gap {
		a.Gap, a.Resumed = b.Gap, b.Resumed
	}
	if b.First != 0 && (a.First == 0 || b.First < a.First) {
		a.First = b.First
	}
	return a
}

// run looks at every watched context until quit, or until each has been
// seen ended.
func (w *lookWorker) run(quit <-chan struct{}) {
	defer close(w.done)
	var last time.Time
	for round := 0; ; round++ {
		if round == 1 {
			close(w.started)
		}
		select {
		case <-quit:
			return
		default:
		}
		now := time.Now()
		if !last.IsZero() {
			w.gap(now.Sub(last), now)
		}
		last = now
		if !w.lookAll() {
			if round == 0 {
				close(w.started)
			}
			<-quit
			return
		}
		runtime.Gosched()
	}
}

// gap notes the time between two rounds of looks.
func (w *lookWorker) gap(d time.Duration, now time.Time) {
	for i := range w.looks {
		if int64(d) > w.looks[i].Gap {
			w.looks[i].Gap, w.looks[i].Resumed = int64(d), now.UnixNano()
		}
	}
}

// lookAll looks at each watched context not yet seen ended; it reports
// whether any is left to look at.
func (w *lookWorker) lookAll() bool {
	left := false
	for i, c := range w.ctxs {
		lk := &w.looks[i]
		if c == nil || lk.FirstEnd != 0 {
			continue
		}
		t := time.Now()
		if lk.First == 0 {
			lk.First = t.UnixNano()
		}
		if err := c.Err(); err == nil {
			lk.LastLive, lk.Live = t.UnixNano(), lk.Live+1
			left = true
			continue
		}
		lk.FirstEnd, lk.Cause = t.UnixNano(), causeClass(context.Cause(c))
	}
	return left
}
