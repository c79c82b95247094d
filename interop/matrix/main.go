// Command matrix runs the interop suite's version matrix (label "matrix",
// interop/matrix_spec_test.go) against Redisson probes built beforehand and
// writes the table: every release × lock type or synchronizer × topology
// (one server, a 3-master Redis Cluster) × direction (Go waits on Java,
// Java waits on Go): agrees, differs (how), or that release lacks the type.
//
//	REDISSON_PROBES=3.18.1=/probes/3.18.1/run-probe.sh,4.7.0=/probes/4.7.0/run-probe.sh \
//	    go run ./interop/matrix
//
// Run it from the module's root. Each probe is built from Redisson's
// source with shared/tools/redisson-probe (outside this repository; see
// docs/redisson.md). For each release it runs three passes:
//
//   - "version": goredisson with rlock.WithRedissonVersion(release);
//   - "mapper": the same with a NameMapper (prefix "tenant:") on both sides;
//   - "default": goredisson's defaults, for releases whose pub/sub the
//     version option changes (before 3.22.0: classic; 3.22.0 to 3.27.x:
//     both kinds, as each Redisson start draws one), on the Cluster only;
//   - "mapper-default" (only when -passes names it): the mapper without
//     the version option, for releases before 3.52.0, on one server.
//
// Results are kept per release and pass in interop/matrix.json (a data
// file: a run updates only what it ran) and rendered to interop/matrix.md.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// cell is one measured cell, as the matrix specs report it.
type cell struct {
	Type      string  `json:"type"`
	Topology  string  `json:"topology"`
	Direction string  `json:"direction"`
	Result    string  `json:"result"`
	Millis    float64 `json:"ms"`
	Note      string  `json:"note,omitempty"`
}

// run is one pass against one release.
type run struct {
	Release string    `json:"release"`
	Pass    string    `json:"pass"`
	Redis   string    `json:"redis,omitempty"`
	Probe   string    `json:"probe"` // what the probe says it was built from
	When    time.Time `json:"when"`
	Cells   []cell    `json:"cells"`
}

const mapperPrefix = "tenant:"

func main() {
	var (
		dir      = flag.String("dir", "interop", "the interop package's directory (matrix.json and matrix.md are written there)")
		passes   = flag.String("passes", "version,mapper,default", "passes to run: version, mapper, default")
		topology = flag.String("topology", "", "single or cluster: run one topology only (default both)")
		only     = flag.Bool("render", false, "only render matrix.md from matrix.json")
	)
	flag.Parse()
	if *only {
		runs, err := load(filepath.Join(*dir, "matrix.json"))
		if err == nil {
			err = os.WriteFile(filepath.Join(*dir, "matrix.md"), []byte(render(runs)), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "matrix:", err)
			os.Exit(1)
		}
		return
	}
	probes, err := parseProbes(os.Getenv("REDISSON_PROBES"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		fmt.Fprintln(os.Stderr, "usage: REDISSON_PROBES=<release>=<run-probe.sh>[,...] go run ./interop/matrix")
		os.Exit(2)
	}
	dataPath := filepath.Join(*dir, "matrix.json")
	runs, err := load(dataPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(1)
	}
	failed := false
	for _, p := range probes {
		for _, pass := range strings.Split(*passes, ",") {
			topo := *topology
			switch pass {
			case "default":
				if !before(p.release, 3, 28) {
					continue
				}
				if topo == "" {
					topo = "cluster" // one server has no sharded pub/sub: the option changes nothing there
				}
			case "mapper-default":
				if !before(p.release, 3, 52) {
					continue
				}
				if topo == "" {
					topo = "single"
				}
			}
			r, err := runPass(*dir, p, pass, topo)
			if err != nil {
				fmt.Fprintf(os.Stderr, "matrix: %s %s: %v\n", p.release, pass, err)
				failed = true
				continue
			}
			runs = merge(runs, r, topo)
			if err := save(dataPath, runs); err != nil {
				fmt.Fprintln(os.Stderr, "matrix:", err)
				os.Exit(1)
			}
			if err := os.WriteFile(filepath.Join(*dir, "matrix.md"), []byte(render(runs)), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "matrix:", err)
				os.Exit(1)
			}
			agree, other := 0, 0
			for _, c := range r.Cells {
				if c.Result == "agrees" {
					agree++
				} else {
					other++
				}
			}
			fmt.Printf("matrix: %s %-7s %d cells agree, %d do not (lack the type or differ)\n", p.release, pass, agree, other)
		}
	}
	if failed {
		os.Exit(1)
	}
}

type probeArg struct{ release, path string }

func parseProbes(s string) ([]probeArg, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("REDISSON_PROBES is empty")
	}
	var out []probeArg
	for _, part := range strings.Split(s, ",") {
		rel, path, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || rel == "" || path == "" {
			return nil, fmt.Errorf("REDISSON_PROBES entry %q: want <release>=<run-probe.sh>", part)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("REDISSON_PROBES entry %q: %w", part, err)
		}
		out = append(out, probeArg{release: rel, path: path})
	}
	return out, nil
}

// before reports whether release is older than major.minor.0.
func before(release string, major, minor int) bool {
	parts := strings.Split(release, ".")
	if len(parts) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(parts[1])
	return ma < major || (ma == major && mi < minor)
}

// runPass runs the matrix specs once and returns their cells.
func runPass(dir string, p probeArg, pass, topo string) (run, error) {
	report, err := os.CreateTemp("", "matrix-*.json")
	if err != nil {
		return run{}, err
	}
	report.Close()
	defer os.Remove(report.Name())
	cmd := exec.Command("go", "test", "./"+filepath.ToSlash(dir), "-run", "TestInterop", "-count=1", "-timeout", "40m",
		"-ginkgo.label-filter=matrix", "-ginkgo.json-report="+report.Name())
	env := append(os.Environ(), "REDISSON_PROBE="+p.path, "REDISSON_MATRIX=1", "GOREDISSON_SPEC_PROCS=1",
		"REDISSON_MATRIX_TOPOLOGY="+topo, "REDISSON_MATRIX_VERSION=", "PROBE_NAME_PREFIX=")
	switch pass {
	case "version":
		env = append(env, "REDISSON_MATRIX_VERSION="+p.release)
	case "mapper":
		env = append(env, "REDISSON_MATRIX_VERSION="+p.release, "PROBE_NAME_PREFIX="+mapperPrefix)
	case "mapper-default":
		env = append(env, "PROBE_NAME_PREFIX="+mapperPrefix)
	case "default":
	default:
		return run{}, fmt.Errorf("unknown pass %q", pass)
	}
	cmd.Env = env
	cmd.Stderr = os.Stderr
	out, _ := cmd.Output() // a cell that differs fails its spec: the report says which
	r := run{Release: p.release, Pass: pass, When: time.Now().UTC().Truncate(time.Minute), Probe: probeSource(p.path)}
	data, err := os.ReadFile(report.Name())
	if err != nil || len(data) == 0 {
		return r, fmt.Errorf("no report from go test: %v\n%s", err, out)
	}
	var reports []struct {
		SpecReports []struct {
			State         string `json:"State"`
			LeafNodeText  string `json:"LeafNodeText"`
			ReportEntries []struct {
				Name  string `json:"Name"`
				Value struct {
					AsJSON string `json:"AsJSON"`
				} `json:"Value"`
			} `json:"ReportEntries"`
			Failure *struct {
				Message string `json:"Message"`
			} `json:"Failure"`
		} `json:"SpecReports"`
	}
	if err := json.Unmarshal(data, &reports); err != nil {
		return r, err
	}
	for _, rep := range reports {
		for _, sr := range rep.SpecReports {
			found := false
			for _, e := range sr.ReportEntries {
				if e.Name != "matrix" {
					continue
				}
				var c cell
				if err := json.Unmarshal([]byte(e.Value.AsJSON), &c); err == nil {
					r.Cells = append(r.Cells, c)
					found = true
				}
			}
			if !found && strings.Contains(sr.LeafNodeText, " | ") && sr.State != "skipped" {
				// a spec that failed before it could report (say, the
				// probe did not start): the cell says why
				parts := strings.SplitN(sr.LeafNodeText, " | ", 3)
				msg := sr.State
				if sr.Failure != nil {
					msg += ": " + firstLine(sr.Failure.Message)
				}
				r.Cells = append(r.Cells, cell{Topology: parts[0], Type: parts[1], Direction: parts[2], Result: "not measured (" + msg + ")"})
			}
		}
	}
	if len(r.Cells) == 0 {
		return r, fmt.Errorf("the report has no matrix cells:\n%s", out)
	}
	return r, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// probeSource reads what the probe's build recorded next to run-probe.sh.
func probeSource(path string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "REDISSON_VERSION"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func load(path string) ([]run, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var runs []run
	return runs, json.Unmarshal(b, &runs)
}

func save(path string, runs []run) error {
	b, err := json.MarshalIndent(runs, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// merge puts r in place of the cells it re-measured (those of its
// topology, or all when topo is empty).
func merge(runs []run, r run, topo string) []run {
	for i := range runs {
		if runs[i].Release != r.Release || runs[i].Pass != r.Pass {
			continue
		}
		kept := r.Cells
		for _, c := range runs[i].Cells {
			if topo != "" && c.Topology != topo {
				kept = append(kept, c)
			}
		}
		r.Cells = kept
		runs[i] = r
		return runs
	}
	return append(runs, r)
}

var typeOrder = []string{"Lock", "FairLock", "FencedLock", "SpinLock",
	"ReadWriteLock (reader holds, writer waits)", "ReadWriteLock (writer holds, reader waits)",
	"NonReentrantLock", "NonReentrantFairLock", "MultiLock (2 locks)", "RedLock (3 locks)", "FasterMultiLock",
	"Semaphore", "PermitExpirableSemaphore", "CountDownLatch"}

var columns = []struct{ topo, dir, title string }{
	{"single", "Go waits on Java", "one server: Go waits on Java"},
	{"single", "Java waits on Go", "one server: Java waits on Go"},
	{"cluster", "Go waits on Java", "Cluster: Go waits on Java"},
	{"cluster", "Java waits on Go", "Cluster: Java waits on Go"},
}

func render(runs []run) string {
	var b strings.Builder
	b.WriteString("# Redisson version matrix\n\n")
	b.WriteString("Written by `go run ./interop/matrix` (see docs/redisson.md#the-version-matrix). Each cell: one client\n" +
		"holds with an 8 s lease, the other's waiter stays out, and the release must wake it within 1 s\n" +
		"(\"agrees\"); \"differs\" says what happened instead; \"lacks\" means that Redisson release has no\n" +
		"such type. One server: redis-server on loopback; Cluster: 3 masters with a replica each (Redis 7,\n" +
		"sharded pub/sub available). Redisson: the real client, built from the release's source\n" +
		"(`shared/tools/redisson-probe`), driven through `interop/testdata/MatrixProbe.java`.\n\n")
	sort.SliceStable(runs, func(i, j int) bool {
		if runs[i].Pass != runs[j].Pass {
			return passRank(runs[i].Pass) < passRank(runs[j].Pass)
		}
		return versionLess(runs[i].Release, runs[j].Release)
	})
	b.WriteString(summary(runs))
	titles := map[string]string{
		"version":        "## With `rlock.WithRedissonVersion(release)`\n\nThe option the docs tell porters to set. Every cell must agree.\n\n",
		"mapper":         "## With a NameMapper on both sides\n\nRedisson's `NameMapper` map(n) = \"tenant:\" + n and `rlock.WithNameMapper` with the same pair, plus `rlock.WithRedissonVersion(release)` (hash-tagged names on the Cluster, as the old fair-lock layout needs: docs/redisson.md#namemapper).\n\n",
		"default":        "## Without the version option (goredisson's defaults), releases before 3.28.0\n\nWhat a porter sees who leaves the option out: on a Cluster goredisson then uses sharded pub/sub (Redisson's AUTO on Redis 7), which releases before 3.22.0 never use, and which a start of 3.22.0 to 3.27.x uses only when it drew sharded (see each cell's note: Redisson is started anew for every cell of these releases).\n\n",
		"mapper-default": "## A NameMapper without the version option, releases before 3.52.0\n\nWhat a porter sees who sets the mapper but not the release: goredisson then writes the newest layout (see docs/redisson.md#namemapper for which keys move).\n\n",
	}
	last := ""
	for _, r := range runs {
		if r.Pass != last {
			b.WriteString(titles[r.Pass])
			last = r.Pass
		}
		fmt.Fprintf(&b, "### Redisson %s (%s pass, %s)\n\n", r.Release, r.Pass, r.When.Format("2006-01-02 15:04 UTC"))
		if r.Probe != "" {
			fmt.Fprintf(&b, "Built from `%s`.\n\n", r.Probe)
		}
		b.WriteString("| type |")
		for _, c := range columns {
			b.WriteString(" " + c.title + " |")
		}
		b.WriteString("\n|---|---|---|---|---|\n")
		byKey := map[string]cell{}
		for _, c := range r.Cells {
			byKey[c.Type+"|"+c.Topology+"|"+c.Direction] = c
		}
		for _, t := range typeOrder {
			fmt.Fprintf(&b, "| %s |", t)
			for _, col := range columns {
				c, ok := byKey[t+"|"+col.topo+"|"+col.dir]
				switch {
				case !ok:
					b.WriteString(" not run |")
				case c.Result == "agrees":
					fmt.Fprintf(&b, " agrees (%.0f ms%s) |", c.Millis, drawOf(c.Note, "; "))
				case strings.HasPrefix(c.Result, "that release lacks"):
					b.WriteString(" lacks the type |")
				default:
					fmt.Fprintf(&b, " %s%s |", strings.ReplaceAll(c.Result, "|", "/"), drawOf(c.Note, " ("))
				}
			}
			b.WriteString("\n")
		}
		notes := map[string]bool{}
		draws := map[string]int{}
		for _, c := range r.Cells {
			if d := drawOf(c.Note, ""); d != "" {
				draws[d]++
				continue
			}
			if c.Note != "" && !notes[c.Note] {
				notes[c.Note] = true
				fmt.Fprintf(&b, "\nNote: %s.\n", c.Note)
			}
		}
		if len(draws) > 0 {
			goSide := "goredisson had only WithRedissonVersion (and the NameMapper of the pass)"
			if r.Pass == "default" || r.Pass == "mapper-default" {
				goSide = "goredisson had its defaults"
			}
			fmt.Fprintf(&b, "\nNote: on the Cluster, Redisson was started anew for every cell (the slot-0 master listed first and last in turn) and %s; %d starts drew sharded pub/sub, %d classic (each cell says which).\n",
				goSide, draws["drew sharded"], draws["drew classic"])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// drawOf returns "drew sharded" or "drew classic" after prefix when a
// cell's note says what its Redisson start drew, else "".
func drawOf(note, prefix string) string {
	for _, d := range []string{"drew sharded", "drew classic"} {
		if strings.Contains(note, d) {
			if prefix == " (" {
				return " (" + d + ")"
			}
			return prefix + d
		}
	}
	return ""
}

func passRank(p string) int {
	switch p {
	case "version":
		return 0
	case "mapper":
		return 1
	case "default":
		return 2
	}
	return 3
}

func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// summary counts each release's cells per pass and topology.
func summary(runs []run) string {
	var b strings.Builder
	b.WriteString("## Summary\n\nCells per release (types × 2 directions): agree / differ / the release lacks the type.\n\n")
	b.WriteString("| release | version, one server | version, Cluster | mapper, one server | mapper, Cluster | defaults, Cluster | mapper without version, one server |\n|---|---|---|---|---|---|---|\n")
	type key struct{ rel, pass, topo string }
	counts := map[key][3]int{}
	var releases []string
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.Release] {
			seen[r.Release] = true
			releases = append(releases, r.Release)
		}
		for _, c := range r.Cells {
			k := key{r.Release, r.Pass, c.Topology}
			n := counts[k]
			switch {
			case c.Result == "agrees":
				n[0]++
			case strings.HasPrefix(c.Result, "that release lacks"):
				n[2]++
			default:
				n[1]++
			}
			counts[k] = n
		}
	}
	sort.Slice(releases, func(i, j int) bool { return versionLess(releases[i], releases[j]) })
	cols := []key{{"", "version", "single"}, {"", "version", "cluster"}, {"", "mapper", "single"}, {"", "mapper", "cluster"}, {"", "default", "cluster"}, {"", "mapper-default", "single"}}
	for _, rel := range releases {
		fmt.Fprintf(&b, "| %s |", rel)
		for _, c := range cols {
			n, ok := counts[key{rel, c.pass, c.topo}]
			if !ok {
				b.WriteString(" — |")
				continue
			}
			fmt.Fprintf(&b, " %d / %d / %d |", n[0], n[1], n[2])
		}
		b.WriteString("\n")
	}
	b.WriteString("\n— : not run. The defaults pass runs for releases before 3.28.0 (from 3.28 Redisson asks PUBSUB SHARDNUMSUB and the defaults match the version pass; 3.22 to 3.27 draw their pub/sub at each start, and the defaults match only the starts that drew sharded, see the notes); the mapper-without-version pass ran for a sample of releases before 3.52.0 (all of them move the fair queue). On the Cluster, every cell of 3.22.0 to 3.27.x starts Redisson anew (the slot-0 master listed first and last in turn) and goredisson has only WithRedissonVersion: its notes say what each start drew.\n\n")
	return b.String()
}
