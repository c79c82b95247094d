// Package interop_test proves goredisson's wire compatibility with Redisson.
//
// Two suites share this package:
//
//   - the emulator specs (no label; they run in every `go test ./...`) check
//     goredisson against a Redisson client emulated in Go (emulator_test.go),
//     which runs Redisson's scripts and reacts to Redisson's messages as
//     Redisson does;
//   - the probe specs (label "redisson") drive the real Redisson, built from
//     its source as shared/tools/redisson-probe, through the probe's line
//     protocol. They run only when REDISSON_PROBE names the probe's
//     run-probe.sh; otherwise the suite says so in one line and skips them.
//
// Measured wake-up times are printed at the end of the suite and, with
// INTEROP_RESULTS=1, written to results.md in this directory.
package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

const (
	// probeEnv names the probe's run-probe.sh.
	probeEnv = "REDISSON_PROBE"
	// resultsEnv, set to 1, makes the suite write results.md.
	resultsEnv = "INTEROP_RESULTS"
	// wakeBound is how soon after an unlock a waiter must hold the lock:
	// well under the TTL a waiter that missed the message sleeps (a Java
	// holder's lease is renewed to 3 s every second, so such a waiter
	// sleeps 2 s at least; a Go holder's is 30 s), and well over the
	// scheduling delays of a loaded 2-core machine, where 200 ms failed 2
	// runs in 6 (the measured times, a few ms, are in results.md).
	wakeBound = time.Second
)

func TestInterop(t *testing.T) {
	var filters []string
	if os.Getenv(probeEnv) == "" {
		fmt.Printf("interop: %s is not set, so the specs against the real Redisson (label redisson) are skipped; build shared/tools/redisson-probe and set %s=<out>/run-probe.sh to run them\n", probeEnv, probeEnv)
		filters = append(filters, "!redisson")
	}
	if os.Getenv(matrixEnv) != "1" {
		filters = append(filters, "!matrix")
	}
	suite.RunParallel(t, "interop", 3, filters...)
}

var (
	server *redistest.Server
	// java is the real Redisson (nil when the probe specs do not run).
	java *probe
)

var _ = BeforeSuite(func() {
	var err error
	server, err = redistest.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(server.Close()).To(Succeed()) })
	rdb := server.Client()
	info, err := rdb.Info(context.Background(), "server").Result()
	Expect(err).NotTo(HaveOccurred())
	Expect(rdb.Close()).To(Succeed())
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			versions.Lock()
			versions.redis = v
			versions.Unlock()
		}
	}
	path := os.Getenv(probeEnv)
	if path == "" || !Label("redisson").MatchesLabelFilter(GinkgoLabelFilter()) {
		return
	}
	java, err = startProbe(path, server.Addr, javaWatchdog)
	Expect(err).NotTo(HaveOccurred(), "starting the Redisson probe %s", path)
	DeferCleanup(func() { Expect(java.close()).To(Succeed()) })
	warmUpProbe(java)
	startSyncJava(path, server.Addr)
	startGroupJava(path, server.Addr)
})

// env is one spec's world: a flushed server, a raw client for inspection,
// and goredisson clients and emulated Redisson instances that are closed,
// and checked for leaked goroutines, when the spec ends.
type env struct {
	raw *redis.Client
}

// newEnv flushes the server and snapshots goroutines; at cleanup every
// client made through it is closed and no goroutine may be left behind.
func newEnv() *env {
	GinkgoHelper()
	before := gleak.Goroutines()
	e := &env{raw: server.Client()}
	Expect(e.raw.FlushAll(context.Background()).Err()).To(Succeed())
	DeferCleanup(func() {
		Expect(e.raw.Close()).To(Succeed())
		Eventually(gleak.Goroutines).WithTimeout(10 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
	return e
}

// rdb returns a go-redis client closed at cleanup.
func (e *env) rdb() *redis.Client {
	c := server.Client()
	DeferCleanup(c.Close)
	return c
}

// goClient returns a goredisson client on its own connection pool, closed
// at cleanup.
func (e *env) goClient(opts ...rlock.Option) *rlock.Client {
	GinkgoHelper()
	c, err := rlock.NewClient(e.rdb(), append(append([]rlock.Option(nil), goClientOptions...), opts...)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() })
	return c
}

// emu returns an emulated Redisson instance, closed at cleanup.
func (e *env) emu(opts ...emuOption) *redissonEmu {
	r := newRedissonEmu(e.rdb(), opts...)
	DeferCleanup(r.Close)
	return r
}

// lockName returns a lock name unique to the running spec (both suites run
// the same scenarios: a Redisson thread left waiting by a failed probe spec
// must never meet an emulator spec's lock).
func lockName(prefix string) string {
	h := fnv.New32a()
	h.Write([]byte(CurrentSpecReport().FullText()))
	return fmt.Sprintf("%s:%08x", prefix, h.Sum32())
}

// bg runs f on a goroutine that recovers Ginkgo failures; the returned
// channel gets f's error (buffered) when it ends.
func bg(f func() error) <-chan error {
	out := make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		out <- f()
	}()
	return out
}

// wakeRecord is one measured wake-up: from the unlock to the waiter
// holding the lock, as the test saw it.
type wakeRecord struct {
	Suite    string  `json:"suite"`    // "redisson" (the real client) or "emulator"
	Scenario string  `json:"scenario"` // what woke whom
	Millis   float64 `json:"ms"`
}

// recordWake prints a measured wake-up and attaches it to the spec's report
// for the summary.
func recordWake(suite, scenario string, d time.Duration) {
	ms := float64(d.Microseconds()) / 1000
	fmt.Fprintf(GinkgoWriter, "wake-up %-8s %-70s %8.1f ms\n", suite, scenario, ms)
	AddReportEntry("wake-up", wakeRecord{Suite: suite, Scenario: scenario, Millis: ms}, ReportEntryVisibilityNever)
}

// expectWake records d and checks it against the wake-up bound.
func expectWake(suite, scenario string, d time.Duration) {
	GinkgoHelper()
	recordWake(suite, scenario, d)
	Expect(d).To(BeNumerically("<", wakeBound), "%s: woken after %v", scenario, d)
}

// versions are the Redis and Redisson versions the suite ran against.
var versions struct {
	sync.Mutex
	redis, redisson string
}

var _ = ReportAfterSuite("wake-up times", func(r Report) {
	rows := map[string]map[string][]float64{}
	for _, sr := range r.SpecReports {
		for _, entry := range sr.ReportEntries {
			if entry.Name != "wake-up" {
				continue
			}
			var w wakeRecord
			raw, _ := json.Marshal(entry.Value.GetRawValue())
			if json.Unmarshal(raw, &w) != nil || w.Scenario == "" {
				continue
			}
			if rows[w.Suite] == nil {
				rows[w.Suite] = map[string][]float64{}
			}
			rows[w.Suite][w.Scenario] = append(rows[w.Suite][w.Scenario], w.Millis)
		}
	}
	if len(rows) == 0 {
		return
	}
	text := wakeTable(rows)
	fmt.Fprint(GinkgoWriter, text)
	if os.Getenv(resultsEnv) == "1" {
		Expect(os.WriteFile("results.md", []byte(text), 0o644)).To(Succeed())
	}
})

// wakeTable renders the measured wake-ups as Markdown, one table per suite.
func wakeTable(rows map[string]map[string][]float64) string {
	var b strings.Builder
	b.WriteString("# Measured wake-up times\n\n")
	versions.Lock()
	fmt.Fprintf(&b, "From the unlock, release or last count-down (the call's start) to the waiter holding the lock or\n"+
		"the permits, or going on from await (its call's return), on one loopback redis-server %s, %s.\n"+
		"Written by `INTEROP_RESULTS=1 go test ./interop`.\n\n",
		versions.redis, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	versions.Unlock()
	versions.Lock()
	if versions.redisson != "" {
		fmt.Fprintf(&b, "Redisson: %s (the real client, built from its source, through shared/tools/redisson-probe).\n\n", versions.redisson)
	}
	versions.Unlock()
	suites := make([]string, 0, len(rows))
	for s := range rows {
		suites = append(suites, s)
	}
	sort.Strings(suites)
	for _, s := range suites {
		fmt.Fprintf(&b, "## %s\n\n| scenario | wake-up (ms) |\n|---|---|\n", suiteTitle(s))
		scenarios := make([]string, 0, len(rows[s]))
		for sc := range rows[s] {
			scenarios = append(scenarios, sc)
		}
		sort.Strings(scenarios)
		for _, sc := range scenarios {
			var parts []string
			for _, ms := range rows[s][sc] {
				parts = append(parts, fmt.Sprintf("%.1f", ms))
			}
			fmt.Fprintf(&b, "| %s | %s |\n", sc, strings.Join(parts, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func suiteTitle(s string) string {
	if s == "redisson" {
		return "goredisson and the real Redisson"
	}
	return "goredisson and the Redisson emulator"
}
