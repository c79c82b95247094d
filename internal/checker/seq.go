package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Step is one operation of a sequence.
type Step struct {
	Op string // see opNames
	C  int    // the Client (owner ops, force, pause)
	O  int    // the owner of Client C (owner ops)
	// D is the lease of trylock and locklease (<= 0: watchdog) and of
	// extend, or how long sleep and pause last.
	D time.Duration
}

// opNames are the ops, in report order.
var opNames = []string{"trylock", "lock", "locklease", "unlock", "extend", "holdcount", "force", "flushall", "restart", "pause", "sleep"}

// ownerOp reports whether op is a call of one owner.
func ownerOp(op string) bool {
	switch op {
	case "trylock", "lock", "locklease", "unlock", "extend", "holdcount":
		return true
	}
	return false
}

func acquireOp(op string) bool { return op == "trylock" || op == "lock" || op == "locklease" }

// Sequence is a whole sequence: the lock kind, the Clients' watchdog
// timeout, which Clients run in processes of their own, and the steps.
type Sequence struct {
	Kind     string
	Watchdog time.Duration
	Procs    []bool
	Steps    []Step
}

// ownersPerClient is fixed: two owners on every Client.
const ownersPerClient = 2

func (s Step) owner() string { return fmt.Sprintf("c%do%d", s.C, s.O) }

func fmtDur(d time.Duration) string {
	if d <= 0 {
		return "wd"
	}
	return d.String()
}

// String is the step as -checker.replay takes it.
func (s Step) String() string {
	switch s.Op {
	case "lock", "unlock", "holdcount":
		return s.owner() + " " + s.Op
	case "trylock", "locklease", "extend":
		return s.owner() + " " + s.Op + " " + fmtDur(s.D)
	case "force":
		return fmt.Sprintf("c%d force", s.C)
	case "pause":
		return fmt.Sprintf("c%d pause %v", s.C, s.D)
	case "sleep":
		return "sleep " + s.D.String()
	}
	return s.Op
}

// String is the sequence as -checker.replay takes it: a header, then the
// steps, separated by "; ".
func (q Sequence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s wd=%v clients=", q.Kind, q.Watchdog)
	for _, p := range q.Procs {
		if p {
			b.WriteByte('p')
		} else {
			b.WriteByte('i')
		}
	}
	for _, s := range q.Steps {
		b.WriteString("; ")
		b.WriteString(s.String())
	}
	return b.String()
}

// ParseSequence reads what Sequence.String writes.
func ParseSequence(text string) (Sequence, error) {
	var q Sequence
	parts := strings.Split(strings.TrimSpace(text), ";")
	head := strings.Fields(parts[0])
	if len(head) != 3 || !slices.Contains(kinds, head[0]) {
		return q, fmt.Errorf("checker: sequence header %q: want \"<kind> wd=<duration> clients=<i|p>...\" with kind one of %v", parts[0], kinds)
	}
	q.Kind = head[0]
	wd, ok := strings.CutPrefix(head[1], "wd=")
	if !ok {
		return q, fmt.Errorf("checker: sequence header %q: no wd=", parts[0])
	}
	var err error
	if q.Watchdog, err = time.ParseDuration(wd); err != nil || q.Watchdog < time.Second {
		return q, fmt.Errorf("checker: sequence header: watchdog %q: at least 1s", wd)
	}
	cl, ok := strings.CutPrefix(head[2], "clients=")
	if !ok || len(cl) < 1 {
		return q, fmt.Errorf("checker: sequence header %q: no clients=", parts[0])
	}
	for _, r := range cl {
		switch r {
		case 'i':
			q.Procs = append(q.Procs, false)
		case 'p':
			q.Procs = append(q.Procs, true)
		default:
			return q, fmt.Errorf("checker: clients=%q: i (in-process) or p (process) per Client", cl)
		}
	}
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		s, err := parseStep(p, len(q.Procs))
		if err != nil {
			return q, err
		}
		q.Steps = append(q.Steps, s)
	}
	return q, nil
}

func parseStep(text string, clients int) (Step, error) {
	f := strings.Fields(text)
	bad := func(why string) (Step, error) {
		return Step{}, fmt.Errorf("checker: step %q: %s", text, why)
	}
	dur := func(s string, wdOK bool) (time.Duration, error) {
		if s == "wd" && wdOK {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		return d, nil
	}
	var s Step
	switch {
	case len(f) == 1 && (f[0] == "flushall" || f[0] == "restart"):
		s.Op = f[0]
		return s, nil
	case len(f) == 2 && f[0] == "sleep":
		d, err := dur(f[1], false)
		if err != nil {
			return bad(err.Error())
		}
		return Step{Op: "sleep", D: d}, nil
	case len(f) < 2:
		return bad("unknown step")
	}
	s.Op = f[1]
	if s.Op == "force" || s.Op == "pause" {
		if _, err := fmt.Sscanf(f[0], "c%d", &s.C); err != nil || fmt.Sprintf("c%d", s.C) != f[0] {
			return bad("want c<client>")
		}
	} else {
		if _, err := fmt.Sscanf(f[0], "c%do%d", &s.C, &s.O); err != nil || s.owner() != f[0] {
			return bad("want c<client>o<owner>")
		}
		if s.O < 0 || s.O >= ownersPerClient {
			return bad(fmt.Sprintf("owner o0..o%d", ownersPerClient-1))
		}
	}
	if s.C < 0 || s.C >= clients {
		return bad(fmt.Sprintf("client c0..c%d", clients-1))
	}
	want := 2
	switch s.Op {
	case "lock", "unlock", "holdcount", "force":
	case "trylock", "locklease", "extend", "pause":
		want = 3
		if len(f) == 3 {
			d, err := dur(f[2], s.Op == "trylock")
			if err != nil {
				return bad(err.Error())
			}
			s.D = d
		}
	default:
		return bad("unknown op " + s.Op)
	}
	if len(f) != want {
		return bad(fmt.Sprintf("want %d words", want))
	}
	return s, nil
}

// opSet is the set of ops a run may generate.
type opSet map[string]bool

// parseOps reads -checker.ops: "all", or a comma-separated list of ops,
// or of ops to leave out each with a leading "-" ("-extend,-restart").
func parseOps(text string) (opSet, error) {
	set := opSet{}
	text = strings.TrimSpace(text)
	if text == "" || text == "all" {
		for _, o := range opNames {
			set[o] = true
		}
		return set, nil
	}
	items := strings.Split(text, ",")
	minus := strings.HasPrefix(strings.TrimSpace(items[0]), "-")
	if minus {
		for _, o := range opNames {
			set[o] = true
		}
	}
	for _, it := range items {
		it = strings.TrimSpace(it)
		name, neg := strings.CutPrefix(it, "-")
		if neg != minus {
			return nil, fmt.Errorf("checker: ops %q: either a list of ops or a list of -ops to leave out", text)
		}
		if !slices.Contains(opNames, name) {
			return nil, fmt.Errorf("checker: unknown op %q (ops: %s)", name, strings.Join(opNames, ", "))
		}
		set[name] = !neg
	}
	if !set["trylock"] && !set["lock"] && !set["locklease"] {
		return nil, fmt.Errorf("checker: ops %q: at least one acquisition (trylock, lock, locklease)", text)
	}
	return set, nil
}

func (s opSet) String() string {
	var off []string
	for _, o := range opNames {
		if !s[o] {
			off = append(off, "-"+o)
		}
	}
	if len(off) == 0 {
		return "all"
	}
	return strings.Join(off, ",")
}
