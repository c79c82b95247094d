package main_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// Specs of rlockctl list, of status on every synchronizer and on keys that
// are not locks, and of the Client registry that traces a holder field to
// its process.

var _ = Describe("rlockctl list, status of synchronizers, and the client registry", func() {
	ctx := context.Background()
	var raw *redis.Client
	BeforeEach(func() {
		raw = srv.Client()
		DeferCleanup(raw.Close)
	})
	// out runs rlockctl, expects exit 0 and returns stdout.
	out := func(args ...string) string {
		GinkgoHelper()
		s := rlockctl(args...)
		exits(s, 0)
		return string(s.Out.Contents())
	}
	unregistered := regexp.QuoteMeta("unregistered (a Java/Redisson client or an old goredisson)")

	Describe("status", func() {
		It("names each synchronizer with its permits or count, and says semaphore-or-latch where the data cannot tell", func() {
			p := lockName()
			c := newClient(rlock.WithClientRegistry(false))
			Expect(c.NewSemaphore(p+":sem").TrySetPermitsTTL(ctx, 5, time.Minute)).To(BeTrue())
			Expect(out("status", p+":sem")).To(And(MatchRegexp(`kind:\s+semaphore\n`), MatchRegexp(`permits:\s+5 available`),
				ContainSubstring("a counter with a TTL (Redisson's latch has none)"), MatchRegexp(`ttl:\s+(59|60)`)))

			ps := c.NewPermitExpirableSemaphore(p + ":seats")
			Expect(ps.TrySetPermits(ctx, 3)).To(BeTrue())
			id, err := ps.Acquire(ctx, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(out("status", p+":seats")).To(And(MatchRegexp(`kind:\s+permit-semaphore`), MatchRegexp(`permits:\s+2 available, 1 taken`),
				MatchRegexp(`permit:\s+`+id+`\s+lease (59|60)\.?\d*s`)))

			latch := c.NewCountDownLatch(p + ":latch")
			Expect(latch.TrySetCount(ctx, 2)).To(BeTrue())
			Expect(out("status", p+":latch")).To(And(MatchRegexp(`kind:\s+semaphore-or-latch`), MatchRegexp(`value:\s+2 `),
				ContainSubstring("a Semaphore, a CountDownLatch and a PermitExpirableSemaphore with no permit taken look the same")))
			wctx, cancel := context.WithCancel(ctx)
			DeferCleanup(cancel)
			go func() { defer GinkgoRecover(); _ = latch.Await(wctx) }()
			Eventually(func() string { return out("status", p+":latch") }).Should(And(MatchRegexp(`kind:\s+latch`), MatchRegexp(`count:\s+2`),
				ContainSubstring("waiters on its latch channel"), MatchRegexp(`subscribers:\s+1 `)))

			s := rlockctl("unlock", "--force", p+":sem")
			exits(s, 1)
			Expect(string(s.Err.Contents())).To(ContainSubstring("is a semaphore (5 permits available; "))
			Expect(raw.Get(ctx, p+":sem").Val()).To(Equal("5"))
		})

		It("answers not a lock for a hash whose fields are not holder fields with hold counts, or that has no TTL", func() {
			p := lockName()
			Expect(raw.HSet(ctx, p+":user", "name", "bob").Err()).To(Succeed())
			Expect(raw.Expire(ctx, p+":user", time.Minute).Err()).To(Succeed())
			Expect(out("status", p+":user")).To(And(MatchRegexp(`kind:\s+foreign`), MatchRegexp(`state:\s+not a lock\n`),
				ContainSubstring(`a hash whose field "name" is not <client id>:<owner id>`), Not(ContainSubstring("holder:"))))
			Expect(raw.HSet(ctx, p+":odd", "c1:7", "many").Err()).To(Succeed())
			Expect(raw.Expire(ctx, p+":odd", time.Minute).Err()).To(Succeed())
			Expect(out("status", p+":odd")).To(And(MatchRegexp(`state:\s+not a lock\n`), ContainSubstring(`field "c1:7" holds "many", not a hold count`)))
			Expect(raw.HSet(ctx, p+":counts", "user:1", "5").Err()).To(Succeed())
			Expect(out("status", p+":counts")).To(And(MatchRegexp(`state:\s+not a lock\n`), ContainSubstring("a hash without a TTL")))
			Expect(out("status", "--json", p+":user")).To(And(ContainSubstring(`"kind": "foreign"`), ContainSubstring(`"locked": false`)))
		})
	})

	Describe("the client registry", func() {
		It("registers a Client's id with host, pid, start and name while it lives, shown by status, gone after Close", Label("slow"), func() {
			name := lockName()
			rdb := srv.Client()
			DeferCleanup(rdb.Close)
			c, err := rlock.NewClient(rdb, rlock.WithClientName("worker-7"), rlock.WithWatchdogTimeout(3*time.Second))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = c.Close() })
			key := "goredisson_client:{" + c.ID() + "}"
			Eventually(func() int64 { return raw.Exists(ctx, key).Val() }).Should(BeEquivalentTo(1))
			Expect(raw.PTTL(ctx, key).Val()).To(And(BeNumerically(">", 0), BeNumerically("<=", 3*time.Second)))
			var rec map[string]any
			Expect(json.Unmarshal([]byte(raw.Get(ctx, key).Val()), &rec)).To(Succeed())
			host, _ := os.Hostname()
			Expect(rec).To(And(HaveKeyWithValue("id", c.ID()), HaveKeyWithValue("name", "worker-7"), HaveKeyWithValue("host", host),
				HaveKeyWithValue("pid", BeEquivalentTo(os.Getpid())), HaveKeyWithValue("lib", "goredisson")))
			// Written again within its TTL (3 s, every 1 s): it outlives it.
			Consistently(func() int64 { return raw.Exists(ctx, key).Val() }).WithTimeout(4 * time.Second).WithPolling(200 * time.Millisecond).Should(BeEquivalentTo(1))

			lock := c.NewLock(name)
			Expect(lock.Lock(ctxowner.WithID(ctx, "job"))).To(Succeed())
			anon := newClient(rlock.WithClientRegistry(false)).NewReadWriteLock(name + ":rw").ReadLock()
			Expect(anon.Lock(ctx)).To(Succeed())
			DeferCleanup(func() { _, _ = anon.ForceUnlock(ctx) })
			Expect(out("status", name)).To(MatchRegexp(`holder:\s+` + c.ID() + `:ctx:job\s+holds 1\s+worker-7: host ` + regexp.QuoteMeta(host) +
				` pid ` + strconv.Itoa(os.Getpid()) + `, started \d{4}-`))
			Expect(out("status", name+":rw")).To(MatchRegexp(`holder:\s+\S+\s+holds 1\s+` + unregistered))
			var js struct {
				Holders []struct {
					Process *struct {
						Name string `json:"name"`
						PID  int    `json:"pid"`
					} `json:"process"`
				} `json:"holders"`
			}
			Expect(json.Unmarshal([]byte(out("status", "--json", name)), &js)).To(Succeed())
			Expect(js.Holders).To(HaveLen(1))
			Expect(js.Holders[0].Process).NotTo(BeNil())
			Expect(js.Holders[0].Process.Name).To(Equal("worker-7"))
			Expect(out("list", name+"*")).To(And(ContainSubstring("[worker-7: host "+host), MatchRegexp(unregistered)))

			Expect(c.Close()).To(Succeed())
			Eventually(func() int64 { return raw.Exists(ctx, key).Val() }).Should(BeZero(), "Close deletes the registration")
		})

		It("traces a lock held by rlockctl run to its process; a killed process's registration ends with its TTL", Label("slow"), func() {
			name := lockName()
			s := process("run", "--lock", name, "--watchdog", "1s", "--", "sh", "-c", "echo $$; exec sleep 30")
			Eventually(s.Out).Should(gbytes.Say(`\d+`))
			child, err := strconv.Atoi(string(regexp.MustCompile(`\d+`).Find(s.Out.Contents())))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
			host, _ := os.Hostname()
			var status string
			Eventually(func() string { status = out("status", name); return status }).Should(MatchRegexp(`holds 1\s+` +
				regexp.QuoteMeta("rlockctl run --lock "+name+" -- sh -c echo $$; exec sleep 30: host "+host+" pid "+strconv.Itoa(s.Command.Process.Pid)+", started ")))
			id := regexp.MustCompile(`holder:\s+([0-9a-f-]{36}):`).FindStringSubmatch(status)
			Expect(id).To(HaveLen(2))
			key := "goredisson_client:{" + id[1] + "}"
			Expect(raw.Exists(ctx, key).Val()).To(BeEquivalentTo(1))

			Expect(s.Command.Process.Kill()).To(Succeed()) // no Close: the TTL (1 s) ends it
			Eventually(func() int64 { return raw.Exists(ctx, key).Val() }).WithTimeout(5 * time.Second).Should(BeZero())
		})

		It("refuses an empty or over-long client name with ErrInvalidArgument", func() {
			rdb := srv.Client()
			DeferCleanup(rdb.Close)
			for _, n := range []string{"", strings.Repeat("x", 257)} {
				c, err := rlock.NewClient(rdb, rlock.WithClientName(n))
				Expect(err).To(MatchError(rlock.ErrInvalidArgument))
				Expect(err).To(MatchError(ContainSubstring("client name of %d bytes: want 1 to 256", len(n))))
				Expect(c).To(BeNil())
			}
		})

		It("lets NewClient and locks work when an ACL refuses the registration, and warns once", Label("slow"), func() {
			name := lockName()
			user := "h33user" + strconv.Itoa(GinkgoParallelProcess())
			Expect(raw.Do(ctx, "acl", "setuser", user, "on", ">pw", "~cli:*", "~goredisson_cancel:*", "~redisson_*", "&*", "+@all").Err()).To(Succeed())
			DeferCleanup(func() { raw.Do(ctx, "acl", "deluser", user) })
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: user, Password: "pw"})
			DeferCleanup(rdb.Close)
			logs := gbytes.NewBuffer()
			c, err := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(time.Second), rlock.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = c.Close() })
			Eventually(logs).Should(gbytes.Say(`WARN msg="goredisson: the Client's registration was refused`))
			lock := c.NewLock(name)
			Expect(lock.Lock(ctx)).To(Succeed())
			Expect(lock.Unlock(ctx)).To(Succeed())
			Consistently(func() string { return string(logs.Contents()) }).WithTimeout(1500*time.Millisecond).
				ShouldNot(MatchRegexp(`(?s)registration was refused.*registration was refused`), "warned once, and stopped trying")
			Expect(raw.Exists(ctx, "goredisson_client:{"+c.ID()+"}").Val()).To(BeZero())
		})
	})

	Describe("list", func() {
		It("shows each type with holders, counts and TTLs, filters by pattern, and skips auxiliary keys and non-locks", func() {
			p := lockName()
			c := newClient(rlock.WithClientName("lister"))
			Expect(c.NewLock(p + ":lock").Lock(ctxowner.WithID(ctx, "a"))).To(Succeed())
			f := c.NewFencedLock(p + ":fenced")
			Expect(f.Lock(ctx)).To(Succeed())
			fair := c.NewFairLock(p + ":fair")
			Expect(fair.Lock(ctxowner.WithID(ctx, "first"))).To(Succeed())
			wctx, cancel := context.WithCancel(ctxowner.WithID(ctx, "second"))
			DeferCleanup(cancel)
			go func() { defer GinkgoRecover(); _ = fair.Lock(wctx) }()
			Eventually(func() int64 { return raw.LLen(ctx, "redisson_lock_queue:{"+p+":fair}").Val() }).Should(BeEquivalentTo(1))
			rw := c.NewReadWriteLock(p + ":rw")
			Expect(rw.WriteLock().Lock(ctxowner.WithID(ctx, "w"))).To(Succeed())
			Expect(c.NewSemaphore(p+":sem").TrySetPermitsTTL(ctx, 4, time.Minute)).To(BeTrue())
			ps := c.NewPermitExpirableSemaphore(p + ":seats")
			Expect(ps.TrySetPermits(ctx, 2)).To(BeTrue())
			_, err := ps.Acquire(ctx, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(c.NewCountDownLatch(p+":latch").TrySetCount(ctx, 3)).To(BeTrue())
			Expect(raw.Set(ctx, p+":plain", "hello", 0).Err()).To(Succeed())
			Expect(raw.Set(ctx, "other:"+p, "1", 0).Err()).To(Succeed())
			DeferCleanup(func() {
				for _, k := range []string{"lock", "fenced", "fair", "rw", "sem", "seats", "latch", "plain"} {
					raw.Del(ctx, p+":"+k, "{"+p+":"+k+"}:timeout", "redisson_lock_token:{"+p+":"+k+"}",
						"redisson_lock_queue:{"+p+":"+k+"}", "redisson_lock_timeout:{"+p+":"+k+"}")
				}
				raw.Del(ctx, "other:"+p)
			})

			got := out("list", p+":*")
			me := regexp.QuoteMeta(c.ID())
			Expect(got).To(And(
				MatchRegexp(`NAME\s+KIND\s+STATE\s+TTL\s+HOLDERS\n`),
				MatchRegexp(`\n`+p+`:fair\s+fair\s+locked\s+\d`),
				MatchRegexp(`\n`+p+`:fenced\s+fenced\s+locked\s+\d`),
				MatchRegexp(`\n`+p+`:latch\s+semaphore-or-latch\s+value 3\s+none`),
				MatchRegexp(`\n`+p+`:lock\s+reentrant\s+locked\s+(29|30)\.?\d*s\s+`+me+`:ctx:a holds 1 \[lister: host `),
				MatchRegexp(`\n`+p+`:rw\s+read-write\s+locked \(write\)\s+\d.*`+me+`:ctx:w:write holds 1`),
				MatchRegexp(`\n`+p+`:seats\s+permit-semaphore\s+1 available, 1 taken\s+none\s+next lease ends in (59|60)`),
				MatchRegexp(`\n`+p+`:sem\s+semaphore\s+4 permits available\s+(59|60)`),
				ContainSubstring("7 shown;"),
				ContainSubstring("1 keys that are not locks or synchronizers not shown (--all shows them)"),
			))
			Expect(got).NotTo(Or(ContainSubstring("other:"), ContainSubstring("redisson_lock"), ContainSubstring("}:timeout"), ContainSubstring(":plain ")))
			Expect(out("list", "--all", p+":pl*")).To(MatchRegexp(`\n` + p + `:plain\s+foreign\s+not a lock \(string\)`))

			limited := out("list", "--limit", "3", p+":*")
			Expect(limited).To(And(ContainSubstring("3 shown;"), MatchRegexp(`\.\.\. [1-9]\d* more matching keys not read \(--limit 3\): narrow the pattern or raise --limit`)))
			var js struct {
				Entries []struct {
					Name string `json:"name"`
					Kind string `json:"kind"`
				} `json:"entries"`
				More int `json:"more"`
			}
			Expect(json.Unmarshal([]byte(out("list", "--json", p+":*")), &js)).To(Succeed())
			Expect(js.Entries).To(HaveLen(7))
			Expect(js.More).To(BeZero())
		})

		It("lists a 200k-key keyspace with SCAN, never KEYS, stops reading at --limit and says how many more", Label("slow"), func() {
			const n = 200_000
			p := lockName() + ":big:"
			DeferCleanup(func() { raw.FlushAll(ctx) })
			for i := 0; i < n; i += 10_000 {
				pipe := raw.Pipeline()
				for j := i; j < i+10_000; j++ {
					pipe.Set(ctx, p+strconv.Itoa(j), "1", 0)
				}
				_, err := pipe.Exec(ctx)
				Expect(err).NotTo(HaveOccurred())
			}
			pipe := raw.Pipeline()
			for j := range 20_000 {
				pipe.Set(ctx, "filler:"+strconv.Itoa(j), "x", 0) // keys the pattern does not match
			}
			_, err := pipe.Exec(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(raw.ConfigResetStat(ctx).Err()).To(Succeed())
			began := time.Now()
			s := rlockctl("list", "--limit", "50", "--progress", "1ms", p+"*")
			exits(s, 0)
			GinkgoWriter.Printf("list of %d keys took %v\n", n, time.Since(began))
			Expect(string(s.Out.Contents())).To(And(ContainSubstring("50 shown; "),
				MatchRegexp(`\.\.\. (19995\d|1999[6-9]\d|2\d{5}) more matching keys not read \(--limit 50\)`)))
			Expect(string(s.Err.Contents())).To(MatchRegexp(`rlockctl list: \d+ keys scanned in `))
			stats := raw.Info(ctx, "commandstats").Val()
			Expect(stats).NotTo(ContainSubstring("cmdstat_keys:"))
			Expect(stats).To(MatchRegexp(`cmdstat_scan:calls=\d+`))
		})

		It("stops at SIGINT and prints what it found", Label("slow"), func() {
			p := lockName() + ":int:"
			DeferCleanup(func() { raw.FlushAll(ctx) })
			pipe := raw.Pipeline()
			for j := range 20_000 {
				pipe.Set(ctx, p+strconv.Itoa(j), "1", 0)
			}
			_, err := pipe.Exec(ctx)
			Expect(err).NotTo(HaveOccurred())
			s := process("list", "--count", "1", "--limit", "100000", "--progress", "1ms", p+"*")
			Eventually(s.Err).Should(gbytes.Say(`keys scanned`))
			s.Interrupt()
			exits(s, 130)
			Expect(string(s.Err.Contents())).To(MatchRegexp(`interrupt after scanning \d+ keys: the list is incomplete`))
			Expect(string(s.Out.Contents())).To(MatchRegexp(`\d+ shown; `))
		})

		It("scans every master of a Redis Cluster and shows the holders' processes there", Label("cluster"), func() {
			cluster, err := redistest.StartCluster(3, 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(cluster.Close)
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
			DeferCleanup(cc.Close)
			c, err := rlock.NewClient(cc, rlock.WithClientName("cluster-worker"))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = c.Close() })
			var names []string
			for i := range 12 {
				name := "clu:{" + strconv.Itoa(i) + "}"
				Expect(c.NewLock(name).Lock(ctx)).To(Succeed())
				names = append(names, name)
			}
			Expect(c.NewSemaphore("clu:{sem}").TrySetPermitsTTL(ctx, 2, time.Minute)).To(BeTrue())
			Eventually(func() int64 { return cc.Exists(ctx, "goredisson_client:{"+c.ID()+"}").Val() }).Should(BeEquivalentTo(1))
			masters := map[string]bool{}
			for _, n := range names {
				m, _ := cc.MasterForKey(ctx, n)
				masters[m.Options().Addr] = true
			}
			Expect(len(masters)).To(BeNumerically(">", 1), "the names spread over several masters")

			s := rlockctl("list", "--redis", cluster.Addrs()[0], "clu:*")
			exits(s, 0)
			got := string(s.Out.Contents())
			for _, n := range names {
				Expect(got).To(MatchRegexp(`\n`+regexp.QuoteMeta(n)+`\s+reentrant\s+locked\s+\S+\s+`+c.ID()+`:\d+ holds 1 \[cluster-worker: host `), n)
			}
			Expect(got).To(And(MatchRegexp(`\nclu:\{sem\}\s+semaphore\s+2 permits available`), ContainSubstring("13 shown; 13 keys matching \"clu:*\" scanned on 3 masters")))
		})

		It("refuses bad flags", func() {
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"list", "--limit", "0"}, "--limit must be at least 1"},
				{[]string{"list", "--count", "0"}, "--count must be at least 1"},
				{[]string{"list", "a*", "b*"}, `one pattern expected`},
				{[]string{"list", "a*", "--limit", "3"}, `flags go before PATTERN`},
			} {
				s := rlockctl(c.args...)
				exits(s, 2)
				Expect(string(s.Err.Contents())).To(ContainSubstring(c.want), "%q", c.args)
			}
		})
	})
})
