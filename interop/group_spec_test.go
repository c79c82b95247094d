package interop_test

import (
	. "github.com/onsi/ginkgo/v2"
)

// Redisson's RedissonMultiLock, RedissonRedLock and RedissonNonReentrantLock,
// driven through testdata/GroupProbe.java, and goredisson's MultiLock,
// RedLock and NewNonReentrantLock, over locks of one Client on one server.
// Label "redisson"; skipped (one line) when REDISSON_PROBE is not set or
// javac is missing.
var _ = Describe("goredisson and the real Redisson's MultiLock, RedLock and NonReentrantLock", Label("redisson"), func() {
	var s *groupWorld
	BeforeEach(func() { s = newGroupWorld() })

	Context("MultiLock", func() {
		DescribeTable("held over {a,b} by one client excludes the other's MultiLock over {a,b} and its lock on b; the other's waiter is woken by the unlock within a second (a missed message would cost its TTL)",
			func(javaHolds bool) { multiExcludes(s, javaHolds) },
			Entry("Redisson holds, goredisson waits", true),
			Entry("goredisson holds, Redisson waits", false),
		)
		DescribeTable("fails while b is held by the other client's lock, and gives a back",
			func(javaHolds bool) { multiGivesBack(s, javaHolds) },
			Entry("Redisson holds b, goredisson's MultiLock", true),
			Entry("goredisson holds b, Redisson's MultiLock", false),
		)
	})

	Context("RedLock over 3 names on one server", func() {
		DescribeTable("held by one client makes the other's short tryLock fail, and its waiting tryLock succeed at the unlock",
			func(javaHolds bool) { redExcludes(s, javaHolds) },
			Entry("Redisson holds, goredisson waits", true),
			Entry("goredisson holds, Redisson waits", false),
		)
		DescribeTable("is granted by a majority the other client left free, and fails, giving back what it got, without one",
			func(javaHolds bool) { redQuorum(s, javaHolds) },
			Entry("Redisson holds plain locks, goredisson's RedLock", true),
			Entry("goredisson holds plain locks, Redisson's RedLock", false),
		)
	})

	Context("NonReentrantLock", func() {
		DescribeTable("is one hash field holding once, refuses its holder's re-entry on each client, and excludes the other client until the unlock wakes its waiter",
			func(javaHolds bool) { nonReentrant(s, javaHolds) },
			Entry("Redisson holds, goredisson waits", true),
			Entry("goredisson holds, Redisson waits", false),
		)
	})
})
