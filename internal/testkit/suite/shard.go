package suite

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// ProcsEnv names the environment variable that overrides the number of
// processes RunParallel uses (1: the whole suite in the test process, as
// Run).
const ProcsEnv = "GOREDISSON_SPEC_PROCS"

// shardEnv tells a process that RunParallel started which share it runs:
// "k/n", share k of n (0 is the parent's).
const shardEnv = "GOREDISSON_SPEC_SHARD"

// RunParallel runs the package's Ginkgo suite under t as Run does, its
// specs spread over procs processes of the test binary: the test process
// starts procs-1 copies of itself, each runs its share of the specs (and
// its own BeforeSuite), and the test process runs its own share, prints
// the others' output after its own and fails if any of them failed.
//
// The shares get as many specs each (give or take one), dealt in the order
// of a hash of their full texts; the specs of an Ordered container go
// together, with their outermost container, so they run in order in one
// process. Every process computes
// the shares from the same preview of the suite (ginkgo.PreviewSpecs, with
// the command line's filters), and skips the specs of the other shares with
// a -ginkgo.skip pattern of their exact texts: each process's report says
// "Ran 95 of 288 Specs ... 193 Skipped".
//
// It runs in one process, as Run, when procs or ProcsEnv is 1, under the
// Ginkgo CLI's own -p, and when one process must write one file: a Ginkgo
// report (--ginkgo.json-report and the like), coverage, or a dry run.
func RunParallel(t *testing.T, description string, procs int, filters ...string) {
	suiteConfig, reporterConfig := configuration(filters)
	share, total, child := shareOf(procs)
	if total <= 1 || (!child && !shardable(suiteConfig, reporterConfig)) {
		ginkgo.RunSpecs(t, description, suiteConfig, reporterConfig)
		return
	}
	preview := ginkgo.PreviewSpecs(description, suiteConfig, reporterConfig)
	shares := sharesOf(description, preview, total)
	if skip := othersPattern(shares, share); skip != "" {
		suiteConfig.SkipStrings = append(suiteConfig.SkipStrings, skip)
	}
	// The other shares' specs are skipped here: no "S" for each of them.
	reporterConfig.SilenceSkips = true
	if child {
		ginkgo.RunSpecs(t, description, suiteConfig, reporterConfig)
		return
	}
	others := startShares(t, shares, total)
	ginkgo.RunSpecs(t, description, suiteConfig, reporterConfig)
	for _, o := range others {
		o.wait(t)
	}
}

// shareOf says which share this process runs and of how many: a process
// RunParallel started reads it from shardEnv; the test process runs share
// 0 of ProcsEnv's number, else procs.
func shareOf(procs int) (share, total int, child bool) {
	if v := os.Getenv(shardEnv); v != "" {
		k, n, ok := strings.Cut(v, "/")
		share, err1 := strconv.Atoi(k)
		total, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || share < 0 || share >= total {
			panic(fmt.Sprintf("suite: %s=%q is not k/n", shardEnv, v))
		}
		return share, total, true
	}
	if v := os.Getenv(ProcsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			panic(fmt.Sprintf("suite: %s=%q is not a number of processes", ProcsEnv, v))
		}
		procs = n
	}
	return 0, procs, false
}

// shardable says whether the suite may be spread over processes: not under
// the Ginkgo CLI's -p, and not when one process must write one file.
func shardable(s types.SuiteConfig, r types.ReporterConfig) bool {
	return s.ParallelTotal <= 1 && !s.DryRun && !r.WillGenerateReport() && testing.CoverMode() == ""
}

// sharesOf maps the full text of every spec the preview would run to its
// share: the units (a spec, or an Ordered container's specs) sorted by a
// hash of their text and dealt out in turn, so that the shares get as many
// units each (give or take one) and every process deals the same.
func sharesOf(description string, preview ginkgo.Report, total int) map[string]int {
	unitOf := map[string]string{} // spec text -> unit
	var units []string
	seen := map[string]bool{}
	for _, r := range preview.SpecReports {
		if !r.LeafNodeType.Is(types.NodeTypeIt) || r.State != types.SpecStatePassed {
			continue // not a spec, or one the filters leave out
		}
		unit := r.FullText()
		if r.IsInOrderedContainer && len(r.ContainerHierarchyLocations) > 0 {
			unit = "ordered " + r.ContainerHierarchyLocations[0].String()
		}
		if !seen[unit] {
			seen[unit] = true
			units = append(units, unit)
		}
		unitOf[description+" "+r.FullText()] = unit
	}
	hashes := make(map[string]uint64, len(units))
	for _, u := range units {
		h := fnv.New64a()
		h.Write([]byte(u))
		hashes[u] = h.Sum64()
	}
	slices.SortFunc(units, func(a, b string) int {
		if c := cmp.Compare(hashes[a], hashes[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	shareOfUnit := make(map[string]int, len(units))
	for i, u := range units {
		shareOfUnit[u] = i % total
	}
	shares := make(map[string]int, len(unitOf))
	for text, u := range unitOf {
		shares[text] = shareOfUnit[u]
	}
	return shares
}

// othersPattern is a -ginkgo.skip pattern matching exactly the specs of the
// shares other than share ("" if there are none). Ginkgo matches skip
// patterns against the suite's description, a space and the spec's full
// text.
func othersPattern(shares map[string]int, share int) string {
	var quoted []string
	for text, s := range shares {
		if s != share {
			quoted = append(quoted, regexp.QuoteMeta(text))
		}
	}
	if len(quoted) == 0 {
		return ""
	}
	return "^(?:" + strings.Join(quoted, "|") + ")$"
}

// other is a process running another share.
type other struct {
	share, total int
	cmd          *exec.Cmd
	out          bytes.Buffer
	err          error
}

// startShares starts a process for every share but 0 that has specs.
func startShares(t *testing.T, shares map[string]int, total int) []*other {
	has := make([]bool, total)
	for _, s := range shares {
		has[s] = true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("suite: the test binary: %v", err)
	}
	var others []*other
	for s := 1; s < total; s++ {
		if !has[s] {
			continue
		}
		o := &other{share: s, total: total}
		o.cmd = exec.Command(exe, childArgs(t.Name(), os.Args[1:])...)
		o.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d/%d", shardEnv, s, total))
		o.cmd.Stdout = &o.out
		o.cmd.Stderr = &o.out
		o.cmd.SysProcAttr = sysProcAttr()
		if o.err = o.cmd.Start(); o.err != nil {
			o.cmd = nil
		}
		others = append(others, o)
	}
	return others
}

// wait waits for the process to end, prints its output and fails t if it
// failed. RunParallel calls it for one process after another, so outputs
// never interleave.
func (o *other) wait(t *testing.T) {
	if o.cmd != nil {
		o.err = o.cmd.Wait()
	}
	fmt.Printf("\n--- suite: the specs of share %d of %d, run in a process of their own:\n", o.share+1, o.total)
	printIndented(&o.out)
	if o.err != nil {
		t.Errorf("suite: share %d of %d failed: %v (its output is above)", o.share+1, o.total, o.err)
	}
}

// printIndented prints a share's output, indenting the lines the testing
// package would read as its own (PASS, FAIL, --- FAIL: ...), so that go
// test and test2json see only the test process's verdict.
func printIndented(out *bytes.Buffer) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "PASS" || line == "FAIL" || strings.HasPrefix(line, "--- ") ||
			strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "ok ") {
			line = "    " + line
		}
		fmt.Println(line)
	}
}

// childArgs are the test binary's arguments for a share's process: the
// command line's, less what only one process may do (select tests, write
// profiles, coverage, the test log, verbose test framing), running only the
// test named name.
func childArgs(name string, args []string) []string {
	dropped := []string{
		"-test.run=", "-test.skip=", "-test.bench", "-test.fuzz", "-test.list",
		"-test.coverprofile", "-test.cpuprofile", "-test.memprofile", "-test.blockprofile",
		"-test.mutexprofile", "-test.trace", "-test.outputdir", "-test.testlogfile",
		"-test.gocoverdir", "-test.v", "-test.json", "-test.count",
	}
	out := []string{"-test.run=^" + regexp.QuoteMeta(name) + "$"}
next:
	for _, a := range args {
		for _, d := range dropped {
			if strings.HasPrefix(a, d) {
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}
