package interop_test

// The version matrix (label "matrix"; run by `go run ./interop/matrix`,
// which writes matrix.md): for one Redisson build (REDISSON_PROBE), every
// lock type and synchronizer, both directions, on one server and on a
// 3-master Redis Cluster. One client holds, the other's waiter must wait,
// and the release must wake it within a second; a waiter that missed the
// message would sleep until the holder's lease (8 s) ran out.
//
// testdata/MatrixProbe.java drives Redisson's public API and compiles
// against every release from 3.18 on; a type the release lacks answers
// "lacks", and the cell says so. The Go side takes its options from the
// environment: REDISSON_MATRIX_VERSION (WithRedissonVersion, empty for the
// default) and PROBE_NAME_PREFIX (a NameMapper prefix on both sides), and
// nothing else: as a porter would configure it from the release number.
// REDISSON_MATRIX_TOPOLOGY=single or cluster runs one topology only.
//
// Redisson 3.22.0 to 3.27.x decide at each start whether they use sharded
// or classic pub/sub on a Cluster (see draws_spec_test.go): on the Cluster
// the matrix starts Redisson anew for every cell of these releases, with
// the master of slot 0 listed first and last in turn (3.22-3.26 ask the
// first address), and each cell's note says what that start drew.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

const (
	// matrixEnv, set to 1, runs the matrix specs (they are left out of
	// every other run of the suite).
	matrixEnv        = "REDISSON_MATRIX"
	matrixVersionEnv = "REDISSON_MATRIX_VERSION"
	matrixTopoEnv    = "REDISSON_MATRIX_TOPOLOGY"
	// prefixEnv is read by LineProbe.java too.
	prefixEnv = "PROBE_NAME_PREFIX"

	matrixLease  = 8 * time.Second // the holder's lease
	matrixSettle = time.Second     // for the waiter to be asleep on its channel
	matrixBound  = time.Second     // the wake-up bound
	matrixGiveUp = matrixLease + 12*time.Second
)

// matrixCell is one measured cell, attached to the spec's report for the
// matrix command.
type matrixCell struct {
	Type      string  `json:"type"`
	Topology  string  `json:"topology"`
	Direction string  `json:"direction"`
	Result    string  `json:"result"` // "agrees", "lacks ...", or "differs: ..."
	Millis    float64 `json:"ms"`
	Note      string  `json:"note,omitempty"`
}

// matrixType is a row of the matrix.
type matrixType struct {
	key, title string
	// java and goWaiter: the types of holder and waiter ("read" is held
	// by a reader and waited for by a writer).
	holder, waiter string
	sync           bool
}

var matrixTypes = []matrixType{
	{key: "lock", title: "Lock", holder: "lock", waiter: "lock"},
	{key: "fair", title: "FairLock", holder: "fair", waiter: "fair"},
	{key: "fenced", title: "FencedLock", holder: "fenced", waiter: "fenced"},
	{key: "spin", title: "SpinLock", holder: "spin", waiter: "spin"},
	{key: "read", title: "ReadWriteLock (reader holds, writer waits)", holder: "read", waiter: "write"},
	{key: "write", title: "ReadWriteLock (writer holds, reader waits)", holder: "write", waiter: "read"},
	{key: "nr", title: "NonReentrantLock", holder: "nr", waiter: "nr"},
	{key: "nrfair", title: "NonReentrantFairLock", holder: "nrfair", waiter: "nrfair"},
	{key: "multi", title: "MultiLock (2 locks)", holder: "multi", waiter: "multi"},
	{key: "red", title: "RedLock (3 locks)", holder: "red", waiter: "red"},
	{key: "faster", title: "FasterMultiLock", holder: "faster", waiter: "faster"},
	{key: "sem", title: "Semaphore", sync: true},
	{key: "psem", title: "PermitExpirableSemaphore", sync: true},
	{key: "latch", title: "CountDownLatch", sync: true},
}

const (
	dirGoWaits   = "Go waits on Java"
	dirJavaWaits = "Java waits on Go"
)

// matrixOptions are the Go client's options from the environment.
func matrixOptions() []rlock.Option {
	var opts []rlock.Option
	if v := os.Getenv(matrixVersionEnv); v != "" {
		opts = append(opts, rlock.WithRedissonVersion(v))
	}
	if p := os.Getenv(prefixEnv); p != "" {
		opts = append(opts, rlock.WithNameMapper(
			func(n string) string { return p + n },
			func(n string) string { return strings.TrimPrefix(n, p) }))
	}
	return opts
}

// matrixTopology is a topology's world: a Redisson MatrixProbe and a
// goredisson client on the same servers.
type matrixTopology struct {
	name string
	java *probe
	g    *rlock.Client
	// restart is set when every cell starts Redisson anew (the Cluster
	// and a release that draws its pub/sub at start): the probe's command
	// line, and the node lists to start it with in turn.
	restart bool
	cmd     []string
	orders  [][]string
	starts  int
	nodes   []*redistest.Server
}

var _ = Describe("the version matrix", Label("redisson", "matrix"), func() {
	for _, topo := range []string{"single", "cluster"} {
		Context(topo, Ordered, ContinueOnFailure, func() {
			t := &matrixTopology{name: topo}
			BeforeAll(func() {
				if want := os.Getenv(matrixTopoEnv); want != "" && want != topo {
					Skip("REDISSON_MATRIX_TOPOLOGY=" + want)
				}
				path := os.Getenv(probeEnv)
				Expect(path).NotTo(BeEmpty(), "REDISSON_PROBE")
				var rdb redis.UniversalClient
				addr := server.Addr
				var clusterNodes []*redistest.Server
				if topo == "cluster" {
					cluster, err := redistest.StartCluster(3, 1)
					Expect(err).NotTo(HaveOccurred())
					DeferCleanup(cluster.Close)
					clusterNodes = cluster.Nodes
					addr = strings.Join(cluster.Addrs(), ",redis://")
					cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
					Expect(cc.ForEachShard(context.Background(), func(ctx context.Context, c *redis.Client) error {
						return c.Ping(ctx).Err()
					})).To(Succeed())
					rdb = cc
				} else {
					rdb = server.Client()
				}
				DeferCleanup(rdb.Close)
				var (
					skip string
					err  error
				)
				t.java, skip, err = startTestdataProbe(path, addr, "MatrixProbe")
				Expect(err).NotTo(HaveOccurred(), "starting MatrixProbe")
				if skip != "" {
					Skip(skip)
				}
				DeferCleanup(func() { Expect(t.java.close()).To(Succeed()) })
				if topo == "cluster" && drawsPubSub(t.java.version) {
					t.restart, t.cmd, t.nodes = true, t.java.cmd.Args, clusterNodes
					t.orders = slot0Orders(clusterNodes)
				}
				t.g, err = rlock.NewClient(rdb, matrixOptions()...)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func() { _ = t.g.Close() })
			})
			for _, mt := range matrixTypes {
				for _, dir := range []string{dirGoWaits, dirJavaWaits} {
					It(fmt.Sprintf("%s | %s | %s", topo, mt.title, dir), func() {
						cell := matrixCell{Type: mt.title, Topology: topo, Direction: dir}
						if t.restart {
							cell.Note = t.restartJava()
						}
						if has := t.java.do("has " + mt.key); has != "true" {
							cell.Result = "that release lacks the type (" + has + ")"
							AddReportEntry("matrix", cell, ReportEntryVisibilityNever)
							Skip(cell.Result)
						}
						if mt.sync {
							cell.Result, cell.Millis = matrixSync(t, mt, dir == dirGoWaits)
						} else {
							cell.Result, cell.Millis = matrixLock(t, mt, dir == dirGoWaits)
						}
						AddReportEntry("matrix", cell, ReportEntryVisibilityNever)
						fmt.Fprintf(GinkgoWriter, "matrix %s: %s (%.1f ms)\n", CurrentSpecReport().LeafNodeText, cell.Result, cell.Millis)
						Expect(cell.Result).To(Equal("agrees"))
					})
				}
			}
		})
	}
})

// matrixName is a cell's name: hash-tagged (on a Cluster the auxiliary
// keys of every release, mapped or not, then share its slot), except the
// latch's, whose channel braces the name anyway.
func matrixName(mt matrixType, javaHolds bool) string {
	d := "g2j"
	if javaHolds {
		d = "j2g"
	}
	if mt.key == "latch" {
		return fmt.Sprintf("mx-%s-%s-%d", mt.key, d, time.Now().UnixNano())
	}
	return fmt.Sprintf("{mx:%s:%s:%d}", mt.key, d, time.Now().UnixNano())
}

// javaNames is the probe's name argument of a lock type.
func javaNames(mt matrixType, name string) string {
	switch mt.key {
	case "multi":
		return name + ":a," + name + ":b"
	case "red":
		return name + ":a," + name + ":b," + name + ":c"
	case "faster":
		return name + ",v1,v2"
	}
	return name
}

// goLock is goredisson's lock of type typ over name (as javaNames).
type goLocker interface {
	LockLease(ctx context.Context, lease time.Duration) error
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

func goLock(g *rlock.Client, mt matrixType, typ, name string) goLocker {
	GinkgoHelper()
	switch typ {
	case "lock":
		return g.NewLock(name)
	case "fair":
		return g.NewFairLock(name)
	case "fenced":
		return g.NewFencedLock(name)
	case "spin":
		return g.NewSpinLock(name)
	case "read":
		return g.NewReadWriteLock(name).ReadLock()
	case "write":
		return g.NewReadWriteLock(name).WriteLock()
	case "nr":
		return g.NewNonReentrantLock(name)
	case "nrfair":
		return g.NewNonReentrantFairLock(name)
	case "faster":
		return g.NewFasterMultiLock(name, "v1", "v2")
	case "multi":
		m, err := rlock.NewMultiLock(g.NewLock(name+":a"), g.NewLock(name+":b"))
		Expect(err).NotTo(HaveOccurred())
		return m
	case "red":
		r, err := rlock.NewRedLock(g.NewLock(name+":a"), g.NewLock(name+":b"), g.NewLock(name+":c"))
		Expect(err).NotTo(HaveOccurred())
		return r
	}
	Fail("unknown type " + typ)
	return nil
}

// verdict classifies a hand-over: d is from the release to the waiter's
// return.
func verdict(d time.Duration, err error) string {
	switch {
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "no answer")):
		return fmt.Sprintf("differs: the release did not wake the waiter; it still waited %v later", matrixGiveUp)
	case err != nil:
		return "differs: the waiter failed: " + err.Error()
	case d < matrixBound:
		return "agrees"
	}
	return fmt.Sprintf("differs: the release did not wake the waiter; it went on %.1f s later, when its own retry found the %v lease gone", d.Seconds(), matrixLease)
}

// matrixLock runs one lock cell: the holder takes it with an 8 s lease,
// the other client's waiter must stay out, the holder's unlock must wake
// it within a second.
func matrixLock(t *matrixTopology, mt matrixType, javaHolds bool) (string, float64) {
	GinkgoHelper()
	name := matrixName(mt, javaHolds)
	ctx := context.Background()
	owner := ctxowner.New(ctx)
	if javaHolds {
		tid := t.java.newTid()
		if out := t.java.do(fmt.Sprintf("lock %s %s %s %d", mt.holder, javaNames(mt, name), tid, matrixLease.Milliseconds())); out != "ok" {
			return "differs: Redisson could not take the lock: " + out, 0
		}
		w := goLock(t.g, mt, mt.waiter, name)
		wctx, cancel := context.WithTimeout(owner, matrixGiveUp)
		defer cancel()
		got := bg(func() error { return w.Lock(wctx) })
		select {
		case err := <-got:
			return fmt.Sprintf("differs: goredisson's waiter got in while Redisson held it (err %v)", err), 0
		case <-time.After(matrixSettle):
		}
		unlock := t.java.send(fmt.Sprintf("unlock %s %s %s", mt.holder, javaNames(mt, name), tid))
		start := time.Now()
		if out, err := unlock.wait(10 * time.Second); err != nil || out != "ok" {
			return fmt.Sprintf("differs: Redisson's unlock answered %q (%v)", out, err), 0
		}
		var err error
		Eventually(got).WithTimeout(matrixGiveUp).Should(Receive(&err))
		d := time.Since(start)
		if err == nil {
			Expect(w.Unlock(owner)).To(Succeed())
		}
		return verdict(d, err), msOf(d)
	}
	h := goLock(t.g, mt, mt.holder, name)
	if err := h.LockLease(owner, matrixLease); err != nil {
		return "differs: goredisson could not take the lock: " + err.Error(), 0
	}
	tid := t.java.newTid()
	wait := t.java.send(fmt.Sprintf("lock %s %s %s -1", mt.waiter, javaNames(mt, name), tid))
	time.Sleep(matrixSettle)
	if wait.answered() {
		out, _ := wait.wait(0)
		return "differs: Redisson's waiter got in while goredisson held it: " + out, 0
	}
	start := time.Now()
	Expect(h.Unlock(owner)).To(Succeed())
	out, err := wait.wait(matrixGiveUp)
	if err == nil && out != "ok" {
		err = fmt.Errorf("%s", out)
	}
	d := wait.at().Sub(start)
	if err == nil {
		t.java.ok(fmt.Sprintf("unlock %s %s %s", mt.waiter, javaNames(mt, name), tid))
	}
	return verdict(d, err), msOf(d)
}

// matrixSync runs one synchronizer cell: the waiter blocks (2 permits of
// a semaphore at 0, a permit of a semaphore whose one permit the other
// side holds, a latch at 1), the other side's release or count-down must
// wake it within a second.
func matrixSync(t *matrixTopology, mt matrixType, javaReleases bool) (string, float64) {
	GinkgoHelper()
	name := matrixName(mt, javaReleases)
	ctx := context.Background()
	j := t.java
	var (
		goWait  func(context.Context) error
		javaCmd string // the waiter's command, when Redisson waits
		release func() error
	)
	switch mt.key {
	case "sem":
		s := t.g.NewSemaphore(name)
		Expect(s.TrySetPermits(ctx, 0)).To(BeTrue())
		goWait = func(ctx context.Context) error { return s.Acquire(ctx, 2) }
		javaCmd = "acquire sem " + name + " " + j.newTid() + " 2"
		if javaReleases {
			release = func() error { return javaOK(j, "release sem "+name+" - 2") }
		} else {
			release = func() error { return s.Release(ctx, 2) }
		}
	case "psem":
		p := t.g.NewPermitExpirableSemaphore(name)
		Expect(p.TrySetPermits(ctx, 1)).To(BeTrue())
		javaCmd = "acquire psem " + name + " " + j.newTid()
		goWait = func(ctx context.Context) error { _, err := p.Acquire(ctx, 0); return err }
		if javaReleases {
			out := j.do("acquire psem " + name + " " + j.newTid())
			if !strings.HasPrefix(out, "id ") {
				return "differs: Redisson could not take the permit: " + out, 0
			}
			id := strings.TrimPrefix(out, "id ")
			release = func() error { return javaOK(j, "release psem "+name+" - "+id) }
		} else {
			id, err := p.Acquire(ctx, 0)
			if err != nil {
				return "differs: goredisson could not take the permit: " + err.Error(), 0
			}
			release = func() error { return p.Release(ctx, id) }
		}
	case "latch":
		l := t.g.NewCountDownLatch(name)
		Expect(l.TrySetCount(ctx, 1)).To(BeTrue())
		goWait = func(ctx context.Context) error { return l.Await(ctx) }
		javaCmd = "await latch " + name + " " + j.newTid()
		if javaReleases {
			release = func() error { return javaOK(j, "countdown latch "+name+" -") }
		} else {
			release = func() error { return l.CountDown(ctx) }
		}
	}
	if javaReleases {
		wctx, cancel := context.WithTimeout(ctx, matrixGiveUp)
		defer cancel()
		got := bg(func() error { return goWait(wctx) })
		select {
		case err := <-got:
			return fmt.Sprintf("differs: goredisson's waiter went on before the release (err %v)", err), 0
		case <-time.After(matrixSettle):
		}
		start := time.Now()
		if err := release(); err != nil {
			return "differs: Redisson's release failed: " + err.Error(), 0
		}
		var err error
		Eventually(got).WithTimeout(matrixGiveUp).Should(Receive(&err))
		d := time.Since(start)
		return verdict(d, err), msOf(d)
	}
	wait := j.send(javaCmd)
	time.Sleep(matrixSettle)
	if wait.answered() {
		out, _ := wait.wait(0)
		return "differs: Redisson's waiter went on before the release: " + out, 0
	}
	start := time.Now()
	if err := release(); err != nil {
		return "differs: goredisson's release failed: " + err.Error(), 0
	}
	out, err := wait.wait(matrixGiveUp)
	if err == nil && out != "ok" && !strings.HasPrefix(out, "id ") {
		err = fmt.Errorf("%s", out)
	}
	d := wait.at().Sub(start)
	return verdict(d, err), msOf(d)
}

func javaOK(p *probe, cmd string) error {
	out, err := p.send(cmd).wait(10 * time.Second)
	if err != nil {
		return err
	}
	if out != "ok" {
		return fmt.Errorf("%s", out)
	}
	return nil
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// drawsPubSub reports whether a probe's version line names Redisson 3.22.0
// to 3.27.x, whose pub/sub on a Cluster is drawn at each start.
func drawsPubSub(version string) bool {
	major, minor, _, ok := probeRelease(version)
	return ok && major == 3 && minor >= 22 && minor < 28
}

// slot0Orders returns the Cluster's addresses with the master of slot 0
// first, and with it last: what Redisson 3.22-3.26 draws from.
func slot0Orders(nodes []*redistest.Server) [][]string {
	GinkgoHelper()
	ctx := context.Background()
	var slot0 string
	for _, n := range nodes {
		c := n.Client()
		//lint:ignore SA1019 CLUSTER SLOTS, as Redisson's own cluster manager reads the topology; CLUSTER SHARDS needs Redis 7
		slots := c.ClusterSlots(ctx).Val()
		_ = c.Close()
		for _, r := range slots {
			if r.Start == 0 && len(r.Nodes) > 0 {
				slot0 = r.Nodes[0].Addr
			}
		}
	}
	Expect(slot0).NotTo(BeEmpty(), "the master of slot 0")
	var rest []string
	for _, n := range nodes {
		if n.Addr != slot0 {
			rest = append(rest, n.Addr)
		}
	}
	first := append([]string{slot0}, rest...)
	last := append(append([]string(nil), rest...), slot0)
	return [][]string{first, last}
}

// restartJava stops the cell's Redisson and starts it anew (the node list
// in the next order), and returns what this start drew, for the cell's
// note.
func (t *matrixTopology) restartJava() string {
	GinkgoHelper()
	Expect(t.java.close()).To(Succeed())
	order := t.orders[t.starts%len(t.orders)]
	t.starts++
	args := append([]string(nil), t.cmd[1:]...)
	for i, a := range args {
		if strings.HasPrefix(a, "redis://") {
			args[i] = "redis://" + strings.Join(order, ",redis://")
		}
	}
	var err error
	t.java, err = runProbe(exec.Command(t.cmd[0], args...))
	Expect(err).NotTo(HaveOccurred(), "restarting Redisson")
	which := "slot-0 master listed first"
	if t.starts%2 == 0 {
		which = "slot-0 master listed last"
	}
	kind := "classic"
	if javaListensSharded(t.java, t.nodes) {
		kind = "sharded"
	}
	return fmt.Sprintf("Redisson started anew for this cell (%s): it drew %s pub/sub", which, kind)
}

// javaListensSharded makes a Redisson thread wait on a lock and reports
// whether it listens with SSUBSCRIBE (true) or SUBSCRIBE (false).
func javaListensSharded(j *probe, nodes []*redistest.Server) bool {
	GinkgoHelper()
	ctx := context.Background()
	name := fmt.Sprintf("{mx:detect:%d}", time.Now().UnixNano())
	key := os.Getenv(prefixEnv) + name
	channel := "redisson_lock__channel:" + key
	holder, waiter := j.newTid(), j.newTid()
	Expect(j.do("lock lock " + name + " " + holder + " 10000")).To(Equal("ok"))
	wait := j.send("lock lock " + name + " " + waiter + " -1")
	var sharded bool
	Eventually(func() bool {
		var classic, shard int64
		for _, n := range nodes {
			c := n.Client()
			classic += c.PubSubNumSub(ctx, channel).Val()[channel]
			shard += c.PubSubShardNumSub(ctx, channel).Val()[channel]
			_ = c.Close()
		}
		sharded = shard > 0
		return classic+shard > 0
	}).WithTimeout(10*time.Second).Should(BeTrue(), "Redisson's waiter on %s subscribed nowhere", channel)
	j.ok("unlock lock " + name + " " + holder)
	Expect(wait.wait(20 * time.Second)).To(Equal("ok"))
	j.ok("unlock lock " + name + " " + waiter)
	return sharded
}
