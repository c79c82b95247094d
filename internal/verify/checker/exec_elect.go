package main

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/rlock"
)

// An election's executor runs one candidate: an election.Election on a
// Lock of its own Client (WithMaxLease from the sequence), campaigns
// started by the checker and run on goroutines of their own (Campaign
// blocks until the candidate leads), and an ObserveTerms that records
// every term it is told of. It reports each campaign's times: when
// Campaign was called, when the Client last took the lock before it
// returned (its Observer), when it returned, and when the leadership
// context ended, as its watcher goroutine saw it and as looks at its Err
// saw it (one look at every state report).

// campInfo is one campaign, as reported to the checker.
type campInfo struct {
	Value  string `json:"v"`
	Start  int64  `json:"s"`            // Campaign called
	LockAt int64  `json:"lk,omitempty"` // the Client's last acquisition of the lock before Campaign returned
	Ret    int64  `json:"r,omitempty"`  // Campaign returned (0: not yet)
	Err    string `json:"err,omitempty"`
	Msg    string `json:"msg,omitempty"`
	// EndAt is when the leadership context's watcher saw it end, Cause
	// its cause.
	EndAt int64  `json:"end,omitempty"`
	Cause string `json:"cause,omitempty"`
	// LastLive and FirstEnd are the looks at Err made at state reports:
	// the time taken before the last that saw it live, the first that saw
	// it ended.
	LastLive int64 `json:"ll,omitempty"`
	FirstEnd int64 `json:"fe,omitempty"`
	Resign   int64 `json:"rs,omitempty"` // Resign called while it led
	Closed   int64 `json:"cl,omitempty"` // the Client closed while it campaigned or led
}

// termSeen is one term ObserveTerms reported.
type termSeen struct {
	Value string `json:"v"`
	Rev   int64  `json:"rev"`
	Epoch string `json:"ep"`
	Lease int64  `json:"lease"` // ms
	At    int64  `json:"at"`
}

// electState is what a candidate reports.
type electState struct {
	Camps []campInfo `json:"camps,omitempty"`
	Terms []termSeen `json:"terms,omitempty"`
	// Cur is the campaign the candidate runs or leads ("": it may
	// campaign again).
	Cur string `json:"cur,omitempty"`
}

type campRun struct {
	info   campInfo
	lead   context.Context
	cancel context.CancelFunc
}

type electExec struct {
	cfg    execConfig
	logOut io.Writer
	rdb    *redis.Client // the record's and the observer's: a close keeps it

	mu      sync.Mutex
	c       *rlock.Client
	lock    *rlock.Lock
	el      *election.Election
	cur     *campRun // campaigning, or leading until Resign or a close
	camps   []*campRun
	terms   []termSeen
	lockAt  int64 // the Client's last acquisition of the lock
	obsStop context.CancelFunc
	obsDone chan struct{}
}

// lockTimes is the candidate Client's Observer: it notes when the lock was
// taken (the Observer is called before Lock returns, so before the
// candidate writes its pending mark).
type lockTimes struct{ x *electExec }

func (o lockTimes) Observe(_ context.Context, ev rlock.Event) {
	if ev.Op == "lock" && ev.Acquired && ev.Err == nil {
		now := time.Now().UnixNano()
		o.x.mu.Lock()
		o.x.lockAt = now
		o.x.mu.Unlock()
	}
}

func newElectExec(cfg execConfig, logOut io.Writer) (*electExec, error) {
	x := &electExec{cfg: cfg, logOut: logOut, rdb: redis.NewClient(&redis.Options{Addr: cfg.Redis})}
	if err := x.open(); err != nil {
		_ = x.rdb.Close()
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	x.obsStop, x.obsDone = stop, make(chan struct{})
	terms := x.el.ObserveTerms(ctx)
	go func() {
		defer close(x.obsDone)
		for t := range terms {
			now := time.Now().UnixNano()
			x.mu.Lock()
			x.terms = append(x.terms, termSeen{Value: t.Value, Rev: t.Rev, Epoch: t.Epoch, Lease: t.Lease.Milliseconds(), At: now})
			x.mu.Unlock()
		}
	}()
	return x, nil
}

// open makes the candidate's Client, lock and Election (again after a
// close). The caller holds mu, or is the constructor.
func (x *electExec) open() error {
	c, err := rlock.NewClient(x.rdb, rlock.WithWatchdogTimeout(x.cfg.Watchdog), rlock.WithObserver(lockTimes{x}),
		rlock.WithLogger(quietLogger(x.logOut, x.cfg.Verbose)), fenceOption(x.cfg.Fence))
	if err != nil {
		return err
	}
	l := c.NewLock(x.cfg.Lock)
	el, err := election.New(x.rdb, l, election.WithMaxLease(x.cfg.MaxLease))
	if err != nil {
		_ = c.Close()
		return err
	}
	x.c, x.lock, x.el = c, l, el
	return nil
}

func (x *electExec) close() {
	x.mu.Lock()
	for _, cr := range x.camps {
		cr.cancel()
	}
	c := x.c
	x.mu.Unlock()
	_ = c.Close()
	x.obsStop()
	<-x.obsDone
	_ = x.rdb.Close()
}

// leadCtx is the leadership context of the campaign that leads (nil:
// none).
func (x *electExec) leadCtx() context.Context {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cur == nil {
		return nil
	}
	return x.cur.lead
}

func (x *electExec) do(r req) reply {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	start := time.Now()
	var rep reply
	switch r.Op {
	case "state":
		return reply{Elect: x.state()}
	case "campaign":
		rep = x.campaign(r.Value)
	case "cancel":
		rep = x.cancelCampaign()
	case "resign":
		rep = x.resign(ctx)
	case "leader":
		rep = x.leader(ctx)
	case "force":
		x.mu.Lock()
		l := x.lock
		x.mu.Unlock()
		var err error
		rep.OK, err = l.ForceUnlock(ctx)
		rep.Err, rep.Msg = errParts(err)
	case "close":
		rep = x.closeClient()
	default:
		return reply{Err: "unsupported", Msg: "not an election op: " + r.Op}
	}
	rep.Start, rep.End = start.UnixNano(), time.Now().UnixNano()
	return rep
}

func errParts(err error) (string, string) {
	if err == nil {
		return "", ""
	}
	return errClass(err), err.Error()
}

// campaign starts a Campaign for value on a goroutine of its own.
func (x *electExec) campaign(value string) reply {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cur != nil {
		return reply{Err: "busy", Msg: "the candidate campaigns or leads: " + x.cur.info.Value}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cr := &campRun{info: campInfo{Value: value, Start: time.Now().UnixNano()}, cancel: cancel}
	x.cur = cr
	x.camps = append(x.camps, cr)
	el := x.el
	go func() {
		lead, err := el.Campaign(ctx, value)
		ret := time.Now().UnixNano()
		x.mu.Lock()
		defer x.mu.Unlock()
		cr.info.Ret, cr.info.LockAt = ret, x.lockAt
		if err != nil {
			cr.info.Err, cr.info.Msg = errParts(err)
			if x.cur == cr {
				x.cur = nil
			}
			return
		}
		cr.lead = lead
		go x.watchLead(cr, lead)
	}()
	return reply{OK: true}
}

// watchLead records when the leadership context ended.
func (x *electExec) watchLead(cr *campRun, lead context.Context) {
	<-lead.Done()
	at := time.Now().UnixNano()
	cause := causeClass(context.Cause(lead))
	x.mu.Lock()
	cr.info.EndAt, cr.info.Cause = at, cause
	x.mu.Unlock()
}

// cancelCampaign ends the ctx of the campaign in progress (the candidate
// gives up waiting).
func (x *electExec) cancelCampaign() reply {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cur == nil || x.cur.info.Ret != 0 {
		return reply{Err: "idle", Msg: "no campaign waits"}
	}
	x.cur.cancel()
	return reply{OK: true, ID: x.cur.info.Value}
}

func (x *electExec) resign(ctx context.Context) reply {
	x.mu.Lock()
	el, cr := x.el, x.cur
	t := time.Now().UnixNano()
	if cr != nil && cr.lead != nil {
		cr.info.Resign = t
	}
	x.mu.Unlock()
	err := el.Resign(ctx)
	x.mu.Lock()
	if cr != nil && cr.lead != nil && x.cur == cr && (err == nil || errClass(err) == "notleader") {
		x.cur = nil
	}
	x.mu.Unlock()
	rep := reply{}
	if cr != nil {
		rep.ID = cr.info.Value
	}
	rep.Err, rep.Msg = errParts(err)
	return rep
}

func (x *electExec) leader(ctx context.Context) reply {
	x.mu.Lock()
	el := x.el
	x.mu.Unlock()
	t, err := el.LeaderTerm(ctx)
	rep := reply{ID: t.Value, N: int(t.Rev), Msg: t.Epoch}
	if err != nil {
		rep.Err, rep.Msg = errParts(err)
	}
	return rep
}

// closeClient closes the candidate's Client (its campaign or leadership
// ends) and opens a new one for the campaigns to come.
func (x *electExec) closeClient() reply {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cur != nil {
		x.cur.info.Closed = time.Now().UnixNano()
		x.cur = nil
	}
	err := x.c.Close()
	if oerr := x.open(); oerr != nil && err == nil {
		err = oerr
	}
	rep := reply{OK: err == nil}
	rep.Err, rep.Msg = errParts(err)
	return rep
}

// state reports every campaign, after a look at each live leadership
// context's Err, and every term observed.
func (x *electExec) state() *electState {
	x.mu.Lock()
	defer x.mu.Unlock()
	st := &electState{Terms: append([]termSeen(nil), x.terms...)}
	if x.cur != nil {
		st.Cur = x.cur.info.Value
	}
	for _, cr := range x.camps {
		if cr.lead != nil && cr.info.FirstEnd == 0 {
			t := time.Now().UnixNano()
			if cr.lead.Err() == nil {
				cr.info.LastLive = t
			} else {
				cr.info.FirstEnd = t
			}
		}
		st.Camps = append(st.Camps, cr.info)
	}
	return st
}
