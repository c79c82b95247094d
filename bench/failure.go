package main

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The failure table: what each row's lock does when its holder process is
// killed, when it is paused past its lease or session, and when the
// server restarts (gracefully, and after a crash). Each line is measured:
// a holder process takes the lock, a waiter process asks for it, the
// event happens, and the times the waiter got the lock and the holder's
// unlock returned (with what it said, and whether the library told the
// holder of the loss) say what happened.

// Scenarios of the failure table.
const (
	scKilled  = "holder killed"
	scPaused  = "holder paused"
	scRestart = "server restarted"
	scCrash   = "server crashed"
)

var scenarios = []string{scKilled, scPaused, scRestart, scCrash}

// failTimes are the bounds of the failure scenarios for a lease or
// session timeout of lease.
type failTimes struct {
	lease   time.Duration
	pause   time.Duration // how long the holder is stopped: 3 leases
	observe time.Duration // how long the waiter is watched after the event
}

func newFailTimes(lease time.Duration) failTimes {
	return failTimes{lease: lease, pause: 3 * lease, observe: 3 * lease}
}

// failOutcome is what one row did in one scenario.
type failOutcome struct {
	Scenario string
	Row      string
	// Event is when the event began (kill, SIGSTOP, server stop), Back
	// when it ended (SIGCONT, server answering again; 0 for a kill).
	Event, Back int64
	Holder      holdReply    // the holder's acquisition
	Waiter      holdReply    // the waiter's: Got 0 if it never got the lock
	Release     releaseReply // the holder's unlock (not after a kill)
	Err         string       // the scenario could not be run
}

// verdict classifies the outcome: "freed" or "not freed" (a kill: the
// waiter got the lock in the time watched, or not), "kept" (the waiter got
// it only after the holder's unlock), "lost, ..." (the waiter got it while
// the holder still held it: the holder was told before that, later, or
// never), "waiter never got it", or "error".
func (o failOutcome) verdict() string {
	switch {
	case o.Err != "":
		return "error"
	case o.Scenario == scKilled:
		if o.Waiter.Got == 0 {
			return "not freed"
		}
		return "freed"
	case o.Waiter.Got == 0:
		return "waiter never got it"
	case o.Waiter.Got < o.Release.Called:
		switch {
		case o.Release.Lost != 0 && o.Release.Lost <= o.Waiter.Got:
			return "lost, holder told first"
		case o.Release.Lost != 0:
			return "lost, holder told later"
		}
		return "lost, holder never told"
	}
	return "kept"
}

// seconds after the event at which the waiter got the lock.
func (o failOutcome) waiterAfter() time.Duration { return time.Duration(o.Waiter.Got - o.Event) }

// holderActor is what a scenario needs of a row: a holder and a waiter
// process of its own.
type failActors struct {
	holder, waiter *worker
	arg            string // the lock argument of hold: the row slug or the Java kind
}

// runFailure runs one scenario for every row at once (each row has
// processes and a key of its own). restart is called for a server
// scenario with the server to restart.
func runFailure(sc string, rows []lib, ss *startedServers, jb *javaBench, ft failTimes, id string) []failOutcome {
	out := make([]failOutcome, len(rows))
	actors := make([]*failActors, len(rows))
	var wg sync.WaitGroup
	for i, l := range rows {
		out[i] = failOutcome{Scenario: sc, Row: l.name}
		wg.Go(func() {
			a, err := startActors(l, ss, jb, ft.lease)
			if err != nil {
				out[i].Err = err.Error()
				return
			}
			actors[i] = a
		})
	}
	wg.Wait()
	defer func() {
		for _, a := range actors {
			if a != nil {
				a.holder.kill()
				a.waiter.close()
			}
		}
	}()
	key := func(i int) string { return "bench:f:" + id + ":" + keyPart(sc) + ":" + slug(rows[i].name) }
	// The holders take their locks (all at once), then the waiters start
	// waiting.
	forEach(actors, func(i int, a *failActors) {
		if err := a.holder.do(30*time.Second, &out[i].Holder, "hold", a.arg, key(i), 20000, 0); err != nil || out[i].Holder.Got == 0 {
			out[i].Err = fmt.Sprintf("holder did not get the lock: %v %s", err, out[i].Holder.Err)
		}
	})
	waiterDone := make([]chan holdReply, len(rows))
	for i, a := range actors {
		if a == nil {
			continue
		}
		if out[i].Err != "" {
			actors[i] = nil
			a.holder.kill()
			a.waiter.close()
			continue
		}
		waitFor := ft.observe + ft.pause + time.Minute
		waiterDone[i] = make(chan holdReply, 1)
		wg.Go(func() {
			var r holdReply
			if err := a.waiter.do(waitFor+10*time.Second, &r, "hold", a.arg, key(i), waitFor.Milliseconds(), 1); err != nil {
				r.Err = err.Error()
			}
			waiterDone[i] <- r
		})
	}
	time.Sleep(time.Second) // the waiters are waiting
	for i := range actors {
		if actors[i] == nil {
			continue
		}
		select {
		case r := <-waiterDone[i]:
			out[i].Waiter = r
			out[i].Err = "the waiter got the lock while the holder held it, before any failure"
			actors[i] = nil
		default:
		}
	}
	now := func() int64 { return time.Now().UnixNano() }
	// waitWaiter waits up to d for row i's waiter.
	waitWaiter := func(i int, d time.Duration) bool {
		select {
		case r := <-waiterDone[i]:
			out[i].Waiter = r
			return true
		case <-time.After(d):
			return false
		}
	}
	switch sc {
	case scKilled:
		for i, a := range actors {
			if a != nil {
				out[i].Event = now()
				_ = a.holder.signal(syscall.SIGKILL)
			}
		}
		forEach(actors, func(i int, a *failActors) { waitWaiter(i, ft.observe) })
		return out
	case scPaused:
		for i, a := range actors {
			if a != nil {
				out[i].Event = now()
				_ = a.holder.signal(syscall.SIGSTOP)
			}
		}
		time.Sleep(ft.pause)
		for i, a := range actors {
			if a != nil {
				_ = a.holder.signal(syscall.SIGCONT)
				out[i].Back = now()
			}
		}
		time.Sleep(time.Second) // the holder's process runs again, then it unlocks
	case scRestart, scCrash:
		// One restart per server, for all its rows at once.
		byServer := map[string][]int{}
		for i, a := range actors {
			if a != nil {
				byServer[rows[i].serverProc()] = append(byServer[rows[i].serverProc()], i)
			}
		}
		var swg sync.WaitGroup
		for name, idx := range byServer {
			srv := ss.server(name)
			swg.Go(func() {
				t := now()
				var err error
				if sc == scCrash {
					err = srv.Kill()
				} else {
					err = srv.Stop()
				}
				if err == nil {
					err = srv.Start()
				}
				back := now()
				for _, i := range idx {
					out[i].Event, out[i].Back = t, back
					if err != nil {
						out[i].Err = "restart: " + err.Error()
					}
				}
			})
		}
		swg.Wait()
	}
	// After a restart, watch the waiters; then the holders unlock.
	if sc != scPaused {
		time.Sleep(ft.observe)
	}
	forEach(actors, func(i int, a *failActors) {
		if err := a.holder.do(30*time.Second, &out[i].Release, "release", key(i)); err != nil {
			out[i].Release.Err = err.Error()
		}
	})
	forEach(actors, func(i int, a *failActors) {
		if out[i].Waiter.Got == 0 && !waitWaiter(i, 10*time.Second) {
			out[i].Waiter.Err = "still waiting 10 s after the holder's unlock"
		}
	})
	return out
}

// forEach calls fn on every row's actors, concurrently.
func forEach(actors []*failActors, fn func(i int, a *failActors)) {
	var wg sync.WaitGroup
	for i, a := range actors {
		if a != nil {
			wg.Go(func() { fn(i, a) })
		}
	}
	wg.Wait()
}

// startActors starts a holder and a waiter process for row l, every lock
// with lease as its lease or session timeout.
func startActors(l lib, ss *startedServers, jb *javaBench, lease time.Duration) (*failActors, error) {
	start := func(role string) (*worker, error) {
		if l.java != "" {
			return jb.start(l.name+" "+role, ss.srv.Redis, lease)
		}
		return startGoWorker(l.name+" "+role, ss.srv, lease)
	}
	h, err := start("holder")
	if err != nil {
		return nil, err
	}
	w, err := start("waiter")
	if err != nil {
		h.kill()
		return nil, err
	}
	arg := slug(l.name)
	if l.java != "" {
		arg = l.java
	}
	return &failActors{holder: h, waiter: w, arg: arg}, nil
}

// serverProc is the name of the server process a row's locks live on.
func (l lib) serverProc() string {
	if s := l.server(); s != "redisson" {
		return s
	}
	return "redis"
}

// server returns the started server called name ("redis", "mysql", "zk",
// "etcd").
func (s *startedServers) server(name string) server {
	if name == "redis" {
		return s.redis
	}
	return s.procs[name]
}

// describe renders an outcome as a table cell. Times are after the event
// (the kill, the SIGSTOP, the server's stop).
func (o failOutcome) describe(ft failTimes) string {
	at := func(t int64) string { return fmt.Sprintf("+%.1f s", time.Duration(t-o.Event).Seconds()) }
	ms := func(d int64) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
	unlock := "unlock: ok"
	if o.Release.Err != "" {
		unlock = "unlock: " + shortErr(o.Release.Err)
	}
	var parts []string
	if o.Back != 0 && o.Scenario != scKilled {
		what := "server back"
		if o.Scenario == scPaused {
			what = "resumed"
		}
		parts = append(parts, what+" at "+at(o.Back))
	}
	switch v := o.verdict(); v {
	case "error":
		return "not measured: " + shortErr(o.Err)
	case "freed":
		parts = append([]string{"waiter in at " + at(o.Waiter.Got)}, parts...)
	case "not freed":
		parts = append([]string{fmt.Sprintf("still held after %.0f s", ft.observe.Seconds())}, parts...)
	case "waiter never got it":
		parts = append(parts, "holder's "+unlock, "waiter still waiting 10 s after it")
	case "kept":
		parts = append(parts, "waiter in "+ms(o.Waiter.Got-o.Release.Called)+" after the unlock call")
		if took := o.Release.Released - o.Release.Called; took > int64(time.Second) {
			parts = append(parts, "the unlock took "+ms(took))
		}
		if o.Release.Err != "" {
			parts = append(parts, "holder's "+unlock)
		}
	default: // lost
		parts = append(parts, "waiter in at "+at(o.Waiter.Got))
		if o.Release.Lost != 0 {
			parts = append(parts, "holder told at "+at(o.Release.Lost))
		} else {
			parts = append(parts, "holder never told")
		}
		parts = append(parts, "holder's "+unlock)
	}
	if o.Waiter.Err != "" && o.verdict() != "waiter never got it" {
		parts = append(parts, "the waiter saw "+shortErr(o.Waiter.Err))
	}
	return strings.Join(parts, "; ")
}

var quoted = regexp.MustCompile(`"[^"]*"`)

// shortErr keeps the first line of an error, without quoted names, at
// most 70 characters.
func shortErr(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = quoted.ReplaceAllString(s, "…")
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	return strings.ReplaceAll(s, "|", "/")
}
