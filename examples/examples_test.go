package examples_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/goredisson/goredisson/internal/scenario"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

// The seeds' scenarios: each example program is built and run against a
// throwaway redis-server (rlocktest), and its outcome checked; the naive
// ladder is also checked rung by rung.

func TestExamples(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "examples")
}

var (
	srv  *rlocktest.Server
	bins = map[string]string{}
)

var _ = BeforeSuite(func() {
	srv = rlocktest.StartForSpec()
	for _, name := range []string{"flashsale", "stock", "cachebreakdown", "naivelocks"} {
		bin, err := gexec.Build("github.com/goredisson/goredisson/examples/" + name)
		Expect(err).NotTo(HaveOccurred())
		bins[name] = bin
	}
	DeferCleanup(gexec.CleanupBuildArtifacts)
})

// runExample runs an example program against the suite's Redis and returns
// its standard output; it must exit 0 within a minute.
func runExample(name string, args ...string) string {
	GinkgoHelper()
	cmd := exec.Command(bins[name], append([]string{"--redis", srv.Addr()}, args...)...)
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Eventually(s).WithTimeout(time.Minute).Should(gexec.Exit(0), filepath.Base(bins[name])+" failed")
	return string(s.Out.Contents())
}

// tableRow returns the numbers of the flash-sale table row that starts with
// label.
func tableRow(out, label string) []string {
	GinkgoHelper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == label {
			return f[1:]
		}
	}
	Fail("no row " + label + " in:\n" + out)
	return nil
}

var _ = Describe("the flash sale (200 buyers clicking twice, 50 coupons, two instances)", func() {
	It("oversells and double-orders without a lock, and sells exactly one coupon per buyer with goredisson", func() {
		out := runExample("flashsale")
		bare, locked := tableRow(out, "no")[1:], tableRow(out, "goredisson") // "no lock" is two fields
		// columns: requests, orders, stock left, oversold, duplicate buyers, ...
		Expect(bare[0]).To(Equal("400"))
		Expect(strconv.Atoi(bare[3])).To(BeNumerically(">", 0), "oversold without a lock:\n"+out)
		Expect(strconv.Atoi(bare[4])).To(BeNumerically(">", 0), "duplicate buyers without a lock:\n"+out)
		Expect(locked[:5]).To(Equal([]string{"400", "50/50", "0", "0", "0"}), out)
		Expect(out).To(ContainSubstring("goredisson: exactly 50 orders, one per buyer"))
	})
})

var _ = Describe("stock deduction (10 workers, 5 items)", func() {
	It("oversells without a lock and sells exactly the stock with goredisson", func() {
		out := runExample("stock")
		Expect(out).To(MatchRegexp(`no lock\s*: 10 workers, 5 items: sold ([6-9]|10), .* oversold [1-5]\n`))
		Expect(out).To(ContainSubstring("goredisson: 10 workers, 5 items: sold 5, stock left 0, oversold 0"))
	})
})

var _ = Describe("cache breakdown (a hot key expiring under 50 readers)", func() {
	It("loads the backend once per expiry with the lock and with two levels, once per reader without", func() {
		out := runExample("cachebreakdown", "--expiries", "3", "--readers", "50")
		Expect(out).To(MatchRegexp(`no guard\s+backend loads per expiry \[(\d+) (\d+) (\d+)\]`))
		m := regexp.MustCompile(`no guard\s+backend loads per expiry \[(\d+) `).FindStringSubmatch(out)
		Expect(strconv.Atoi(m[1])).To(BeNumerically(">", 1), "a herd of loads without a guard:\n"+out)
		Expect(out).To(MatchRegexp(`lock\s+backend loads per expiry \[1 1 1\], stale reads 0, errors 0`))
		Expect(out).To(MatchRegexp(`two-level\s+backend loads per expiry \[1 1 1\], stale reads \d+, errors 0`))
	})

	It("serves the stale L2 copy at once instead of waiting for the rebuild", func() {
		rdb := srv.Client()
		DeferCleanup(rdb.Close)
		locks, err := rlock.NewClient(rdb)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(locks.Close)
		c := &scenario.Cache{Redis: rdb, Locks: locks, Backend: &scenario.Backend{Delay: 300 * time.Millisecond},
			Strategy: "two-level", TTL: time.Minute, L2TTL: time.Hour}
		key := "spec:hot:" + strconv.Itoa(GinkgoParallelProcess())
		res, err := scenario.Expiries(context.Background(), c, key, 1, 20)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Loads).To(Equal([]int{1}))
		Expect(res.Stale).To(Equal(19), "every reader but the rebuilder served L2")
		Expect(locks.NewLock(key + ":rebuild")).NotTo(rlocktest.BeLocked())
	})
})

var _ = Describe("the naive SETNX ladder, next to goredisson", Ordered, func() {
	var outcomes map[string]scenario.Outcome

	BeforeAll(func() {
		list, err := scenario.Ladder(context.Background(), srv.Addr(), 300*time.Millisecond)
		Expect(err).NotTo(HaveOccurred())
		outcomes = map[string]scenario.Outcome{}
		for _, o := range list {
			GinkgoWriter.Printf("%s | %s | %s\n", o.Scenario, o.Lock, o.Verdict)
			outcomes[o.Scenario+"|"+o.Lock] = o
		}
	})

	outcome := func(scenarioName, lock string) scenario.Outcome {
		GinkgoHelper()
		o, ok := outcomes[scenarioName+"|"+lock]
		Expect(ok).To(BeTrue(), "no outcome for "+scenarioName+" with "+lock)
		return o
	}

	It("SETNX + DEL: a crashed holder's lock is never released", func() {
		Expect(outcome("holder crashes", scenario.SetnxDel)).To(And(HaveField("OK", BeFalse()), HaveField("Verdict", ContainSubstring("never released (TTL none)"))))
	})
	It("SETNX, then EXPIRE: a holder crashing between the two commands leaves an eternal lock", func() {
		Expect(outcome("holder crashes", scenario.SetnxExpire)).To(HaveField("OK", BeFalse()))
	})
	It("goredisson: a crashed holder's lock is free one lease later", func() {
		Expect(outcome("holder crashes", scenario.Goredisson)).To(HaveField("OK", BeTrue()))
	})
	It("SET NX PX + DEL: a job outlasting its TTL deletes the next owner's lock and a third owner enters", func() {
		Expect(outcome("job outlasts its TTL", scenario.SetPxDel)).To(And(HaveField("OK", BeFalse()), HaveField("Verdict", ContainSubstring("deleted the second's lock"))))
	})
	It("SET NX PX + Lua DEL: a safe release, but the next owner enters while the long job works", func() {
		Expect(outcome("job outlasts its TTL", scenario.LuaCompareDel)).To(And(HaveField("OK", BeFalse()), HaveField("Verdict", ContainSubstring("entered while it worked"))))
	})
	It("goredisson with a fixed lease: the late release is refused with ErrNotHeld and deletes nothing", func() {
		Expect(outcome("job outlasts its TTL", scenario.Goredisson+" (fixed lease)")).To(And(HaveField("OK", BeTrue()), HaveField("Verdict", ContainSubstring("ErrNotHeld"))))
	})
	It("goredisson with the watchdog: the long job keeps its lock and the next owners wait", func() {
		Expect(outcome("job outlasts its TTL", scenario.Goredisson+" (watchdog)")).To(And(HaveField("OK", BeTrue()), HaveField("Verdict", ContainSubstring("held until released"))))
	})
	It("GET, compare, then DEL: the lock expires between check and delete and another owner's lock is deleted", func() {
		Expect(outcome("check, then delete", scenario.GetCompareDel)).To(And(HaveField("OK", BeFalse()), HaveField("Verdict", ContainSubstring("deleted the second's lock"))))
	})
	It("goredisson: the release is one script, so the same timing deletes nothing of another owner", func() {
		Expect(outcome("check, then delete", scenario.Goredisson+" (fixed lease)")).To(HaveField("OK", BeTrue()))
	})
	It("the naivelocks program prints the same ladder and exits 0", func() {
		out := runExample("naivelocks")
		Expect(strings.Count(out, "FAILS")).To(Equal(5), out)
		Expect(out).To(ContainSubstring("goredisson rlock.Lock (watchdog)"))
	})
})

var _ = Describe("example programs without a Redis", func() {
	It("exit non-zero with a clear message for an unreachable address", func() {
		var errOut bytes.Buffer
		cmd := exec.Command(bins["stock"], "--redis", "127.0.0.1:1")
		cmd.Stderr = &errOut
		err := cmd.Run()
		Expect(err).To(HaveOccurred())
		Expect(errOut.String()).To(ContainSubstring("redis at 127.0.0.1:1 is unreachable"))
	})
})
