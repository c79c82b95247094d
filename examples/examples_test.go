package examples_test

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/goredisson/goredisson/rlocktest"
)

// The scenarios users come from, as programs: each example is built with
// the race detector, run against a throwaway redis-server (rlocktest) as a
// user would run it, and its printed outcome checked.
//
// The specs are spread over processes (internal/testkit/suite.RunParallel): most of
// their time is the programs' own waits (leases, sleeps), one program at a
// time in one process. Each process builds only the programs its specs run.

func TestExamples(t *testing.T) {
	suite.RunParallel(t, "examples", 4)
}

var (
	srv *rlocktest.Server

	binsMu sync.Mutex
	bins   = map[string]string{}
)

var programs = []string{"flashsale", "stock", "cachebreakdown", "naivelocks", "elector"}

var _ = BeforeSuite(func() {
	srv = rlocktest.StartForSpec()
	DeferCleanup(gexec.CleanupBuildArtifacts)
})

// bin returns the example program name built with the race detector,
// building it on first use in this process.
func bin(name string) string {
	GinkgoHelper()
	binsMu.Lock()
	defer binsMu.Unlock()
	if b, ok := bins[name]; ok {
		return b
	}
	b, err := gexec.Build("github.com/goredisson/goredisson/examples/"+name, "-race")
	Expect(err).NotTo(HaveOccurred())
	bins[name] = b
	return b
}

// runExample runs an example program against the suite's Redis and returns
// its standard output; it must exit 0 within two minutes.
func runExample(name string, args ...string) string {
	GinkgoHelper()
	cmd := exec.Command(bin(name), append([]string{"--redis", srv.Addr()}, args...)...)
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Eventually(s).WithTimeout(2*time.Minute).Should(gexec.Exit(0), name+" failed; its output:\n"+string(s.Out.Contents()))
	return string(s.Out.Contents())
}

// expectNoKeysLeft checks that a program left no key under prefix: its data
// cleaned up, and every lock it took released.
func expectNoKeysLeft(prefix string) {
	GinkgoHelper()
	rdb := srv.Client()
	defer rdb.Close()
	Expect(rdb.Keys(context.Background(), prefix+"*").Result()).To(BeEmpty())
}

// numbers returns the integers of the submatches of re in out.
func numbers(re, out string) []int {
	GinkgoHelper()
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	Expect(m).NotTo(BeNil(), "no match for "+re+" in:\n"+out)
	var ns []int
	for _, s := range m[1:] {
		for f := range strings.FieldsSeq(s) {
			n, err := strconv.Atoi(f)
			Expect(err).NotTo(HaveOccurred())
			ns = append(ns, n)
		}
	}
	return ns
}

var _ = Describe("the flash sale (200 buyers clicking twice on two instances, 50 coupons)", Label("slow"), func() {
	It("oversells and double-orders without locks, and sells exactly one coupon to each of 50 buyers with goredisson", func() {
		out := runExample("flashsale")
		bare := numbers(`(?m)^no lock\s*: 400 clicks, 50 coupons: (\d+) orders, oversold (\d+), buyers with two orders (\d+)`, out)
		Expect(bare[1]).To(BeNumerically(">", 0), "oversold without a lock:\n"+out)
		Expect(bare[2]).To(BeNumerically(">", 0), "buyers with two orders without a lock:\n"+out)
		Expect(out).To(ContainSubstring("goredisson: 400 clicks, 50 coupons: 50 orders, oversold 0, buyers with two orders 0, stock left 0\n"))
		expectNoKeysLeft("flashsale:")
	})
})

var _ = Describe("stock deduction (10 workers on two instances, 5 items)", Label("slow"), func() {
	It("oversells without a lock and sells exactly the stock with goredisson", func() {
		out := runExample("stock")
		Expect(out).To(MatchRegexp(`(?m)^no lock\s*: 10 workers, 5 items: sold ([6-9]|10), stock left \d+, oversold [1-5]$`))
		Expect(out).To(ContainSubstring("goredisson: 10 workers, 5 items: sold 5, stock left 0, oversold 0\n"))
		expectNoKeysLeft("stock:")
	})
})

var _ = Describe("cache breakdown (a hot key expiring under concurrent readers)", Label("slow"), func() {
	It("loads the backend once per expiry with the rebuild lock and with two levels, many times without", func() {
		out := runExample("cachebreakdown", "--expiries", "3", "--readers", "50")
		unguarded := numbers(`no guard\s+backend loads per expiry \[([\d ]+)\]`, out)
		Expect(unguarded).To(HaveLen(3))
		Expect(slices.Max(unguarded)).To(BeNumerically(">", 1), "a herd of loads without a guard:\n"+out)
		Expect(out).To(MatchRegexp(`lock\s+backend loads per expiry \[1 1 1\], stale reads 0, errors 0`))
		Expect(out).To(MatchRegexp(`two-level\s+backend loads per expiry \[1 1 1\], stale reads \d+, errors 0`))
		expectNoKeysLeft("cache:")
	})

	It("serves the stale L2 copy at once to every reader but the rebuilder, instead of waiting", func() {
		out := runExample("cachebreakdown", "--expiries", "1", "--readers", "20", "--load-time", "1s")
		Expect(out).To(MatchRegexp(`two-level\s+backend loads per expiry \[1\], stale reads 19, errors 0`))
		expectNoKeysLeft("cache:")
	})
})

var _ = Describe("the naive lock ladder, next to goredisson", Ordered, Label("slow"), func() {
	verdicts := map[string]string{} // "scenario|lock" -> verdict

	BeforeAll(func() {
		out := runExample("naivelocks")
		for line := range strings.Lines(out) {
			f := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), 3)
			if len(f) == 3 {
				verdicts[f[0]+"|"+f[1]] = f[2]
			}
		}
		Expect(verdicts).To(HaveLen(9), out)
		expectNoKeysLeft("naivelocks:")
	})

	verdict := func(scenario, lock string) string {
		GinkgoHelper()
		v, ok := verdicts[scenario+"|"+lock]
		Expect(ok).To(BeTrue(), "no row for "+scenario+" with "+lock)
		return v
	}
	const crash, outlasts, checkDelete = "holder crashes", "job outlasts its TTL", "check, then delete"

	It("SETNX + DEL: a crashed holder's lock is never released", func() {
		Expect(verdict(crash, "SETNX + DEL")).To(HavePrefix("FAILS: the lock is never released (TTL none)"))
	})
	It("SETNX, then EXPIRE: a holder crashing between the two commands leaves a lock that never expires", func() {
		Expect(verdict(crash, "SETNX, then EXPIRE")).To(HavePrefix("FAILS: the lock is never released (TTL none)"))
	})
	It("goredisson: a crashed holder's lock is free one lease later", func() {
		Expect(verdict(crash, "goredisson (watchdog)")).To(HavePrefix("ok: the next owner got the lock after"))
	})
	It("SET NX PX + DEL: a job outlasting its TTL deletes the next owner's lock, and a third owner enters", func() {
		Expect(verdict(outlasts, "SET NX PX + DEL")).To(And(HavePrefix("FAILS:"), ContainSubstring("deleted the second's lock")))
	})
	It("SET NX PX + Lua DEL: the release is safe, but the next owner enters while the long job works", func() {
		Expect(verdict(outlasts, "SET NX PX + Lua DEL")).To(And(
			HavePrefix("FAILS: the second owner entered while the first still worked"), Not(ContainSubstring("deleted"))))
	})
	It("goredisson with a fixed lease: the lease runs out like rung 5's TTL, and the late Unlock is refused with ErrNotHeld", func() {
		Expect(verdict(outlasts, "goredisson (fixed lease)")).To(And(
			ContainSubstring("entered while the first still worked"),
			ContainSubstring("refused (ErrNotHeld) and deleted nothing"),
			Not(ContainSubstring("deleted the second's lock"))))
	})
	It("goredisson with the watchdog: the long job keeps its lock and the next owners wait", func() {
		Expect(verdict(outlasts, "goredisson (watchdog)")).To(Equal("ok: each owner waited for the previous one's release"))
	})
	It("GET, compare, then DEL: the lock expires between check and delete, and the next owner's lock is deleted", func() {
		Expect(verdict(checkDelete, "SET NX PX + GET/DEL")).To(And(HavePrefix("FAILS:"), ContainSubstring("deleted the second's lock")))
	})
	It("goredisson: the release is one script, so there is no gap between check and delete", func() {
		Expect(verdict(checkDelete, "goredisson (fixed lease)")).To(Equal("ok: each owner waited for the previous one's release"))
	})
})

var _ = Describe("example programs as users copy them", Label("slow"), func() {
	It("import only the standard library, go-redis and goredisson's public packages", func() {
		allowed := []string{"github.com/redis/go-redis/v9", "github.com/goredisson/goredisson/rlock",
			"github.com/goredisson/goredisson/ctxowner", "github.com/goredisson/goredisson/rlocktest",
			"github.com/goredisson/goredisson/election"}
		for _, name := range programs {
			out, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", "./"+name).Output()
			Expect(err).NotTo(HaveOccurred())
			for imp := range strings.Lines(string(out)) {
				imp = strings.TrimSpace(imp)
				if strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") { // not the standard library
					Expect(allowed).To(ContainElement(imp), name+" imports "+imp)
				}
			}
		}
	})

	It("start a throwaway redis-server when no --redis is given", func() {
		s, err := gexec.Start(exec.Command(bin("stock")), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s).WithTimeout(time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(ContainSubstring("goredisson: 10 workers, 5 items: sold 5, stock left 0, oversold 0\n"))
	})
})

var _ = Describe("example programs without a Redis", Label("slow"), func() {
	It("exit 1 with a clear message for an unreachable address", func() {
		for _, name := range programs {
			s, err := gexec.Start(exec.Command(bin(name), "--redis", "127.0.0.1:1"), GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(s).WithTimeout(time.Minute).Should(gexec.Exit(1), name)
			Expect(string(s.Err.Contents())).To(ContainSubstring(name+": redis at 127.0.0.1:1 is unreachable"), name)
		}
	})
})

var _ = Describe("the elector (three scheduler pods, one leader at a time)", Label("slow"), func() {
	It("hands leadership over on Resign and after a crash, never to two pods at once", func() {
		out := runExample("elector")
		Expect(numbers(`terms: (\d+)`, out)).To(Equal([]int{3}))
		Expect(out).To(ContainSubstring("at most one leader at a time: true"))
		Expect(out).To(ContainSubstring("crashed without resigning"))
		expectNoKeysLeft("elector:")
	})
})
