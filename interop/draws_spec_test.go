package interop_test

// Redisson 3.22.0 to 3.27.x on a Cluster decide at every start whether
// they use sharded or classic pub/sub: they send SPUBLISH "" "" to one node
// and go sharded only if it is the master of slot 0. 3.22.0 to 3.26.x ask
// the first configured address that connects (ClusterConnectionManager.
// connect), 3.27.x the first master of a map keyed by identity-hashed
// clients (detectSharding: a new draw at every JVM start). A Go service
// configured only with WithRedissonVersion must wake and be woken by every
// start, whichever it drew.
//
// This spec starts the real Redisson that REDISSON_PROBE names again and
// again against one Cluster (3.22-3.26: with the slot-0 master listed
// first and last, in turn), never telling goredisson what it drew, logs the
// draw of each start (PUBSUB SHARDNUMSUB / NUMSUB while a Java thread
// waits) and hands a lock over both ways each time. Label "redisson";
// skipped in one line without REDISSON_PROBE (the suite says so), and when
// the probe is another release.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// drawStarts is how many Redisson starts the spec makes at least (and one
// hand-over each way per start); drawMaxStarts how many at most while one
// draw has not been seen.
const (
	drawStarts    = 8
	drawMaxStarts = 24
)

var releaseRE = regexp.MustCompile(`redisson-(\d+)\.(\d+)\.(\d+)`)

// probeRelease reads major, minor and patch out of a probe's version line
// ("<sha> (redisson-3.27.2)").
func probeRelease(version string) (major, minor, patch int, ok bool) {
	m := releaseRE.FindStringSubmatch(version)
	if m == nil {
		return 0, 0, 0, false
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	patch, _ = strconv.Atoi(m[3])
	return major, minor, patch, true
}

var _ = Describe("Redisson 3.22 to 3.27 on a Cluster, restarted: goredisson configured only with WithRedissonVersion", Ordered, Label("redisson", "cluster", "draws"), func() {
	var (
		cluster *redistest.Cluster
		g       *rlock.Client
		release string
		minor   int
		path    string
		ctx     = context.Background()
	)
	BeforeAll(func() {
		path = os.Getenv(probeEnv)
		Expect(path).NotTo(BeEmpty())
		var err error
		cluster, err = redistest.StartCluster(3, 1)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Close)
		first, err := runProbe(exec.Command(path, "redis://"+strings.Join(cluster.Addrs(), ",redis://"), strconv.Itoa(javaWatchdog)))
		Expect(err).NotTo(HaveOccurred())
		version := first.version
		Expect(first.close()).To(Succeed())
		major, mi, patch, ok := probeRelease(version)
		if !ok || major != 3 || mi < 22 || mi > 27 {
			Skip(fmt.Sprintf("REDISSON_PROBE is %q, not Redisson 3.22.0 to 3.27.x, whose pub/sub is drawn at start", version))
		}
		minor = mi
		release = fmt.Sprintf("%d.%d.%d", major, mi, patch)
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
		DeferCleanup(cc.Close)
		Expect(cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })).To(Succeed())
		g, err = rlock.NewClient(cc, rlock.WithRedissonVersion(release)) // nothing else
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = g.Close() })
	})

	// subs counts the classic and sharded subscriptions to channel over
	// every node.
	subs := func(channel string) (classic, sharded int64) {
		for _, n := range cluster.Nodes {
			c := n.Client()
			classic += c.PubSubNumSub(ctx, channel).Val()[channel]
			sharded += c.PubSubShardNumSub(ctx, channel).Val()[channel]
			_ = c.Close()
		}
		return classic, sharded
	}

	It("wakes each start of Redisson and is woken by it, whichever pub/sub it drew; both draws seen", func() {
		slot0, err := cluster.Owner(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		draws := map[string]int{}
		javaWoken, goWoken := 0, 0
		for start := 0; start < drawStarts || (len(draws) < 2 && start < drawMaxStarts); start++ {
			// 3.22-3.26 ask the first address that connects: list the
			// slot-0 master first, then last, in turn. 3.27 draws itself.
			addrs := append([]string(nil), cluster.Addrs()...)
			order := "nodes in the cluster's order"
			if minor < 27 {
				var rest []string
				for _, a := range addrs {
					if a != slot0.Addr {
						rest = append(rest, a)
					}
				}
				if start%2 == 0 {
					addrs, order = append([]string{slot0.Addr}, rest...), "slot-0 master first"
				} else {
					addrs, order = append(rest, slot0.Addr), "slot-0 master last"
				}
			}
			j, err := runProbe(exec.Command(path, "redis://"+strings.Join(addrs, ",redis://"), strconv.Itoa(javaWatchdog)))
			Expect(err).NotTo(HaveOccurred(), "Redisson start %d", start)

			// goredisson holds, Redisson waits: what it subscribed tells
			// what it drew; goredisson's unlock must wake it.
			name := fmt.Sprintf("{draw:%d:%d}:g2j", start, time.Now().UnixNano())
			channel := "redisson_lock__channel:" + name
			owner := ctxowner.New(ctx)
			Expect(g.NewLock(name).LockLease(owner, clusterHold)).To(Succeed())
			tid := j.newTid()
			wait := j.send("lock " + name + " " + tid)
			// goredisson holds: every subscription to the channel is the
			// Java waiter's.
			var classic, sharded int64
			Eventually(func() int64 {
				classic, sharded = subs(channel)
				return classic + sharded
			}).WithTimeout(10*time.Second).Should(BeEquivalentTo(1), "Redisson's waiter subscribed once to %s", channel)
			draw := "classic"
			if sharded == 1 {
				draw = "sharded"
			}
			draws[draw]++
			line := fmt.Sprintf("Redisson %s start %d (%s): drew %s pub/sub (PUBSUB NUMSUB %d, SHARDNUMSUB %d while a Java thread waits)", release, start, order, draw, classic, sharded)
			fmt.Fprintln(GinkgoWriter, line)
			AddReportEntry("draw", line)
			time.Sleep(200 * time.Millisecond)
			Expect(wait.answered()).To(BeFalse(), "Redisson's waiter waits")
			begin := time.Now()
			Expect(g.NewLock(name).Unlock(owner)).To(Succeed())
			out, err := wait.wait(clusterHold + 10*time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(out).To(Equal("ok"))
			d := wait.at().Sub(begin)
			recordWake("redisson-draws", fmt.Sprintf("goredisson unlocks, Redisson %s (%s pub/sub) waits", release, draw), d)
			Expect(d).To(BeNumerically("<", clusterWakeBound), "start %d (%s): Redisson's waiter woken after %v", start, draw, d)
			javaWoken++
			j.ok("unlock " + name + " " + tid)

			// Redisson holds, goredisson waits.
			name = fmt.Sprintf("{draw:%d:%d}:j2g", start, time.Now().UnixNano())
			channel = "redisson_lock__channel:" + name
			tid = j.newTid()
			Expect(j.do(fmt.Sprintf("lock %s %s %d", name, tid, clusterHold.Milliseconds()))).To(Equal("ok"))
			owner = ctxowner.New(ctx)
			got := bg(func() error { return g.NewLock(name).Lock(owner) })
			Eventually(func() [2]int64 {
				c, s := subs(channel)
				return [2]int64{c, s}
			}).WithTimeout(10*time.Second).Should(Equal([2]int64{1, 1}), "goredisson listens both ways")
			Consistently(got).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
			begin = time.Now()
			Expect(j.do("unlock " + name + " " + tid)).To(Equal("ok"))
			Eventually(got).WithTimeout(clusterHold).Should(Receive(BeNil()))
			d = time.Since(begin)
			recordWake("redisson-draws", fmt.Sprintf("Redisson %s (%s pub/sub) unlocks, goredisson waits", release, draw), d)
			Expect(d).To(BeNumerically("<", clusterWakeBound), "start %d (%s): goredisson's waiter woken after %v", start, draw, d)
			goWoken++
			Expect(g.NewLock(name).Unlock(owner)).To(Succeed())
			Expect(j.close()).To(Succeed())
		}
		summary := fmt.Sprintf("Redisson %s: %d starts, %d sharded, %d classic; goredisson woke Redisson %d times and was woken %d times, each within %v",
			release, draws["sharded"]+draws["classic"], draws["sharded"], draws["classic"], javaWoken, goWoken, clusterWakeBound)
		fmt.Fprintln(GinkgoWriter, summary)
		AddReportEntry("draws", summary)
		Expect(draws).To(HaveLen(2), "both draws seen")
	})
})
