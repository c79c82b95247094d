package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// record is a parsed leader record (docs/layout.md):
// "<state> <epoch> <term> <lease ms> <holder> <server>\n<value>"; the
// server field (the identity of the Redis process that wrote it) is
// absent in records of the format before it.
type record struct {
	state  byte
	epoch  string
	term   int64
	lease  time.Duration
	holder string
	server string
	value  string
}

func parseRecord(raw string) (record, bool) {
	header, value, ok := strings.Cut(raw, "\n")
	f := strings.Split(header, " ")
	if !ok || (len(f) != 5 && len(f) != 6) || len(f[0]) != 1 || !strings.Contains("LPRE", f[0]) {
		return record{}, false
	}
	term, err1 := strconv.ParseInt(f[2], 10, 64)
	ms, err2 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil {
		return record{}, false
	}
	r := record{state: f[0][0], epoch: f[1], term: term, lease: time.Duration(ms) * time.Millisecond, holder: f[4], value: value}
	if len(f) == 6 {
		r.server = f[5]
	}
	return r, true
}

func (r record) String() string {
	return fmt.Sprintf("%c %s t%d %v %s", r.state, shortID(r.epoch), r.term, r.lease, r.value)
}

func shortID(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func describeElect(s Step, rep reply, start, end time.Time) string {
	d := end.Sub(start).Round(time.Millisecond)
	switch {
	case rep.Err != "":
		return fmt.Sprintf("-> %s (%v) %s", rep.Err, d, shorten(rep.Msg))
	case s.Op == "leader":
		return fmt.Sprintf("-> %s t%d %s (%v)", rep.ID, rep.N, shortID(rep.Msg), d)
	case s.Op == "force":
		return fmt.Sprintf("-> %v (%v)", rep.OK, d)
	case s.Op == "cont":
		return fmt.Sprintf("-> looks %s (%v)", describeLeadLooks(rep.Looks), d)
	}
	return fmt.Sprintf("-> ok (%v)", d)
}

func describeLeadLooks(looks []lookInfo) string {
	if len(looks) == 0 || !looks[0].Watched {
		return "none"
	}
	lk := looks[0]
	s := fmt.Sprintf("%d live", lk.Live)
	if lk.FirstEnd != 0 {
		s += fmt.Sprintf(", ended (%s) %v after resuming", lk.Cause, at(lk.FirstEnd).Sub(at(lk.Resumed)).Round(time.Microsecond))
	}
	return s
}

func (r *electRun) describeObs(ob electObs) string {
	rec := "no record"
	if ob.hasRec {
		rec = ob.rec.String()
	}
	var leads []string
	for _, cp := range r.order {
		switch {
		case cp.leads() && !cp.ended():
			leads = append(leads, cp.value+":leads")
		case cp.info.Ret == 0 && cp.killed.IsZero() && r.cands[cp.c].cur == cp.value:
			leads = append(leads, cp.value+":waits")
		}
	}
	return fmt.Sprintf("[%s] lock %d field(s) pttl=%v [%s]", rec, len(ob.fields), ob.pttl.Round(time.Millisecond), strings.Join(leads, " "))
}
