package interop_test

import (
	. "github.com/onsi/ginkgo/v2"
)

// Redisson's synchronizers (RSemaphore, RPermitExpirableSemaphore,
// RCountDownLatch), driven through testdata/SyncProbe.java, and goredisson's.
// Label "redisson"; skipped (one line) when REDISSON_PROBE is not set or
// javac is missing.
var _ = Describe("goredisson and the real Redisson's synchronizers", Label("redisson"), func() {
	var s *syncWorld
	BeforeEach(func() { s = newSyncWorld() })

	Context("Semaphore", func() {
		It("shares its permits between both clients' holders: never more holders, counted across both, than permits", func() {
			semaphoreBound(s)
		})
		DescribeTable("wakes the other client's waiter for 2 permits within a second (a missed message would cost its TTL)",
			func(javaWaits bool, how string, try bool) { semaphoreWake(s, javaWaits, how, try) },
			Entry("goredisson releases, Redisson acquires", true, "release", false),
			Entry("goredisson releases, Redisson tries to acquire for 10 s", true, "release", true),
			Entry("Redisson releases, goredisson acquires", false, "release", false),
			Entry("Redisson releases, goredisson tries to acquire for 10 s", false, "release", true),
			Entry("goredisson sets the permits, Redisson acquires", true, "trysetpermits", false),
			Entry("Redisson sets the permits, goredisson acquires", false, "trysetpermits", false),
			Entry("goredisson adds a permit, Redisson acquires", true, "addpermits", false),
			Entry("Redisson adds a permit, goredisson acquires", false, "addpermits", false),
		)
		DescribeTable("shows each client what the other set, added, took, released and drained",
			func(javaSets bool) { semaphoreCounts(s, javaSets) },
			Entry("Redisson sets the permits", true),
			Entry("goredisson sets the permits", false),
		)
		DescribeTable("shares permits set with a time to live, releaseIfExists, expiry, delete and the drain of a negative count",
			func(javaSets bool) { semaphoreTTLAndIfExists(s, javaSets) },
			Entry("Redisson sets the permits", true),
			Entry("goredisson sets the permits", false),
		)
	})

	Context("PermitExpirableSemaphore", func() {
		DescribeTable("lets one client release a permit id the other acquired, and both refuse a released or unknown id",
			func(javaAcquires bool) { permitsAcross(s, javaAcquires) },
			Entry("Redisson acquires, goredisson releases", true),
			Entry("goredisson acquires, Redisson releases", false),
		)
		DescribeTable("frees a permit at its 1 s lease for the other client's waiter; the holder's late release is refused",
			func(javaHolds bool) { permitLeaseExpiry(s, javaHolds) },
			Entry("Redisson's lease, goredisson waits", true),
			Entry("goredisson's lease, Redisson waits", false),
		)
		DescribeTable("refuses, on both clients, the release of a permit whose lease ran out, and puts it back",
			func(javaHolds bool) { permitExpiredRelease(s, javaHolds) },
			Entry("Redisson's permit", true),
			Entry("goredisson's permit", false),
		)
		DescribeTable("wakes the other client's waiter within a second (a missed message would cost its TTL)",
			func(javaWaits, try bool) { permitWake(s, javaWaits, try) },
			Entry("goredisson releases, Redisson acquires", true, false),
			Entry("goredisson releases, Redisson tries to acquire for 10 s", true, true),
			Entry("Redisson releases, goredisson acquires", false, false),
			Entry("Redisson releases, goredisson tries to acquire for 10 s", false, true),
		)
		DescribeTable("lets one client release, all or none, the permits the other took at once, and both count them alike",
			func(javaAcquires bool) { permitsMany(s, javaAcquires) },
			Entry("Redisson acquires 3, goredisson releases", true),
			Entry("goredisson acquires 3, Redisson releases", false),
		)
		DescribeTable("wakes the other client's waiter for 2 permits with a release of 2 ids within 200 ms",
			func(javaWaits bool) { permitsManyWake(s, javaWaits) },
			Entry("goredisson releases, Redisson acquires 2", true),
			Entry("Redisson releases, goredisson acquires 2", false),
		)
		DescribeTable("extends, reads and makes permanent the lease of the other client's permit",
			func(javaHolds bool) { permitsUpdateLease(s, javaHolds) },
			Entry("Redisson's permit, goredisson updates it", true),
			Entry("goredisson's permit, Redisson updates it", false),
		)
		DescribeTable("shares setPermits, addPermits, the permits and acquired counts, expiry and delete",
			func(javaSets bool) { permitsSetAdd(s, javaSets) },
			Entry("Redisson sets the permits", true),
			Entry("goredisson sets the permits", false),
		)
	})

	Context("CountDownLatch", func() {
		DescribeTable("the last countDown wakes every waiter of both clients within a second (a missed message would cost its TTL)",
			func(javaCounts bool) { latchWake(s, javaCounts) },
			Entry("Redisson counts down a count goredisson set", true),
			Entry("goredisson counts down a count Redisson set", false),
		)
		DescribeTable("shows each client the count the other set and counted down; at zero both pass await at once",
			func(javaSets bool) { latchCounts(s, javaSets) },
			Entry("Redisson sets the count", true),
			Entry("goredisson sets the count", false),
		)
		DescribeTable("a latch one client deletes is open for both and wakes goredisson's awaiter within 200 ms",
			func(javaDeletes bool) { latchDelete(s, javaDeletes) },
			Entry("Redisson deletes", true),
			Entry("goredisson deletes", false),
		)
	})

	// Redisson's prefixName/suffixName keep a name's own hash tag; the
	// latch's channel braces the name anyway.
	Context("with a hash-tagged name {…}:x", func() {
		BeforeEach(func() { s.tagged = true })
		It("Semaphore: each client's release wakes the other's waiter", func() {
			semaphoreWake(s, true, "release", false)
			semaphoreWake(s, false, "release", true)
		})
		It("PermitExpirableSemaphore: a lease runs out for the other client's waiter, and each client's release wakes the other's waiter", func() {
			permitLeaseExpiry(s, true)
			permitWake(s, true, false)
			permitWake(s, false, true)
		})
		It("CountDownLatch: each client's last countDown wakes both clients' waiters", func() {
			latchWake(s, true)
			latchWake(s, false)
		})
	})

	// The facts the emulator suite holds goredisson's synchronizers to,
	// checked on Redisson's.
	Context("Redisson's synchronizer messages", func() {
		for _, c := range syncMsgCases {
			It(c.what, c.labels(), func() { syncPublishes(s.world, s.java, c) })
		}
	})
})

// goredisson's synchronizers publish Redisson's messages (no Java needed).
var _ = Describe("goredisson's synchronizer messages are Redisson's", func() {
	for _, c := range syncMsgCases {
		It(c.what, c.labels(), func() {
			w := newWorld(func(*env) redissonSide { return nil })
			syncPublishes(w, newGoSync(w), c)
		})
	}
})
