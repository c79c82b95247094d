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
	C  int    // the Client (owner ops and client ops)
	O  int    // the owner of Client C (owner ops)
	// D is the lease of trylock, locklease and lost (<= 0: watchdog) and
	// of extend, or how long sleep, pause and stall last.
	D time.Duration
}

// opNames are the ops, in report order.
var opNames = []string{"trylock", "lock", "locklease", "unlock", "extend", "holdcount", "isheld", "lost",
	"force", "flushall", "restart", "stall", "pause", "stop", "cont", "sleep", "renewal",
	"campaign", "cancel", "resign", "leader", "kill", "close"}

// Owner ops are calls of one owner ("c1o0 trylock 1.5s"), client ops steps
// of one Client or its process ("c1 stop"), the rest steps of their own
// ("flushall", "sleep 1s").
var (
	ownerOps  = []string{"trylock", "lock", "locklease", "unlock", "extend", "holdcount", "isheld", "lost"}
	clientOps = []string{"force", "pause", "stop", "cont", "campaign", "cancel", "resign", "leader", "kill", "close"}
	// durOps take a duration; of these, wdOps also take "wd" (a watchdog
	// lease).
	durOps = []string{"trylock", "locklease", "extend", "lost", "pause", "sleep", "stall"}
	wdOps  = []string{"trylock", "lost"}
	// electionOps are the election family's own ops.
	electionOps = []string{"campaign", "cancel", "resign", "leader", "kill", "close", "renewal"}
)

// ownerOp reports whether op is a call of one owner.
func ownerOp(op string) bool { return slices.Contains(ownerOps, op) }

func clientOp(op string) bool { return slices.Contains(clientOps, op) }

func acquireOp(op string) bool { return op == "trylock" || op == "lock" || op == "locklease" }

// Families of sequences: what a sequence's kind names.
const (
	// keptKind is a PermitExpirableSemaphore of one permit taken as kept
	// permits (AcquireKept): an exclusive lock whose lease the watchdog
	// renews, modelled as the lock kinds are.
	keptKind = "Kept"
	// electionKind is a leader election (package election) among
	// candidates in processes of their own, on a Lock.
	electionKind = "Election"
)

// Sequence is a whole sequence: the lock kind (or Kept, or Election), the
// Clients' watchdog timeouts, which Clients run in processes of their own,
// and the steps.
type Sequence struct {
	Kind string
	// Watchdog is every Client's watchdog timeout, unless WDs gives one
	// per Client (mixed timeouts).
	Watchdog time.Duration
	WDs      []time.Duration
	Procs    []bool
	// ReadTimeout is the Clients' go-redis ReadTimeout (0: go-redis's
	// default, 3 s); stall and lost steps need it shorter than the stall.
	ReadTimeout time.Duration
	// MaxLease is an election's WithMaxLease (0: the longest of WDs).
	MaxLease time.Duration
	Steps    []Step
}

// wd returns Client c's watchdog timeout.
func (q Sequence) wd(c int) time.Duration {
	if c < len(q.WDs) {
		return q.WDs[c]
	}
	return q.Watchdog
}

// maxLease is an election's WithMaxLease: MaxLease, or the longest
// watchdog timeout.
func (q Sequence) maxLease() time.Duration {
	if q.MaxLease > 0 {
		return q.MaxLease
	}
	m := q.Watchdog
	for _, d := range q.WDs {
		m = max(m, d)
	}
	return m
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
	who := ""
	switch {
	case ownerOp(s.Op):
		who = s.owner() + " "
	case clientOp(s.Op):
		who = fmt.Sprintf("c%d ", s.C)
	}
	if slices.Contains(durOps, s.Op) {
		return who + s.Op + " " + fmtDur(s.D)
	}
	return who + s.Op
}

// String is the sequence as -checker.replay takes it: a header, then the
// steps, separated by "; ".
func (q Sequence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s wd=%s clients=", q.Kind, q.wdText())
	for _, p := range q.Procs {
		if p {
			b.WriteByte('p')
		} else {
			b.WriteByte('i')
		}
	}
	if q.ReadTimeout > 0 {
		fmt.Fprintf(&b, " rt=%v", q.ReadTimeout)
	}
	if q.MaxLease > 0 {
		fmt.Fprintf(&b, " max=%v", q.MaxLease)
	}
	for _, s := range q.Steps {
		b.WriteString("; ")
		b.WriteString(s.String())
	}
	return b.String()
}

func (q Sequence) wdText() string {
	if len(q.WDs) == 0 {
		return q.Watchdog.String()
	}
	var parts []string
	for _, d := range q.WDs {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, ",")
}

// ParseSequence reads what Sequence.String writes.
func ParseSequence(text string) (Sequence, error) {
	parts := strings.Split(strings.TrimSpace(text), ";")
	q, err := parseHeader(parts[0])
	if err != nil {
		return q, err
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
		if err := q.allows(s); err != nil {
			return q, fmt.Errorf("checker: step %q: %w", p, err)
		}
		q.Steps = append(q.Steps, s)
	}
	return q, nil
}

// allows reports a step that the sequence's family has no use for.
func (q Sequence) allows(s Step) error {
	election := q.Kind == electionKind
	switch {
	case election && ownerOp(s.Op):
		return fmt.Errorf("an election has candidates (c<n>), not owners")
	case !election && slices.Contains(electionOps, s.Op):
		return fmt.Errorf("%s is an election step", s.Op)
	case election && (s.Op == "stall" || s.Op == "pause"):
		return fmt.Errorf("%s is not an election step (stop and cont pause a candidate)", s.Op)
	}
	return nil
}

func parseHeader(head string) (Sequence, error) {
	var q Sequence
	f := strings.Fields(head)
	if len(f) < 3 || !slices.Contains(kinds, f[0]) && f[0] != keptKind && f[0] != electionKind {
		return q, fmt.Errorf("checker: sequence header %q: want \"<kind> wd=<duration>[,<duration>...] clients=<i|p>... [rt=<duration>] [max=<duration>]\" with kind one of %v, %s or %s", head, kinds, keptKind, electionKind)
	}
	q.Kind = f[0]
	if err := q.parseWD(f[1]); err != nil {
		return q, err
	}
	if err := q.parseClients(f[2]); err != nil {
		return q, err
	}
	for _, kv := range f[3:] {
		k, v, _ := strings.Cut(kv, "=")
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return q, fmt.Errorf("checker: sequence header: %q: a positive duration", kv)
		}
		switch k {
		case "rt":
			q.ReadTimeout = d
		case "max":
			q.MaxLease = d
		default:
			return q, fmt.Errorf("checker: sequence header: %q: rt= or max=", kv)
		}
	}
	if len(q.WDs) > 0 && len(q.WDs) != len(q.Procs) {
		return q, fmt.Errorf("checker: sequence header: %d watchdog timeouts for %d Clients", len(q.WDs), len(q.Procs))
	}
	return q, nil
}

func (q *Sequence) parseWD(field string) error {
	wd, ok := strings.CutPrefix(field, "wd=")
	if !ok {
		return fmt.Errorf("checker: sequence header: %q: no wd=", field)
	}
	list := strings.Split(wd, ",")
	for _, w := range list {
		d, err := time.ParseDuration(w)
		if err != nil || d < time.Second {
			return fmt.Errorf("checker: sequence header: watchdog %q: at least 1s", w)
		}
		q.WDs = append(q.WDs, d)
	}
	q.Watchdog = q.WDs[0]
	if len(list) == 1 {
		q.WDs = nil
	}
	return nil
}

func (q *Sequence) parseClients(field string) error {
	cl, ok := strings.CutPrefix(field, "clients=")
	if !ok || len(cl) < 1 {
		return fmt.Errorf("checker: sequence header: %q: no clients=", field)
	}
	for _, r := range cl {
		switch r {
		case 'i':
			q.Procs = append(q.Procs, false)
		case 'p':
			q.Procs = append(q.Procs, true)
		default:
			return fmt.Errorf("checker: clients=%q: i (in-process) or p (process) per Client", cl)
		}
	}
	return nil
}

func parseStep(text string, clients int) (Step, error) {
	f := strings.Fields(text)
	bad := func(why string) (Step, error) {
		return Step{}, fmt.Errorf("checker: step %q: %s", text, why)
	}
	var s Step
	var rest []string
	switch {
	case len(f) == 0:
		return bad("empty")
	case slices.Contains(opNames, f[0]) && !ownerOp(f[0]) && !clientOp(f[0]):
		s.Op, rest = f[0], f[1:]
	case len(f) < 2:
		return bad("unknown step")
	default:
		s.Op, rest = f[1], f[2:]
		if err := s.parseWho(f[0], clients); err != nil {
			return bad(err.Error())
		}
	}
	if !slices.Contains(opNames, s.Op) {
		return bad("unknown op " + s.Op)
	}
	want := 0
	if slices.Contains(durOps, s.Op) {
		want = 1
	}
	if len(rest) != want {
		return bad(fmt.Sprintf("want %d words", len(f)-len(rest)+want))
	}
	if want == 1 {
		d, err := parseDur(rest[0], slices.Contains(wdOps, s.Op))
		if err != nil {
			return bad(err.Error())
		}
		s.D = d
	}
	return s, nil
}

// parseWho reads the owner (c<n>o<m>) or Client (c<n>) of a step.
func (s *Step) parseWho(who string, clients int) error {
	switch {
	case ownerOp(s.Op):
		if _, err := fmt.Sscanf(who, "c%do%d", &s.C, &s.O); err != nil || s.owner() != who {
			return fmt.Errorf("want c<client>o<owner>")
		}
		if s.O < 0 || s.O >= ownersPerClient {
			return fmt.Errorf("owner o0..o%d", ownersPerClient-1)
		}
	case clientOp(s.Op):
		if _, err := fmt.Sscanf(who, "c%d", &s.C); err != nil || fmt.Sprintf("c%d", s.C) != who {
			return fmt.Errorf("want c<client>")
		}
	default:
		return fmt.Errorf("%s takes no owner or Client", s.Op)
	}
	if s.C < 0 || s.C >= clients {
		return fmt.Errorf("client c0..c%d", clients-1)
	}
	return nil
}

func parseDur(s string, wdOK bool) (time.Duration, error) {
	if s == "wd" && wdOK {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return d, nil
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
	if !set["trylock"] && !set["lock"] && !set["locklease"] && !set["campaign"] {
		return nil, fmt.Errorf("checker: ops %q: at least one acquisition (trylock, lock, locklease) or campaign", text)
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
